"""``kclab serve``: the web app, on an embedded ZooKeeper unless ``--zk`` names an ensemble.

By default it runs under gunicorn with one worker process per core (``--workers N``), each with
many threads; the workers share a Redis (``web/scaleout``), started as a child process like the
embedded ZooKeeper unless ``--redis`` names one. ``--dev`` uses Werkzeug's development server
instead (one process). It prints the URL once the app answers.

The printed links use ``--public-url`` (or ``KCLAB_PUBLIC_URL``) when the app sits behind a
reverse proxy or is reached by a name: students cannot open ``http://127.0.0.1:5000/``, and an
instructor who copies that link from a server's log gets nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from urllib.parse import urlsplit

MAX_URL_LENGTH = 200
MIN_TOKEN_LENGTH = 16  # a set token is meant to last a term: no "changeme"


def public_url(text: str) -> str:
    """``http(s)://host[:port][/path]``, returned with one trailing slash so links append to it."""
    parts = urlsplit(text.strip())
    if (len(text) > MAX_URL_LENGTH or parts.scheme not in ("http", "https") or not parts.hostname
            or parts.query or parts.fragment or parts.username):
        raise argparse.ArgumentTypeError(
            f"{text[:MAX_URL_LENGTH]!r} is not a public URL like https://lab.example.edu/ "
            f"(http or https, a host, an optional port and path, at most {MAX_URL_LENGTH} characters)")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/"


def _positive(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers from 1 to 64")
    return int(text)


def register(subparsers) -> None:
    from web.commands.knobs import settings_help
    parser = subparsers.add_parser("serve", help="run the web app (and an embedded ZooKeeper)",
                                   description="Run Kafka Controller Lab's web app.", epilog=settings_help(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zk", metavar="HOST:PORT[,...]", help="use this ZooKeeper ensemble instead of an embedded one")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                                                             "0.0.0.0 for a classroom)")
    parser.add_argument("--port", type=int, default=5000, help="port (default 5000)")
    parser.add_argument("--public-url", type=public_url, default=os.environ.get("KCLAB_PUBLIC_URL") or None,
                        metavar="URL", help="the address students use, for the printed links, e.g. "
                                            "https://lab.example.edu/ (default: $KCLAB_PUBLIC_URL, else the "
                                            "address the app listens on)")
    parser.add_argument("--threads", type=int, default=64,
                        help="threads kept for HTTP requests, beyond those of open page sockets (default 64)")
    parser.add_argument("--max-sockets", type=int, default=1000,
                        help="open page sockets (each holds a thread; more are refused until one closes; default 1000; "
                             "0: no cap, as before issue 11 — for benchmarks)")
    parser.add_argument("--max-sandboxes", type=int, default=None, metavar="N",
                        help="sandboxes the server runs at most, across its workers (default: what the machine's "
                             "memory and cores hold, measured per sandbox: web/capacity.py)")
    parser.add_argument("--shed-after-ms", type=float, default=None, metavar="MS",
                        help="refuse students' new faults and sandboxes (503, try again) while a worker runs more "
                             "than this far behind, so that they are told the server is overloaded instead of "
                             "waiting (default 300; 0: never for this reason, --shed-zk-after-ms still applies — "
                             "web/load_guard.py)")
    parser.add_argument("--shed-zk-after-ms", type=float, default=None, metavar="MS",
                        help="the same refusal while a worker's ZooKeeper session loop runs more than this far "
                             "behind on its pings, before its brokers' sessions drop and expire (default 1000; "
                             "0: never for this reason)")
    parser.add_argument("--workers", type=_positive, default=None, metavar="N",
                        help="worker processes, so a class uses every core (default: the number of cores); more "
                             "than one needs Redis: a redis-server of its own unless --redis names one")
    parser.add_argument("--redis", metavar="URL", default=os.environ.get("KCLAB_REDIS_URL") or None,
                        help="an existing Redis for the workers' message queue, e.g. redis://redis:6379/0 (default: "
                             "$KCLAB_REDIS_URL, else a redis-server started as the app's child when workers > 1)")
    parser.add_argument("--trusted-proxies", type=int, default=0, metavar="N",
                        help="reverse proxies in front of the app whose X-Forwarded-For names the client (default 0)")
    parser.add_argument("--data-dir", metavar="DIR", help="replay logs and uploads (default ./var)")
    parser.add_argument("--dev", action="store_true", help="Werkzeug's development server instead of gunicorn")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="what the app and its ZooKeeper client (kazoo) log to stderr (default warning, with "
                             "kazoo's connection drops left out: the page shows them; info: every connection kazoo "
                             "makes and drops, to tell why students see ConnectionLoss — docs/performance.md)")
    parser.set_defaults(func=run)


LOG_LEVELS = ("warning", "info", "debug")


def configure_logging(level: str) -> None:
    """stderr at ``level``. At the default, kazoo's own warnings (a dropped connection, a retry)
    stay out: a broker's dropped connection is a fault the lab records and shows, and a class
    drops hundreds. Asked for ``info`` or ``debug``, kazoo says everything at that level too,
    which is how the sixteenth round found a worker's dropped pings (docs/performance.md)."""
    import logging
    logging.basicConfig(level=level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s")
    logging.getLogger("kazoo").setLevel(kazoo_level(level))


def kazoo_level(level: str) -> str:
    """kazoo's logger's level for ``--log-level level``."""
    return "ERROR" if level == "warning" else level.upper()


def run(args) -> int:
    import secrets

    token = os.environ.get("KCLAB_INSTRUCTOR_TOKEN") or secrets.token_urlsafe(12)
    if len(token) < MIN_TOKEN_LENGTH:
        print(f"kclab serve: KCLAB_INSTRUCTOR_TOKEN is {len(token)} characters; use {MIN_TOKEN_LENGTH} or more, "
              "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))'", file=sys.stderr)
        return 2
    from web.commands.knobs import KnobError, knobs_from
    try:
        args.knobs = knobs_from(os.environ)  # checked before ZooKeeper, Redis or a worker starts
    except KnobError as error:
        print(f"kclab serve: {error}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    if args.data_dir:
        os.environ["KCLAB_DATA_DIR"] = args.data_dir
    with _message_queue(args) as redis_url:
        args.redis = redis_url
        return _with_zookeeper(args, token)


def _with_zookeeper(args, token: str) -> int:
    if args.zk:
        return _serve(args, args.zk, None, token)
    from backend.zkserver.server import ZooKeeperServer
    from backend.zkserver.supervisor import Supervisor
    print("starting an embedded ZooKeeper ...", file=sys.stderr, flush=True)
    with ZooKeeperServer(force_sync=False) as zk:
        supervisor = Supervisor(zk, on_restart=_said).start()  # a JVM that dies comes back, same port and data
        try:
            return _serve(args, zk.hosts, zk, token)
        finally:
            supervisor.stop()


@contextmanager
def _message_queue(args):
    """The workers' Redis: ``--redis``'s, else a child ``redis-server`` (supervised: restarted if
    it dies, and stopped with us), or none for one worker. A machine without ``redis-server``
    runs one worker and says why."""
    from web.capacity import machine_cores
    from web.scaleout.redis_server import RedisServer, redis_available
    from backend.zkserver.supervisor import Supervisor
    args.workers = 1 if args.dev else (args.workers or machine_cores())
    if args.workers <= 1 or args.redis:
        yield args.redis
        return
    if not redis_available():
        print(f"kclab serve: redis-server is not installed, so the app runs 1 worker instead of {args.workers} "
              "(install Debian's redis-server, or name one with --redis URL)", file=sys.stderr, flush=True)
        args.workers = 1
        yield None
        return
    with RedisServer() as server:
        supervisor = Supervisor(server, on_restart=lambda s, error: print(
            f"Redis on {s.hosts} had stopped: {'restarted' if error is None else f'not restarted yet: {error}'}",
            file=sys.stderr, flush=True)).start()
        try:
            yield server.url
        finally:
            supervisor.stop()


def _said(server, error) -> None:
    if error is None:
        print(f"ZooKeeper on {server.hosts} had stopped: restarted on the same port and data directory",
              file=sys.stderr, flush=True)
    else:
        print(f"ZooKeeper on {server.hosts} had stopped and could not be restarted yet: {error}",
              file=sys.stderr, flush=True)


def _serve(args, hosts: str, zk_control, token: str) -> int:
    config = {"ZK_HOSTS": hosts, "ZK_CONTROL": zk_control, "INSTRUCTOR_TOKEN": token,
              "MAX_SOCKETS": args.max_sockets or None, "TRUSTED_PROXIES": args.trusted_proxies,
              "MAX_SANDBOXES": args.max_sandboxes, "REDIS_URL": args.redis}
    if args.shed_after_ms is not None:
        config["SHED_AFTER_MS"] = args.shed_after_ms
    if args.shed_zk_after_ms is not None:
        config["SHED_ZK_AFTER_MS"] = args.shed_zk_after_ms
    config.update(args.knobs)  # operators' (and the hardening tests') KCLAB_ settings: web/commands/knobs.py
    from backend.runtime.record_bus import HISTORY
    from web.capacity import capacity
    url = args.public_url or f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}/"
    banner = (f"Kafka Controller Lab is serving at {url} (listening on {args.host}:{args.port})\n"
              f"Instructor (keep this link to yourself): {url}instructor#token={token}\n"
              f"Students join a class at {url}join\n"
              f"Class statistics (instructor): {url}stats#token={token}\n"
              f"Every recorded session (instructor): {url}replays#token={token}\n"
              f"ZooKeeper: {hosts} (each sandbox under /kclab/<session-id>)\n"
              f"Sandboxes: at most {capacity(args.max_sandboxes, config.get('RECORD_HISTORY', HISTORY)).why}\n"
              f"Workers: {args.workers}{f' (message queue {args.redis})' if args.redis else ''}\nStop with Ctrl-C.")
    if args.dev:
        from web.app import create_app
        from web.gunicorn_app import dump_threads_on_signal
        app = create_app(config)
        dump_threads_on_signal()
        print(banner, flush=True)
        try:
            app.extensions["kclab"].socketio.run(app, host=args.host, port=args.port, allow_unsafe_werkzeug=True,
                                                 log_output=False)
        finally:
            app.extensions["kclab"].close()
        return 0
    from web.gunicorn_app import serve
    return serve(config, args.host, args.port, args.max_sockets + args.threads, banner, args.workers)
