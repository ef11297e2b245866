"""A student who plays a lesson through the page: presses Continue at every stop, answers every
prediction (right, wrong or "I'm not sure", as told), and checks as it goes what the issue asks
of a lesson — every narration of the YAML was on screen at a stop, Continue waits for an answer,
the reveal sets the student's answer beside the cluster's (with the misconception of a wrong
choice), and Back shows the previous stop's view from the records in well under a second.

The server plays the lesson with the same runner as a headless run, so every ``expect`` and
every question's ``expected`` answer is checked too: a lesson whose story stopped being true
ends "stopped", and the student reports its reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from backend.lessons.answers import UNSURE, canonical
from backend.lessons.loader import Lesson
from backend.lessons.pacing import is_stop

READY = """() => {
  const l = document.querySelector('#lesson');
  if (!l || l.dataset.lookBack === 'true') return false;
  const progress = l.querySelector('.lesson-progress').textContent;
  return ['waiting', 'finished', 'stopped'].includes(l.dataset.status) && !progress.endsWith('…');
}"""
SCREEN = """() => ({
  stop: document.querySelector('#lesson').dataset.stop,
  narration: [...document.querySelectorAll('#lesson .lesson-narration[data-step], #lesson .lesson-captions .caption')]
    .map((e) => ({step: Number(e.dataset.step), text: e.innerText})),
  captions: [...document.querySelectorAll('#lesson .lesson-captions .caption')]
    .map((e) => ({step: Number(e.dataset.step), text: e.innerText})),
  revealed: [...document.querySelectorAll('#lesson .lesson-question[data-state="revealed"]')].map((q) => ({
    id: q.dataset.question, result: q.querySelector('.q-result').innerText,
    answer: q.querySelector('.q-revealed').dataset.answer ?? null, misconception: q.querySelector('.q-misconception').innerText})),
})"""
BACK = """async (previous) => {
  const started = performance.now();
  document.querySelector('#lesson button[data-action="back"]').click();
  for (;;) {
    const l = document.querySelector('#lesson');
    const narration = l.querySelector('.lesson-narration');
    if (l.dataset.lookBack === 'true' && l.dataset.stop === String(previous)) {
      return {ms: performance.now() - started, narrationStep: narration.dataset.step ?? null, text: narration.innerText};
    }
    if (performance.now() - started > 10000) return {ms: -1};
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
}"""
MODES = ("right", "wrong", "unsure")


def alnum(text: str) -> str:
    """Letters and digits only: Markdown's marks and the page's line breaks do not count."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass
class Played:
    stops: int = 0
    seen: set[int] = field(default_factory=set)
    answered: dict[str, str] = field(default_factory=dict)
    checked: set[str] = field(default_factory=set)
    back_ms: list[float] = field(default_factory=list)


class Student:
    def __init__(self, page, lesson: Lesson, first_mode: int = 0, slow_ms: int = 0, look_back_at: int = 2) -> None:
        self.page = page
        self.lesson = lesson
        self.first_mode = first_mode
        self.slow_ms = slow_ms
        self.look_back_at = look_back_at
        self.steps = {s.index: s for s in lesson.steps}
        self.played = Played()
        self._modes: dict[str, str] = {}

    def play(self) -> Played:
        page = self.page
        while True:
            page.wait_for_function(READY, timeout=120_000)
            status = page.get_attribute("#lesson", "data-status")
            self._check_screen()
            if status == "stopped":
                raise AssertionError(f"{self.lesson.id} stopped: {page.inner_text('#lesson .lesson-end')}")
            if status == "finished":
                break
            stop = int(page.get_attribute("#lesson", "data-stop"))
            self.played.stops += 1
            if self.steps[stop].op == "predict":
                self._answer(self.steps[stop])
            if self.played.stops == self.look_back_at:
                self._look_back()
            if self.slow_ms:
                page.wait_for_timeout(self.slow_ms)  # the student reads: the time is the test, not a wait for it
            page.click('#lesson button[data-action="next"]')
            page.wait_for_function("(stop) => {const l = document.querySelector('#lesson');"
                                   " return l.dataset.stop !== stop || l.dataset.status !== 'waiting'}",
                                   arg=str(stop), timeout=120_000)
        self._check_the_end()
        return self.played

    # -- what the screen shows -------------------------------------------------------------------
    def _check_screen(self) -> None:
        screen = self.page.evaluate(SCREEN)
        for shown in screen["narration"]:
            step = self.steps[shown["step"]]
            wanted = step.args["text"] if step.op == "say" else step.args.get("note", "")
            assert alnum(wanted) in alnum(shown["text"]), f"{self.lesson.id} step {step.index}: {shown['text']!r}"
            self.played.seen.add(step.index)
        # Captions of moments gone by say so: all before the stop waiting now, or before a later caption.
        stop = int(screen["stop"]) if screen["stop"] not in (None, "") else -1
        newest = max([stop, *(c["step"] for c in screen["captions"])])
        assert [c["text"].startswith("Earlier:") for c in screen["captions"]] == \
            [c["step"] < newest for c in screen["captions"]], (stop, screen["captions"])
        for question in screen["revealed"]:
            self._check_reveal(question)

    def _check_reveal(self, shown: dict) -> None:
        predict = next(s for s in self.lesson.steps if s.op == "predict" and s.args["id"] == shown["id"])
        expected = canonical(predict.args["expected"])
        given = self.played.answered[shown["id"]]
        assert shown["answer"] == expected, (self.lesson.id, shown)
        wanted = {"right": f"Right: you said {given}, and so did the cluster.",
                  "wrong": f"Not quite: you said {given}, the cluster says {expected}.",
                  "unsure": f"You were not sure; the cluster says {expected}."}[self._modes[shown["id"]]]
        assert wanted in shown["result"], (self.lesson.id, shown)
        misconception = (predict.args.get("misconceptions") or {}).get(given)
        if misconception:
            assert alnum(misconception) in alnum(shown["misconception"]), (self.lesson.id, shown)
        self.played.checked.add(shown["id"])

    # -- acting as a student ---------------------------------------------------------------------
    def _answer(self, predict) -> None:
        page, question = self.page, predict.args["id"]
        assert page.is_disabled('#lesson button[data-action="next"]'), f"{question}: Continue before an answer"
        mode = MODES[(self.first_mode + len(self._modes)) % len(MODES)]
        right = next(c for c in predict.args["choices"] if canonical(c) == canonical(predict.args["expected"]))
        choice = {"right": right, "wrong": next(c for c in predict.args["choices"] if c != right),
                  "unsure": UNSURE}[mode]
        page.click(f'#lesson .lesson-question[data-question="{question}"] button.choice[data-choice="{choice}"]')
        page.wait_for_selector(f'#lesson .lesson-question[data-question="{question}"][data-state="answered"]')
        self._modes[question], self.played.answered[question] = mode, choice

    def _look_back(self) -> None:
        """Back: the previous stop, rebuilt from the records (the page's own fold), then now again."""
        page = self.page
        here = int(page.get_attribute("#lesson", "data-stop"))
        previous = max(s.index for s in self.lesson.steps if s.index < here and is_stop(s))
        found = page.evaluate(BACK, previous)
        assert 0 <= found["ms"] < 1000, f"{self.lesson.id}: Back took {found['ms']:.0f} ms"
        if self.steps[previous].op == "say":
            assert found["narrationStep"] == str(previous), found
            assert alnum(self.steps[previous].args["text"]) in alnum(found["text"]), found
        self.played.back_ms.append(found["ms"])
        page.click('#lesson button[data-action="next"]')  # "Continue ▶ (back to now)"
        page.wait_for_selector('#lesson[data-look-back="false"]')

    def _check_the_end(self) -> None:
        says = {s.index for s in self.lesson.steps if s.op == "say"}
        assert says <= self.played.seen, f"{self.lesson.id}: narrations never on screen at a stop: {says - self.played.seen}"
        asked = {s.args["id"] for s in self.lesson.steps if s.op == "predict"}
        assert asked == set(self.played.answered) == self.played.checked, (self.lesson.id, self.played)
