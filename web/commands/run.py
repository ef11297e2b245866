"""``kclab run SCRIPT.yaml``: build the cluster a fault script describes and play its steps.

Exit status: 0 when every step (every ``expect``) passed, 1 when one failed (the message names
the step, what was expected and what was found), 2 when the script is refused before anything
runs (each problem as ``file:line: reason``).
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="play a fault script or lesson against a live cluster",
        description="Build the cluster a fault script describes, on an existing ZooKeeper (--zk) or on an "
                    "embedded one, and carry out its steps in order.")
    parser.add_argument("script", help="the script (YAML)")
    parser.add_argument("--zk", metavar="HOST:PORT[,...]", help="use this ZooKeeper ensemble instead of an embedded one")
    parser.add_argument("--chroot", metavar="PATH", help="the cluster's chroot (default /kclab/<session-id>)")
    parser.add_argument("--json", action="store_true", help="print every record as one JSON line on stdout")
    parser.add_argument("--replay-dir", metavar="DIR", help="where the replay log goes (default var/replays)")
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster's znodes in ZooKeeper (with the embedded ZooKeeper: keep it "
                             "running until Ctrl-C)")
    parser.set_defaults(func=run)


def run(args) -> int:
    import logging

    from backend.lessons.loader import load_lesson
    from backend.lessons.runner import LessonRunner
    from backend.lessons.vocabulary import LESSON_KEYS, LESSON_VOCABULARY
    from backend.runtime.runner import ScriptRunner, embedded_zookeeper
    from backend.faultscript.loader import ScriptError, load_script

    try:  # a lesson is a script with minutes: and teaching steps; both are checked in full first
        script = load_script(args.script, vocabulary=LESSON_VOCABULARY, extra_keys=LESSON_KEYS)
        lesson = load_lesson(args.script) if "minutes" in script.meta else None
    except ScriptError as error:
        print(f"kclab run: {args.script} was refused, nothing was started:\n{error}", file=sys.stderr)
        return 2

    def runner(hosts, **kwargs):
        if lesson is not None:
            return LessonRunner(lesson, hosts, **kwargs)
        return ScriptRunner(script, hosts, **kwargs)

    logging.getLogger("kazoo").setLevel(logging.ERROR)  # connection drops are faults here, and recorded
    on_record = _print_json if args.json else None
    if args.zk:
        return _report(_claimed_run(args.zk, runner(args.zk, chroot=args.chroot, replay_dir=args.replay_dir,
                                                    keep=args.keep, on_record=on_record)))
    with embedded_zookeeper(script.cluster.zookeeper_servers) as zk:
        result = runner(zk.hosts, chroot=args.chroot, zk_control=zk, replay_dir=args.replay_dir,
                        keep=args.keep, on_record=on_record).run()
        if args.keep:
            print(f"ZooKeeper stays up at {zk.hosts} for inspection; Ctrl-C stops it.", file=sys.stderr, flush=True)
            _wait_for_interrupt()
    return _report(result)


def _claimed_run(hosts: str, runner):
    """Run on a shared ensemble with the chroot claimed for the run (``backend/zk/app_session``),
    so an app sharing the ensemble never sweeps it away while its brokers happen to be down."""
    from backend.zk.app_session import AppSession
    session = AppSession(hosts)
    session.start(wait_s=15)
    try:
        session.claim(runner.cluster.chroot)
        return runner.run()
    finally:
        session.stop()


def _print_json(record) -> None:
    sys.stdout.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _report(result) -> int:
    print(("OK: " if result.ok else "FAILED: ") + result.message, file=sys.stderr)
    if result.replay_path:
        print(f"replay log: {result.replay_path}", file=sys.stderr)
    return 0 if result.ok else 1


def _wait_for_interrupt() -> None:
    import threading
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
