"""Run a fault script against a live cluster: ``kclab run SCRIPT.yaml``.

The script is checked completely first (``backend.faultscript``); nothing starts if anything is
wrong. Then the runner builds the cluster the script describes — on the ZooKeeper it is given,
or on its own embedded one — and carries out the steps in order. The cluster stays live the
whole time, so an operator may act on its znodes with ``zkCli.sh`` meanwhile. An ``expect``
that does not come true within its time fails the run, saying which step, what was expected
and what was found.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from backend.core.dispatch import dispatch_table
from backend.core.records import Record
from backend.faultscript.expect import describe_expectation, mismatches
from backend.faultscript.loader import Script, Step
from backend.faultscript.vocabulary import SCRIPT_VOCABULARY
from backend.runtime.cluster import Cluster
from backend.runtime.faults import FAULTS, apply_fault
from backend.runtime.live_rules import LiveRules
from backend.runtime.record_bus import RecordBus
from backend.runtime.replay import ReplayWriter, default_replay_dir
from backend.zk import paths

APP_VERSION = "0.1.0"


@dataclass
class RunResult:
    ok: bool
    message: str
    step: Step | None = None
    replay_path: Path | None = None


def new_session_id(kind: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{uuid.uuid4().hex[:6]}"


@contextlib.contextmanager
def embedded_zookeeper(servers: int = 1):
    """Our own ZooKeeper (server or ensemble) for the duration of a run."""
    from backend.zkserver.ensemble import ZooKeeperEnsemble
    from backend.zkserver.server import ZooKeeperServer
    zk = ZooKeeperServer(force_sync=False) if servers == 1 else ZooKeeperEnsemble(servers, force_sync=False)
    zk.start()
    try:
        yield zk
    finally:
        zk.stop()


class ScriptRunner:
    def __init__(self, script: Script, zk_hosts: str, chroot: str | None = None, zk_control=None,
                 replay_dir: Path | None = None, keep: bool = False, on_record: Callable[[Record], None] | None = None,
                 log: TextIO = sys.stderr, session_id: str | None = None, mode: str = "script",
                 bus: RecordBus | None = None, close_when_done: bool = True, stop_before: int | None = None,
                 header: dict | None = None) -> None:
        """``close_when_done=False`` leaves the cluster running after the last step (a walkthrough
        goes on in free play); ``stop_before`` ends the run before that step (to fork a sandbox
        "from step k"); ``header`` adds session-header fields (class, student)."""
        self.script = script
        self.session_id = session_id or new_session_id(mode)
        self.bus = bus or RecordBus(self.session_id)
        self.cluster = Cluster(zk_hosts, chroot or paths.default_chroot(self.session_id), script.cluster,
                               self.session_id, self.bus, zk_control=zk_control)
        self.keep = keep
        self.log = log
        self.mode = mode
        self.close_when_done = close_when_done
        self.stop_before = stop_before
        self.header_extra = dict(header or {})
        self._replay_dir = Path(replay_dir) if replay_dir else default_replay_dir()
        self._replay: ReplayWriter | None = None
        self.rules = LiveRules(self.bus) if self.asks_about_rules() else None
        if on_record is not None:
            self.bus.subscribe(lambda records: [on_record(r) for r in records])

    def run(self) -> RunResult:
        header = self.cluster.header(self.mode, APP_VERSION,
                                     **{"lesson_id": Path(self.script.filename).stem, **self.header_extra})
        self._replay = ReplayWriter(self._replay_dir, header)
        self.bus.subscribe(self._replay)
        result = RunResult(False, "the cluster did not start")
        try:
            self._say(f"starting cluster {self.cluster.chroot}: brokers {list(self.script.cluster.brokers)}")
            self.cluster.start()
            self.before_steps()
            result = RunResult(True, f"all {len(self.script.steps)} steps passed")
            for step in self.script.steps:
                if self.stop_before is not None and step.index >= self.stop_before:
                    result = RunResult(True, f"stopped before step {step.index}, as asked")
                    break
                try:
                    outcome = self.run_step(step)
                except ConnectionError as exc:  # e.g. no ZooKeeper quorum: the step fails, with the reason
                    outcome = self._fail(step, str(exc))
                if not outcome.ok:
                    result = RunResult(False, outcome.message, step)
                    break
            return result
        finally:
            self.after_run(result)
            result.replay_path = self._replay.path
            if self.close_when_done:
                self.close()

    def close(self) -> None:
        """Stop the cluster and finish the replay log (later, if ``close_when_done`` was False)."""
        self.cluster.close(keep=self.keep)
        if self._replay is not None:
            self._replay.close()

    def asks_about_rules(self) -> bool:
        """Whether a step checks Kafka's rules (then the run keeps them live: ``self.rules``)."""
        return any(step.op == "expect" and "rules" in step.args for step in self.script.steps)

    def before_steps(self) -> None:
        """Hook: the cluster is up, no step has run (lessons announce themselves here)."""

    def after_run(self, result: RunResult) -> None:
        """Hook: the steps are over (all passed, or one failed); the cluster still runs."""

    def run_step(self, step: Step) -> RunResult:
        return STEPS[step.op](self, step)

    def _wait_stable(self, step: Step) -> RunResult:
        if not self.cluster.wait_stable(step.args["timeout_ms"] / 1000):
            return self._fail(step, f"the cluster was not stable within {step.args['timeout_ms']} ms")
        return self._done(step)

    def _wait_ms(self, step: Step) -> RunResult:
        time.sleep(step.args["ms"] / 1000)
        return self._done(step)

    def _fault(self, step: Step) -> RunResult:
        result = apply_fault(self.cluster, step.op, step.args, source="script", prechecked=True)
        if not result.ok:
            return self._fail(step, f"{step.op} was refused: {result.message}")
        return self._done(step)

    def _done(self, step: Step) -> RunResult:
        self._say(f"{step.where} {step.op} {_args_text(step.args)}: done")
        return RunResult(True, "ok", step)

    def _expect(self, step: Step) -> RunResult:
        args = step.args
        expected = {k: v for k, v in args.items() if k != "within_ms"}
        znodes = list((expected.get("znodes") or {}).keys())
        deadline = time.monotonic() + args["within_ms"] / 1000
        while True:
            actual = self.cluster.inspect(znodes)
            if self.rules is not None:
                actual["rules"] = self.rules.verdicts()
            found = mismatches(expected, actual)
            if not found:
                self._say(f"{step.where} expect {describe_expectation(args)}: ok")
                return RunResult(True, "ok", step)
            if time.monotonic() > deadline:
                return self._fail(step, f"expected {describe_expectation(args)}, but after {args['within_ms']} ms:\n  "
                                  + "\n  ".join(found))
            time.sleep(0.05)

    def _fail(self, step: Step, message: str) -> RunResult:
        text = f"{self.script.filename}:{step.line}: {step.where} failed: {message}"
        self._say(text)
        return RunResult(False, text, step)

    def _say(self, text: str) -> None:
        print(text, file=self.log, flush=True)


STEPS: dict[str, Callable[[ScriptRunner, Step], RunResult]] = dispatch_table(SCRIPT_VOCABULARY, {
    "wait_stable": ScriptRunner._wait_stable, "wait_ms": ScriptRunner._wait_ms, "expect": ScriptRunner._expect,
    **{op: ScriptRunner._fault for op in FAULTS},
}, "script steps")
"""What the runner does with each op of the script vocabulary: its own three, and the faults."""


def _args_text(args: dict) -> str:
    return " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in args.items())
