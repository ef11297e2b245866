"""What every response and every state-changing request must respect, whatever the view.

- **Headers.** A Content-Security-Policy that lets the pages load only this server's own
  scripts and talk only to this server (the page is offline-first: nothing comes from a CDN), no
  framing by another site (click-jacking a student into crashing a class cluster), no MIME
  sniffing, no referrer (tokens live in URL fragments, but no page should leak its address).
- **No cross-site writes.** A form on another web page can make a student's browser POST to
  this server (form-encoded, multipart or text/plain need no permission). Every request that
  changes something must be JSON or carry one of the app's own headers — both of which a browser
  sends cross-site only after a CORS preflight, which this server never grants.
- **Reverse proxies.** With ``TRUSTED_PROXIES`` = N, Werkzeug's ``ProxyFix`` takes the client's
  address (and scheme and host) from the headers the N proxies in front of the app set.
"""

from __future__ import annotations

from flask import request
from werkzeug.middleware.proxy_fix import ProxyFix

from web.service import ApiError

CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cross-Origin-Opener-Policy": "same-origin"}
APP_HEADERS = ("X-Sandbox-Token", "X-Instructor-Token", "X-Student-Token", "X-Kclab-Request")
"""Headers only this app's pages and API clients send: their presence means no plain form."""
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def init_app(app) -> None:
    proxies = int(app.config.get("TRUSTED_PROXIES") or 0)
    if proxies > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    app.before_request(refuse_cross_site_writes)
    app.after_request(add_headers)


def refuse_cross_site_writes() -> None:
    if request.method not in WRITES or not request.path.startswith("/api/"):
        return
    if request.mimetype == "application/json" or any(name in request.headers for name in APP_HEADERS):
        return
    raise ApiError(415, "send this request as JSON (Content-Type: application/json) or with the app's "
                        "X-Kclab-Request header: plain forms are refused, so another web site cannot act "
                        "in your name")


def add_headers(response):
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response
