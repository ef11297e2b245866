"""``kclab lessons check [FILE…] [--run]``: what is wrong with lessons, before a class meets it.

Without files it checks every lesson in ``lessons/`` and the course (``lessons/course.yaml``).
It reports, each as ``file:line: reason``: a lesson the loader refuses (an unknown op, a
``predict`` without choices or answer, an ``expected`` that is not a choice, a misconception on
the right answer, a ``requires:`` that names no lesson or goes round in a circle), a narration
that could be replaced before the student has it on screen, a stop between a timer's start and
the ``await`` of its outcome, a reveal with nothing to observe, and a course out of order.
``--run`` also plays each lesson headless, as CI does (every ``expect`` and ``expected`` checked).

Exit status: 0 when nothing was found, 1 otherwise.
"""

from __future__ import annotations

import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "lessons", help="check lessons: problems, pace, the course",
        description="Check lessons without a browser: kclab lessons check [FILE ...] [--run].")
    actions = parser.add_subparsers(dest="lessons_command", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="report problems with lessons and the course, each as file:line",
                               description=__doc__.split("\n\n")[1])
    check.add_argument("files", nargs="*", metavar="FILE", help="lesson files (default: lessons/ and the course)")
    check.add_argument("--run", action="store_true", help="also play each lesson headless (a dry run)")
    check.add_argument("--zk", metavar="HOST:PORT[,...]", help="for --run: this ZooKeeper instead of an embedded one")
    check.set_defaults(func=run_check)


def run_check(args) -> int:
    from pathlib import Path

    from backend.lessons.check import check_files

    problems = check_files([Path(f) for f in args.files] or None)
    for problem in problems:
        print(problem)
    failed = bool(problems)
    if args.run:
        failed = _dry_run([Path(f) for f in args.files], args.zk) or failed
    print(("FAILED: " if failed else "OK: ") + (f"{len(problems)} problem(s)" if problems else "no problems"),
          file=sys.stderr)
    return 1 if failed else 0


def _dry_run(files, zk_hosts: str | None) -> bool:
    """Play every lesson (or ``files``) headless; True if any failed. One embedded ZooKeeper
    serves them all (unless ``--zk``); a lesson about the quorum gets its own ensemble."""
    import contextlib
    import io
    import logging
    import tempfile

    from backend.lessons.course import list_lessons
    from backend.lessons.loader import read_entry
    from backend.lessons.runner import LessonRunner
    from backend.runtime.runner import embedded_zookeeper

    logging.getLogger("kazoo").setLevel(logging.ERROR)
    entries = [read_entry(f) for f in files] if files else list_lessons()
    failed = False
    with tempfile.TemporaryDirectory() as replays, \
            (contextlib.nullcontext() if zk_hosts else embedded_zookeeper()) as shared:
        for entry in (e for e in entries if e.lesson is not None):
            servers = entry.lesson.script.cluster.zookeeper_servers
            with (embedded_zookeeper(servers) if servers > 1 else contextlib.nullcontext(shared)) as zk:
                hosts = zk.hosts if zk is not None else zk_hosts
                result = LessonRunner(entry.lesson, hosts, zk_control=zk, replay_dir=replays, mode="script",
                                      log=io.StringIO()).run()
            print(f"{entry.path}: dry run {'passed' if result.ok else 'FAILED: ' + result.message}", flush=True)
            failed = failed or not result.ok
    return failed
