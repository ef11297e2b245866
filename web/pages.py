"""The page itself and its libraries, all from our own origin (classrooms are often offline):
d3 and the Socket.IO client from the npm packages pinned in ``package-lock.json``, plotly.js
from the plotly Python package."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, abort, current_app, send_from_directory

ROOT = Path(__file__).resolve().parents[1]
bp = Blueprint("pages", __name__)

VENDOR = {
    "d3.js": ("node_modules/d3/dist", "d3.min.js"),
    "socket.io.mjs": ("node_modules/socket.io-client/dist", "socket.io.esm.min.js"),
}


@bp.get("/")
def index():
    return send_from_directory(ROOT / "static", "index.html", max_age=0)


@bp.get("/vendor/d3.mjs")
def d3_module():
    """d3 as one ES module: ``import d3 from "/vendor/d3.mjs"``. d3's own ``d3.min.mjs``
    re-exports its thirty sub-packages by bare name, which a browser cannot resolve without a
    bundler; its UMD bundle, run as a module, defines ``globalThis.d3``, which we export."""
    path = ROOT / "node_modules/d3/dist/d3.min.js"
    if not path.exists():
        abort(500)
    source = path.read_text(encoding="utf-8") + "\nexport default globalThis.d3;\n"
    return current_app.response_class(source, mimetype="text/javascript", headers={"Cache-Control": "max-age=86400"})


@bp.get("/vendor/<name>")
def vendor(name: str):
    if name == "plotly.min.js":
        import plotly
        return send_from_directory(Path(plotly.__file__).parent / "package_data", "plotly.min.js", max_age=86400)
    if name not in VENDOR:
        abort(404)
    directory, filename = VENDOR[name]
    if not (ROOT / directory / filename).exists():
        current_app.logger.error("%s is missing: run `make setup` (npm ci) first", ROOT / directory / filename)
        abort(500)
    return send_from_directory(ROOT / directory, filename, max_age=86400, mimetype="text/javascript")


@bp.get("/healthz")
def healthz():
    """Up, and is ZooKeeper? 503 while it is not connected, with its state and since when — for
    a load balancer, docker's health check, and the page's banner. Answered from memory: it
    never waits on ZooKeeper or on a sandbox."""
    state = current_app.extensions["kclab"]
    zookeeper = state.zk_health.describe()
    body = {"ok": zookeeper["ok"], "zookeeper": zookeeper, "sandboxes": len(state.sandboxes.all()),
            "sockets": state.sockets.open if state.sockets is not None else None, "load": state.load_guard.describe()}
    return body, 200 if zookeeper["ok"] else 503
