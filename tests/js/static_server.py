"""A tiny stand-in for the app's static routes, to look at the page without the Flask server.

``/`` is static/index.html, ``/static/...`` static/, ``/vendor/d3.mjs`` d3's UMD bundle with
a default export (as web/pages.py serves it), ``/vendor/socket.io.mjs`` the npm build, and
``/replays/NAME`` replay logs from a directory.
Open ``/?replay=/replays/NAME.jsonl`` to play one (see static/js/replay-source.js).

    .venv/bin/python tests/js/static_server.py --replays var/replays --port 8765
"""

from __future__ import annotations

import argparse
import mimetypes
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parents[2]
VENDOR = {
    "/vendor/socket.io.mjs": ROOT / "node_modules" / "socket.io-client" / "dist" / "socket.io.esm.min.js",
}
D3_UMD = ROOT / "node_modules" / "d3" / "dist" / "d3.min.js"


class Handler(BaseHTTPRequestHandler):
    def __init__(self, *args, replays: Path | None = None, **kwargs):
        self.replays = replays
        super().__init__(*args, **kwargs)

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = unquote(urlparse(self.path).path)
        if path == "/vendor/d3.mjs":  # as web/pages.py serves it: the UMD bundle, exported
            self._send(D3_UMD.read_bytes() + b"\nexport default globalThis.d3;\n", "text/javascript")
            return
        if path in ("/", "/index.html"):
            file = ROOT / "static" / "index.html"
        elif path in VENDOR:
            file = VENDOR[path]
        elif path.startswith("/static/"):
            file = self._inside(ROOT / "static", path[len("/static/"):])
        elif path.startswith("/replays/") and self.replays is not None:
            file = self._inside(self.replays, path[len("/replays/"):])
        else:
            file = None
        if file is None or not file.is_file():
            self.send_error(404)
            return
        kind = "text/javascript" if file.suffix in (".js", ".mjs") else (mimetypes.guess_type(file.name)[0] or "text/plain")
        self._send(file.read_bytes(), kind)

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    @staticmethod
    def _inside(base: Path, relative: str) -> Path | None:
        file = (base / relative).resolve()
        return file if file.is_relative_to(base.resolve()) else None

    def log_message(self, *args):  # quiet
        pass


def serve(port: int = 0, replays: Path | None = None) -> ThreadingHTTPServer:
    """Start serving on 127.0.0.1:port (0: a free port) in a daemon thread; returns the server."""
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(Handler, replays=replays))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--replays", type=Path, default=None)
    args = parser.parse_args()
    srv = serve(args.port, args.replays)
    print(f"http://127.0.0.1:{srv.server_address[1]}/", flush=True)
    threading.Event().wait()
