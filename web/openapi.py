"""The OpenAPI 3.1 document of the HTTP API, built from the same vocabulary that checks requests,
so the documentation cannot say something the server does not do."""

from __future__ import annotations

from functools import lru_cache

from backend.core.records import FIELD_NAMES
from backend.faultscript.cluster_spec import SANDBOX_CLUSTER_FIELDS
from backend.faultscript.fields import fields_schema
from backend.faultscript.schema import op_schema
from backend.faultscript.vocabulary import FAULT_VOCABULARY
from web import stats_pages

_ERRORS = {"400": "malformed request, or beyond a bound (the reason says which)",
           "403": "the sandbox token is missing or wrong", "404": "no such sandbox",
           "409": "the fault does not apply to the cluster as it is now", "413": "request too large",
           "415": "not JSON and none of the app's headers (a cross-site form is refused)",
           "429": "this client's share is used up: too many sandboxes, or faults too fast (see Retry-After)",
           "503": "no room for another sandbox, ZooKeeper unreachable, or the server running behind and refusing "
                  "new work (overloaded: true) — see Retry-After"}


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


def _teaching_paths() -> dict:
    """Lessons, walkthroughs, authoring and classes (web/teaching_api.py)."""
    def op(summary, responses=("200",), errors=("400",), security=None, body=None, params=()):
        out = {"summary": summary, "responses": {}}
        for code in responses:
            out["responses"][code] = {"description": _ANSWERS.get(code, code),
                                      "content": {"application/json": {"schema": {"type": "object"}}}}
        for code in errors:
            out["responses"][code] = {"description": _TEACHING_ERRORS[code], "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        if security:
            out["security"] = [{security: []}]
        if body:
            out["requestBody"] = {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": body}}}}
        if params:
            out["parameters"] = [{"name": n, "in": "query", "schema": {"type": t}} for n, t in params]
        return out

    path = lambda *names: [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}  # noqa: E731
                           for n in names]
    text = {"text": {"type": "string", "description": "the lesson's YAML"}}
    return {
        "/api/lessons": {"get": op("Every lesson in the course's order, broken ones with file:line and reason, "
                                   "and the course's parts", errors=())},
        "/api/lessons/{lesson_id}": {"parameters": path("lesson_id"), "get": op(
            "One lesson: its steps", errors=("404",))},
        "/api/lessons/{lesson_id}/walkthrough": {"parameters": path("lesson_id"), "post": op(
            "Start a walkthrough: a sandbox playing the lesson (its id and token)", ("201",), ("404", "409", "503"))},
        "/api/sandboxes/{sandbox_id}/lesson/{action}": {"parameters": path("sandbox_id", "action"), "post": op(
            "A walkthrough's controls: continue, answer {question, answer: a choice or \"I'm not sure\"}, "
            "replay {step} (the lesson again on a new cluster, up to that stop), restart, try {step} (a free-play "
            "copy); replay, restart and try answer with the new sandbox", ("200", "201"), ("400", "403", "404", "409"),
            "sandboxToken", {"question": {"type": "string"}, "answer": {}, "step": {"type": "integer"}})},
        "/api/lessons/check": {"post": op("Check a lesson's YAML: its problems, each with a line", body=text)},
        "/api/instructor/lessons": {"post": op(
            "Save a lesson for this instructor (a lesson with problems is never saved)", ("201",), ("400", "403"),
            "instructorToken", {"id": {"type": "string"}, "instructor": {"type": "string"}, **text})},
        "/api/instructor/lessons/dry-run": {"post": op(
            "Play a lesson headless on a throwaway cluster; ok or the step that failed", errors=("400", "403"),
            security="instructorToken", body=text)},
        "/api/classes": {"post": op("Open a class: its id and short join code (409 when the server already "
                                    "holds MAX_CLASSES)", ("201",), ("403", "409"),
                                    "instructorToken", {"instructor": {"type": "string"}})},
        "/api/classes/join": {"post": op("Join a class with its code and a display name: the student's token "
                                         "(409 when the class has MAX_STUDENTS_PER_CLASS students)",
                                         ("201",), ("400", "404", "409"), body={"code": {"type": "string"},
                                                                               "name": {"type": "string"}})},
        "/api/classes/{class_id}/handout": {"parameters": path("class_id"), "get": op(
            "The class's last hand-out of private copies: {id, class, status: running | done, total, built, "
            "failed: [{student, name, error}], remaining, started_ms, finished_ms} (also the class's `handout`, "
            "and the class_handout event to the instructor after every copy)", errors=("403", "404"),
            security="instructorToken")},
        "/api/classes/{class_id}/load": {"parameters": path("class_id"), "get": op(
            "Is the server keeping up with the class? {workers: [{worker, sandboxes, lag_ms, zk_lag_ms, "
            "zk_limit_ms, shedding, refused, zk_dropped, zk_expired}], sandboxes, cap, shedding, zk_lag_ms, "
            "refused, zk_dropped, zk_expired}: the counters since each worker started, summed (the "
            "instructor's page shows their change over a minute)", errors=("403", "404"),
            security="instructorToken")},
        "/api/classes/{class_id}": {"parameters": path("class_id"), "get": op(
            "The class: students, session, pause, the open question's answers", errors=("403", "404"),
            security="instructorToken")},
        "/api/classes/{class_id}/records": {"parameters": path("class_id"), "get": op(
            "The class session's records with seq >= since (students and the instructor)", errors=("403", "404", "409"),
            security="studentToken", params=(("session", "string"), ("since", "integer"), ("limit", "integer")))},
        "/api/classes/{class_id}/faults": {"parameters": path("class_id"), "post": op(
            "Apply a fault to the class cluster (the instructor only; a student is refused)",
            errors=("400", "403", "404", "409"), security="instructorToken",
            body={"op": {"type": "string"}})},
        "/api/classes/{class_id}/{action}": {"parameters": path("class_id", "action"), "post": op(
            "Run the class: session {lesson | cluster}, pause {paused}, continue, fork {students} (a private "
            "copy each — students 'all', the default, or 'missing': those without a running copy — built in "
            "the background: 202 at once with {handout} and a Location to follow it; 409 while the class's "
            "previous hand-out runs; a student who joins meanwhile is added to it; each student gets "
            "private_sandbox, or private_sandbox_failed with the reason)", ("200", "201", "202"),
            ("400", "403", "404", "409", "503"), "instructorToken",
            {"lesson": {"type": "string"}, "cluster": {"type": "object"}, "paused": {"type": "boolean"},
             "students": {"type": "string", "enum": ["all", "missing"]}})},
    }


_ANSWERS = {"200": "OK", "201": "Created", "202": "Accepted: the work goes on in the background"}
_TEACHING_ERRORS = {"400": "malformed request (the reason says what)", "403": "the token is missing or wrong",
                    "404": "no such lesson, sandbox or class", "409": "not possible now (the reason says why)",
                    "503": "no room for another sandbox"}


def _replay_error(code: str, why: str) -> dict:
    return {"description": why, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _replay_paths() -> dict:
    """Recorded sessions (web/replays_api.py): list, export, import, records."""
    name = [{"name": "name", "in": "path", "required": True,
             "schema": {"type": "string", "pattern": r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\.jsonl$"}}]
    bad_name = _replay_error("400", "not a replay log name")
    unknown = _replay_error("404", "no replay log of that name that you may open")
    not_yours = _replay_error("403", "the log is another sandbox's, or the instructor's")
    readers = [{"replayTokens": []}, {"sandboxToken": []}, {"instructorToken": []}]
    query = lambda n, t, d: {"name": n, "in": "query", "schema": {"type": t}, "description": d}  # noqa: E731
    ok = lambda schema: {"description": "OK", "content": {"application/json": {  # noqa: E731
        "schema": {"$ref": f"#/components/schemas/{schema}"}}}}
    return {
        "/api/replays": {
            "get": {"summary": "Recorded sessions the caller may open (their sandboxes'; every one for the "
                               "instructor), newest first", "security": readers,
                    "parameters": [query("class", "string", "class id"), query("lesson", "string", "lesson id"),
                                   query("mode", "string", "sandbox, lesson, class or script"),
                                   query("student", "string", "pseudonymous student id"),
                                   query("since", "string", "started at or after: ms, ISO date (UTC) or date-time"),
                                   query("until", "string", "started at or before (a date: the whole day)"),
                                   query("limit", "integer", "at most this many entries")],
                    "responses": {"200": ok("ReplayList"), "400": _replay_error("400", "a filter is malformed")}},
            "post": {"summary": "Import a replay log (multipart field 'file', or the raw body). A damaged log is "
                                "kept and flagged; one whose first line is no session header is refused. Never "
                                "overwrites: the log is stored as <session>.imported[-N].jsonl in imported-replays/ beside replays/, "
                                "which the statistics job does not read. The instructor's only, within a quota",
                     "security": [{"instructorToken": []}],
                     "requestBody": {"required": True, "content": {
                         "multipart/form-data": {"schema": {"type": "object", "properties": {
                             "file": {"type": "string", "format": "binary"}}}},
                         "application/x-ndjson": {"schema": {"type": "string"}}}},
                     "responses": {"201": ok("ReplayImport"),
                                   "200": {"description": "the same bytes were already here: that entry",
                                           "content": {"application/json": {"schema": {
                                               "$ref": "#/components/schemas/ReplayImport"}}}},
                                   "400": _replay_error("400", "empty, or not a replay log (the reason says why)"),
                                   "403": _replay_error("403", "the instructor token is missing or wrong"),
                                   "413": _replay_error("413", "larger than REPLAY_IMPORT_MAX_BYTES"),
                                   "507": _replay_error("507", "the imports' quota (REPLAY_IMPORT_QUOTA_BYTES) is "
                                                               "used up")}}},
        "/api/replays/{name}": {"parameters": name, "get": {
            "summary": "The replay log itself, as a download (export). X-Replay-Live: 1 while it is recorded",
            "security": readers,
            "responses": {"200": {"description": "the log: a session header line, then one record per line",
                                  "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
                          "400": bad_name, "403": not_yours, "404": unknown}}},
        "/api/replays/{name}/entry": {"parameters": name, "get": {
            "summary": "The list entry of one replay log", "security": readers, "responses": {
                "200": ok("ReplayEntry"), "400": bad_name, "403": not_yours, "404": unknown}}},
        "/api/replays/{name}/records": {"parameters": [*name,
            {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 5000}}],
            "get": {"summary": "Records with seq >= since up to the log's damage, with its header and damage",
                    "security": readers,
                    "responses": {"200": ok("ReplayRecordPage"), "400": bad_name, "403": not_yours, "404": unknown}}},
    }


_DAMAGE = {"oneOf": [{"type": "null"}, {"type": "object", "required": ["line", "reason"], "properties": {
    "line": {"type": "integer", "description": "1-based line number of the first line that breaks a rule"},
    "reason": {"type": "string"}}}]}
_NULLABLE = lambda t: {"type": [t, "null"]}  # noqa: E731
_REPLAY_SCHEMAS = {
    "ReplayEntry": {"type": "object", "properties": {
        "name": {"type": "string"}, "session_id": _NULLABLE("string"), "mode": _NULLABLE("string"),
        "lesson_id": _NULLABLE("string"), "class_id": _NULLABLE("string"), "student": _NULLABLE("string"),
        "started_ms": _NULLABLE("integer"), "app_version": _NULLABLE("string"), "cluster": _NULLABLE("object"),
        "records": {"type": "integer", "description": "readable records (up to the damage)"},
        "last_seq": _NULLABLE("integer"), "last_ts_ms": _NULLABLE("integer"), "size": {"type": "integer"},
        "modified_ms": {"type": "integer"}, "imported": {"type": "boolean"},
        "live": {"type": "boolean", "description": "being recorded right now"},
        "damaged": {"type": "boolean"}, "damage": _DAMAGE}},
    "ReplayList": {"type": "object", "properties": {
        "replays": {"type": "array", "items": {"$ref": "#/components/schemas/ReplayEntry"}},
        "total": {"type": "integer"}}},
    "ReplayImport": {"allOf": [{"$ref": "#/components/schemas/ReplayEntry"}, {"type": "object", "properties": {
        "ok": {"const": True}, "created": {"type": "boolean"}}}]},
    "ReplayRecordPage": {"type": "object", "properties": {
        "records": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
        "next": {"type": "integer"}, "header": _NULLABLE("object"), "damage": _DAMAGE, "live": {"type": "boolean"}}},
}


@lru_cache(maxsize=1)
def openapi_document() -> dict:
    record_props = {name: {} for name in FIELD_NAMES}
    health = {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}  # 200 and 503 alike
    return {
        "openapi": "3.1.0",
        "info": {"title": "Kafka Controller Lab API", "version": "1",
                 "description": "Create a sandbox cluster, break it, and read what its controller did — the same "
                                "operations as the page, with the same checks and the same records."},
        "paths": {
            "/api/sandboxes": {"post": {
                "summary": "Create a sandbox cluster (its id and the token that owns it are returned)",
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewSandbox"}}}},
                "responses": _responses("201", "Sandbox", errors=("400", "413", "415", "429", "503"))}},
            "/api/sandboxes/{sandbox_id}": {
                "parameters": _ID,
                "get": {"summary": "Describe a sandbox", "security": _TOKEN, "responses": _responses("200", "Sandbox")},
                "delete": {"summary": "Stop a sandbox (its replay log is kept)", "security": _TOKEN,
                           "responses": _responses("204")}},
            "/api/sandboxes/{sandbox_id}/faults": {"parameters": _ID, "post": {
                "summary": "Apply a fault (crash a broker, create a topic, ...)", "security": _TOKEN,
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Fault"}}}},
                "responses": _responses("200", "FaultResult",
                                        errors=("400", "403", "404", "409", "413", "415", "429", "503"))}},
            "/api/sandboxes/{sandbox_id}/snapshot": {"parameters": _ID, "get": {
                "summary": "The page's view state at the latest seq", "security": _TOKEN,
                "responses": _responses("200", "Snapshot")}},
            "/api/sandboxes/{sandbox_id}/metrics": {"parameters": _ID, "get": {
                "summary": "The controller's metrics by Kafka's names, per broker, and ActiveControllerCount summed "
                           "over the brokers (JSON; Prometheus' text format with Accept: text/plain)",
                "security": _TOKEN, "responses": {
                    **_responses("200", "Metrics"),
                    "200": {"description": "OK", "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Metrics"}},
                        "text/plain": {"schema": {"type": "string"}}}}}}},
            "/api/sandboxes/{sandbox_id}/records": {"parameters": [*_ID,
                {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0}}],
                "get": {"summary": "Records with seq >= since, in order", "security": _TOKEN,
                        "responses": _responses("200", "RecordPage")}},
            **_replay_paths(),
            **_teaching_paths(),
            **stats_pages.openapi_paths(),
            "/api/vocabulary": {"get": {"summary": "Every operation with its fields",
                                        "responses": _responses("200", errors=())}},
            "/api/openapi.json": {"get": {"summary": "This document", "responses": _responses("200", errors=())}},
            "/healthz": {"get": {"summary": "Up, and ZooKeeper's state (connected, suspended, lost) and since when; "
                                            "how far behind the worker runs (load)",
                                 "responses": {"200": {"description": "ZooKeeper connected", "content": health},
                                               "503": {"description": "ZooKeeper unreachable (the body says since "
                                                                      "when)", "content": health}}}},
        },
        "components": {
            "securitySchemes": {
                "sandboxToken": {"type": "apiKey", "in": "header", "name": "X-Sandbox-Token"},
                "instructorToken": {"type": "apiKey", "in": "header", "name": "X-Instructor-Token",
                                    "description": "printed by kclab serve in the instructor link"},
                "studentToken": {"type": "apiKey", "in": "header", "name": "X-Student-Token",
                                 "description": "returned by POST /api/classes/join"},
                "replayTokens": {"type": "apiKey", "in": "header", "name": "X-Replay-Tokens",
                                 "description": "comma-separated sandbox tokens (at most 100): a replay log opens "
                                                "with the token of the sandbox it recorded"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {
                    "ok": {"const": False}, "error": {"type": "string"}, "seq": {"type": "integer"},
                    "retry_after": {"type": "integer", "description": "seconds, as the Retry-After header"},
                    "overloaded": {"const": True, "description": "the server has fallen behind (web/load_guard.py): "
                                                                "nothing was done; try again later"}}},
                "Health": {
                    "type": "object", "required": ["ok", "zookeeper", "sandboxes", "sockets", "load"],
                    "description": "What a load balancer, docker's health check, the page's banner and a client "
                                   "that was told 'overloaded' read (web/pages.py healthz)",
                    "properties": {
                        "ok": {"type": "boolean", "description": "ZooKeeper is connected"},
                        "zookeeper": {"type": "object", "required": ["state", "ok", "since_ms", "hosts", "outages"],
                                      "properties": {
                                          "state": {"enum": ["connecting", "connected", "suspended", "lost"]},
                                          "ok": {"type": "boolean"},
                                          "since_ms": {"type": "integer", "description": "in this state since"},
                                          "hosts": {"type": "string"}, "outages": {"type": "integer"}}},
                        "sandboxes": {"type": "integer", "description": "running in the worker that answered"},
                        "sockets": {"type": ["integer", "null"], "description": "page sockets open in that worker"},
                        "load": {"type": "object",
                                 "required": ["lag_ms", "limit_ms", "zk_lag_ms", "zk_limit_ms", "zk_dropped",
                                              "zk_expired", "shedding", "refused"],
                                 "description": "how far behind the worker runs (web/load_guard.py)",
                                 "properties": {
                                     "lag_ms": {"type": "number", "description": "smoothed lateness"},
                                     "limit_ms": {"type": "number",
                                                  "description": "past it, students' new work is refused"},
                                     "zk_lag_ms": {"type": "number",
                                                   "description": "how overdue the worker's ZooKeeper session "
                                                                  "loop's pings and time-outs are, smoothed: past "
                                                                  "about 1 s, some sessions drop (ConnectionLoss)"},
                                     "zk_limit_ms": {"type": "number",
                                                     "description": "past it, students' new work is refused too "
                                                                    "(0: never for this reason)"},
                                     "zk_dropped": {"type": "integer",
                                                    "description": "that worker's ZooKeeper connections dropped "
                                                                   "or timed out since it started"},
                                     "zk_expired": {"type": "integer",
                                                    "description": "its sessions ZooKeeper expired (each a broker "
                                                                   "or controller dead to its cluster, whoever "
                                                                   "caused it: a lesson's ZooKeeper outage, or a "
                                                                   "worker too busy to ping)"},
                                     "shedding": {"type": "boolean",
                                                  "description": "refusing now: a refused fault may be tried "
                                                                 "again once this is false"},
                                     "refused": {"type": "integer", "description": "requests refused since start"}}}}},
                "NewSandbox": {"type": "object", "additionalProperties": False, "properties": {
                    "cluster": {**fields_schema(SANDBOX_CLUSTER_FIELDS), "description": "the sandbox's cluster"}}},
                "Sandbox": {"type": "object", "properties": {
                    "id": {"type": "string"}, "token": {"type": "string"}, "mode": {"type": "string"},
                    "status": {"type": "string"}, "cluster": {"type": "object"}}},
                "Fault": {"oneOf": [op_schema(op) for op in FAULT_VOCABULARY.values()]},
                "FaultResult": {"type": "object", "properties": {
                    "ok": {"type": "boolean"}, "message": {"type": "string"}, "seq": {"type": "integer"}}},
                "Record": {"type": "object", "required": ["v", "session_id", "seq", "ts_ms", "kind", "subject"],
                           "properties": record_props, "description": "See docs/records.md."},
                "Snapshot": {"type": "object", "properties": {"seq": {"type": "integer"}, "view": {"type": "object"}}},
                "Metrics": {"type": "object", "description": "See backend/view/metrics.py.", "properties": {
                    "ActiveControllerCount": {"type": "integer"}, "brokers": {"type": "object"}}},
                "RecordPage": {"type": "object", "properties": {
                    "records": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                    "next": {"type": "integer"}}},
                **_REPLAY_SCHEMAS,
            },
        },
    }
