"""``kclab zk``: run an embedded ZooKeeper (one server or a three-server ensemble) until stopped.

Useful to point several ``kclab`` processes, ``zkCli.sh`` or a lesson at one ZooKeeper, and to
watch a quorum lose a server. Prints the connect string on stdout, then waits for Ctrl-C or
SIGTERM and stops the JVMs before exiting 0.
"""

from __future__ import annotations

import signal
import sys
import threading

CHROOT_CONVENTION = "/kclab/<cluster-id>"
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "zk", help="run an embedded ZooKeeper server or ensemble until Ctrl-C",
        description="Run an embedded ZooKeeper server (or a three-server ensemble on loopback) "
                    "until Ctrl-C or SIGTERM; print its connect string.")
    parser.add_argument("--servers", type=int, choices=(1, 3), default=1,
                        help="1: standalone server (default); 3: a loopback ensemble")
    parser.add_argument("--port", type=int, default=None,
                        help="client port (ensemble: the first of three consecutive ones); "
                             "default: a free port")
    parser.add_argument("--tick-time", type=int, default=500, metavar="MS",
                        help="ZooKeeper tickTime; sessions may last from 2 ticks to 60 s (default 500)")
    parser.add_argument("--data-dir", default=None, metavar="DIR",
                        help="keep the data here (default: a temporary directory removed on exit)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from backend.zkserver.classpath import ZooKeeperNotFound
    from backend.zkserver.ensemble import ZooKeeperEnsemble
    from backend.zkserver.server import ZooKeeperServer, ZooKeeperStartError

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in _STOP_SIGNALS}
    try:
        try:
            if args.servers == 1:
                zk = ZooKeeperServer(args.port, data_dir=args.data_dir, tick_time_ms=args.tick_time)
            else:
                zk = ZooKeeperEnsemble(args.servers, base_port=args.port, data_dir=args.data_dir,
                                       tick_time_ms=args.tick_time)
            print(f"starting ZooKeeper {zk.classpath.version} from {zk.classpath.source} ...",
                  file=sys.stderr, flush=True)
            zk.start()
        except (ZooKeeperNotFound, ZooKeeperStartError) as error:
            print(f"kclab zk: {error}", file=sys.stderr)
            return 1
        try:
            _print_banner(zk, args)
            return _wait(zk, stop)
        finally:
            zk.stop()
            print("ZooKeeper stopped.", file=sys.stderr, flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _print_banner(zk, args) -> None:
    shape = "standalone" if args.servers == 1 else f"{args.servers}-server ensemble, leader: server {zk.leader()}"
    kept = "kept" if args.data_dir else "removed on exit"
    print(f"ZooKeeper {zk.classpath.version} ({shape}) is serving.\n"
          f"connect string: {zk.hosts}\n"
          f"each cluster uses its own chroot: {zk.hosts}{CHROOT_CONVENTION}\n"
          f"data: {zk.base_dir} ({kept})\n"
          "Stop with Ctrl-C.", flush=True)


def _wait(zk, stop: threading.Event) -> int:
    """Block until a stop signal; fail if every server died under us."""
    servers = zk.servers.values() if hasattr(zk, "servers") else [zk]
    while not stop.wait(0.5):
        if not any(server.running for server in servers):
            print("kclab zk: ZooKeeper exited unexpectedly", file=sys.stderr, flush=True)
            return 1
    return 0
