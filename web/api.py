"""The HTTP JSON API: everything the page can do, for scripts and other tools.

Described by the OpenAPI document at ``/api/openapi.json``. The handlers only translate HTTP to
calls of ``web.service`` (which the socket handlers call too) and errors to status codes.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from backend.faultscript.limits import MAX_JSON_DEPTH
from backend.view.metrics import prometheus_text
from web import service, zk_health
from web.clients import current_client
from web.openapi import openapi_document

bp = Blueprint("api", __name__, url_prefix="/api")


def manager():
    return current_app.extensions["kclab"].sandboxes


def token() -> str | None:
    return request.headers.get("X-Sandbox-Token")


def body() -> dict | None:
    """The JSON object the request carries (``None`` without a body), or a 400 that says what is
    wrong with it: not JSON, nested deeper than ``MAX_JSON_DEPTH`` (Python's parser would
    recurse until a ``RecursionError``), or not an object — every endpoint takes an object."""
    if not request.data:
        return None
    if service.json_depth(request.data) > MAX_JSON_DEPTH:
        raise service.ApiError(400, f"the JSON body is nested more than {MAX_JSON_DEPTH} deep")
    data = request.get_json(silent=True)
    if data is None:
        raise service.ApiError(400, "the body is not valid JSON (send Content-Type: application/json)")
    if not isinstance(data, dict):
        raise service.ApiError(400, f"the body must be a JSON object ({{...}}), not {type(data).__name__}")
    return data


def register_error_handlers(app) -> None:
    """API errors are JSON with a reason — also those raised before any API view runs (an
    unknown /api/ path, a body over the size limit)."""

    @app.errorhandler(service.ApiError)
    def api_error(error: service.ApiError):
        return jsonify(error.body()), error.status, error.headers

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        """Whatever no check foresaw: logged with its traceback, answered as JSON (a ZooKeeper
        that stopped answering is a 503 that says so, not a 500)."""
        if isinstance(error, HTTPException):
            return http_error(error)
        refusal = zk_health.as_api_error(error)
        if refusal is not None:
            return api_error(refusal)
        current_app.logger.exception("unexpected error in %s %s", request.method, request.path)
        return jsonify({"ok": False, "error": f"the server failed: {type(error).__name__}"}), 500

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        if not request.path.startswith("/api/"):
            return error
        reasons = {413: f"the request is too large (at most {current_app.config['MAX_CONTENT_LENGTH']} bytes)",
                   404: "no such API endpoint", 405: "this method is not allowed here",
                   400: f"the request is malformed: {error.description}"}
        return jsonify({"ok": False, "error": reasons.get(error.code, error.description)}), error.code


@bp.post("/sandboxes")
def create_sandbox():
    sandbox = service.create_sandbox(manager(), body())
    return jsonify({"id": sandbox.id, "token": sandbox.token, **sandbox.describe()}), 201


@bp.get("/sandboxes/<sandbox_id>")
def describe_sandbox(sandbox_id):
    return jsonify(service.sandbox_for(manager(), sandbox_id, token()).describe())


@bp.delete("/sandboxes/<sandbox_id>")
def delete_sandbox(sandbox_id):
    service.sandbox_for(manager(), sandbox_id, token())
    manager().close(sandbox_id)
    return "", 204


@bp.post("/sandboxes/<sandbox_id>/faults")
def apply_fault(sandbox_id):
    current_app.extensions["kclab"].fault_rate.take(current_client())
    return jsonify(service.apply(manager(), sandbox_id, token(), body()))


@bp.get("/sandboxes/<sandbox_id>/snapshot")
def snapshot(sandbox_id):
    return jsonify(service.sandbox_for(manager(), sandbox_id, token()).snapshot())


@bp.get("/sandboxes/<sandbox_id>/metrics")
def metrics(sandbox_id):
    """JSON, or Prometheus' text format for a scraper that asks for ``text/plain``."""
    values = service.sandbox_for(manager(), sandbox_id, token()).cluster.metrics()
    if request.accept_mimetypes.best_match(["application/json", "text/plain"]) == "text/plain":
        return Response(prometheus_text(values), mimetype="text/plain; version=0.0.4")
    return jsonify(values)


@bp.get("/sandboxes/<sandbox_id>/records")
def records(sandbox_id):
    return jsonify(service.records_since(manager(), sandbox_id, token(), request.args.get("since"),
                                         request.args.get("limit")))


@bp.get("/vocabulary")
def vocabulary():
    return jsonify(service.vocabulary())


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())
