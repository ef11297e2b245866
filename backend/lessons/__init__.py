"""Lessons: fault scripts with teaching steps (say, pause, await, highlight, predict, reveal,
direct), checked like scripts and played by ``runner.LessonRunner`` — headless in CI and on
``kclab run``, step by step in the browser, or for a whole class."""
