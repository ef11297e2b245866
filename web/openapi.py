"""The OpenAPI 3.1 document of the HTTP API, built from the same vocabulary that checks requests,
so the documentation cannot say something the server does not do."""

from __future__ import annotations

from functools import lru_cache

from backend.core.records import FIELD_NAMES
from backend.scripts.schema import build_schema, op_schema
from backend.scripts.vocabulary import FAULT_VOCABULARY

_ERRORS = {"400": "malformed request (the reason says what)", "403": "the sandbox token is missing or wrong",
           "404": "no such sandbox", "409": "the fault does not apply to the cluster as it is now",
           "413": "request too large", "503": "no room for another sandbox"}


def _responses(ok: str, schema: str | None = None, errors=("400", "403", "404")) -> dict:
    out = {"200" if ok != "201" else "201": {"description": "OK"}}
    if schema:
        out[next(iter(out))]["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}
    for code in errors:
        out[code] = {"description": _ERRORS[code],
                     "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return out


_TOKEN = [{"sandboxToken": []}]
_ID = [{"name": "sandbox_id", "in": "path", "required": True, "schema": {"type": "string"}}]


@lru_cache(maxsize=1)
def openapi_document() -> dict:
    script = build_schema()
    record_props = {name: {} for name in FIELD_NAMES}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Kafka Controller Lab API", "version": "1",
                 "description": "Create a sandbox cluster, break it, and read what its controller did — the same "
                                "operations as the page, with the same checks and the same records."},
        "paths": {
            "/api/sandboxes": {"post": {
                "summary": "Create a sandbox cluster (its id and the token that owns it are returned)",
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewSandbox"}}}},
                "responses": _responses("201", "Sandbox", errors=("400", "413", "503"))}},
            "/api/sandboxes/{sandbox_id}": {
                "parameters": _ID,
                "get": {"summary": "Describe a sandbox", "security": _TOKEN, "responses": _responses("200", "Sandbox")},
                "delete": {"summary": "Stop a sandbox (its replay log is kept)", "security": _TOKEN,
                           "responses": _responses("204")}},
            "/api/sandboxes/{sandbox_id}/faults": {"parameters": _ID, "post": {
                "summary": "Apply a fault (crash a broker, create a topic, ...)", "security": _TOKEN,
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Fault"}}}},
                "responses": _responses("200", "FaultResult", errors=("400", "403", "404", "409", "413"))}},
            "/api/sandboxes/{sandbox_id}/snapshot": {"parameters": _ID, "get": {
                "summary": "The page's view state at the latest seq", "security": _TOKEN,
                "responses": _responses("200", "Snapshot")}},
            "/api/sandboxes/{sandbox_id}/records": {"parameters": [*_ID,
                {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0}}],
                "get": {"summary": "Records with seq >= since, in order", "security": _TOKEN,
                        "responses": _responses("200", "RecordPage")}},
            "/api/vocabulary": {"get": {"summary": "Every operation with its fields",
                                        "responses": _responses("200", errors=())}},
            "/api/openapi.json": {"get": {"summary": "This document", "responses": _responses("200", errors=())}},
        },
        "components": {
            "securitySchemes": {"sandboxToken": {"type": "apiKey", "in": "header", "name": "X-Sandbox-Token"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {
                    "ok": {"const": False}, "error": {"type": "string"}, "seq": {"type": "integer"}}},
                "NewSandbox": {"type": "object", "additionalProperties": False, "properties": {
                    "cluster": script["properties"]["cluster"]}},
                "Sandbox": {"type": "object", "properties": {
                    "id": {"type": "string"}, "token": {"type": "string"}, "mode": {"type": "string"},
                    "status": {"type": "string"}, "cluster": {"type": "object"}}},
                "Fault": {"oneOf": [op_schema(op) for op in FAULT_VOCABULARY.values()]},
                "FaultResult": {"type": "object", "properties": {
                    "ok": {"type": "boolean"}, "message": {"type": "string"}, "seq": {"type": "integer"}}},
                "Record": {"type": "object", "required": ["v", "session_id", "seq", "ts_ms", "kind", "subject"],
                           "properties": record_props, "description": "See docs/records.md."},
                "Snapshot": {"type": "object", "properties": {"seq": {"type": "integer"}, "view": {"type": "object"}}},
                "RecordPage": {"type": "object", "properties": {
                    "records": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                    "next": {"type": "integer"}}},
            },
        },
    }
