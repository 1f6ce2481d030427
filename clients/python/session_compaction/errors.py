"""Errors a caller can cause, mirroring src/errors.ts. Each has the same name as its
TypeScript twin, which is also the Temporal failure type and the ``type`` in the DETAIL of
the data-plane SQL functions' errors (SQLSTATE SC400..SC412)."""

from __future__ import annotations

import json
import re
from typing import Any


class SessionCompactionError(Exception):
    """Base of every error of this client."""


class InvalidInputError(SessionCompactionError):
    """Input that breaks the contract; ``field`` names the offending path, e.g. ``messages[3].role``."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"invalid {field}: {detail}")
        self.field = field
        self.detail = detail


class SessionNotFoundError(SessionCompactionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {json.dumps(session_id)} does not exist")
        self.session_id = session_id


class SessionConflictError(SessionCompactionError):
    """A session with this id exists with other parameters."""

    def __init__(self, session_id: str, detail: str) -> None:
        super().__init__(f"session {json.dumps(session_id)} already exists {detail}")
        self.session_id = session_id
        self.detail = detail


class BackgroundCompactionRejectedError(SessionCompactionError):
    """Background helpers (review agents sharing a session id) may never compact a session."""

    def __init__(self) -> None:
        super().__init__("a background request may not compact a session; only the session owner can")


class LineageClosedError(SessionCompactionError):
    """The lineage was closed: it takes no more compactions or appends."""

    def __init__(self, lineage_id: str) -> None:
        super().__init__(f"session lineage {json.dumps(lineage_id)} is closed")
        self.lineage_id = lineage_id


class LineageErasedError(SessionCompactionError):
    """The lineage this caller wrote to (the incarnation it learnt at create or first use) was
    erased; its id is gone, or names a lineage created again since. Nothing was written. Create
    the session again to write to the lineage that has the id now."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"the session lineage of {json.dumps(session_id)} that this caller wrote to was erased; "
            "create the session again to write to the lineage that has its id now"
        )
        self.session_id = session_id


class HistoryMismatchError(SessionCompactionError):
    """The head's last messages are not the ones the caller said they would be (a framework's
    "replace this exact suffix"): nothing was changed. Read the head again and decide anew."""

    def __init__(self, session_id: str, detail: str) -> None:
        super().__init__(f"the head of session {json.dumps(session_id)} changed: {detail}; nothing was changed")
        self.session_id = session_id
        self.detail = detail


class CallTimeoutError(SessionCompactionError, TimeoutError):
    """A wait passed its deadline before the answer came; the request may still complete:
    wait for the same request id again. Also a ``TimeoutError``."""

    def __init__(self, request_id: str | None, detail: str) -> None:
        again = f"; the request may still complete: wait for request {request_id} again" if request_id else ""
        super().__init__(f"{detail}{again}")
        self.request_id = request_id
        self.detail = detail


class RequestLostError(SessionCompactionError):
    """The request will never be answered by the workflow that was asked: its run ended
    without it, or it stayed unknown to the running workflow past the bound (a signal that
    never landed). Send it again with the same request id: a request id is never run twice."""

    def __init__(self, request_id: str, detail: str) -> None:
        super().__init__(f"request {request_id} was lost: {detail}; send it again with the same requestId")
        self.request_id = request_id
        self.detail = detail


class RetentionRunningError(SessionCompactionError):
    """A manual retention run was asked for while one is still running (an earlier run whose
    caller went away, or a scheduled run): it would overlap it. Nothing was started. Wait for
    the running one (``workflow_id``) to finish, or cancel it, and run again."""

    def __init__(self, workflow_id: str) -> None:
        super().__init__(
            f"retention is already running (workflow {workflow_id}); nothing was started: "
            "wait for that run to finish, or cancel it, then run again"
        )
        self.workflow_id = workflow_id


class ConnectionConfigError(SessionCompactionError):
    """A connection setting that cannot be used; ``variable`` names the environment variable."""

    def __init__(self, variable: str, detail: str) -> None:
        super().__init__(f"{variable}: {detail}")
        self.variable = variable


class PayloadKeysMissingError(SessionCompactionError):
    """The deployment encrypts what it puts in Temporal history (PAYLOAD_ENCRYPTION_KEYS,
    AES-GCM) and this client cannot read it: the Python client has no payload codec yet.
    ``key_id`` is the key the payload was encrypted with. As PayloadKeysMissingError of
    src/errors.ts; the request may have run: read its answer with a client that has the keys."""

    def __init__(self, key_id: str | None = None) -> None:
        super().__init__(
            "the deployment encrypts its Temporal payloads"
            + (f" (key {json.dumps(key_id)})" if key_id else "")
            + " and this client has no PAYLOAD_ENCRYPTION_KEYS (the Python client cannot decrypt yet): use a client with the keys the worker uses"
        )
        self.key_id = key_id


class DatabaseQueryError(SessionCompactionError):
    """Postgres failed a statement for a reason other than its reachability, as
    DatabaseQueryError of src/errors.ts: ``operation`` names the data plane's SQL function,
    ``code`` is the SQLSTATE, ``reason`` the server's primary message with every quoted value
    blanked. Never its DETAIL or CONTEXT (a refused row is quoted there whole: an appended
    batch) and never the driver's error, which holds them."""

    def __init__(self, operation: str, reason: str, code: str | None = None) -> None:
        super().__init__(f"the database failed {operation}: {reason}" + (f" (SQLSTATE {code})" if code else ""))
        self.operation = operation
        self.reason = reason
        self.code = code


#: A double-quoted fragment that names something (a column, a constraint, a type), not a value.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]{0,62}")


def _server_message(error: BaseException) -> str:
    """The server's primary message, its quoted values blanked, at most 200 characters (serverMessage of src/db/postgres-errors.ts)."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None) or str(error).split("\n")[0]
    line = primary.split("\n")[0].strip()
    line = re.sub(r'"([^"]*)"', lambda m: m[0] if _IDENTIFIER.fullmatch(m[1]) else '"…"', line)
    line = re.sub(r"'[^']*'", "'…'", line)
    return line if len(line) <= 200 else line[:200] + "…"


def database_query_error(error: BaseException, query: str) -> BaseException:
    """Any error the server raised (it has a SQLSTATE) as a DatabaseQueryError that holds none
    of the statement's values; an error without a SQLSTATE (the connection) as it is."""
    sqlstate = getattr(error, "sqlstate", None)
    if not isinstance(sqlstate, str) or not sqlstate:
        return error
    call = re.search(r"\b((?:session|sc|retention)_[a-z_]+)\s*\(", query)
    return DatabaseQueryError(call[1] if call else "a statement", _server_message(error) or "the statement failed", sqlstate)


def from_sql_error(error: BaseException) -> BaseException:
    """Maps an error of a data-plane SQL function (SQLSTATE SCnnn, DETAIL JSON) to its typed error."""
    sqlstate = getattr(error, "sqlstate", None)
    if sqlstate == "22P05":  # jsonb cannot hold U+0000 (the client's text rule refuses it first)
        return InvalidInputError("messages", "contains a NUL character or an unpaired surrogate")
    if not (isinstance(sqlstate, str) and sqlstate.startswith("SC")):
        return error
    diag = getattr(error, "diag", None)
    try:
        detail: dict[str, Any] = json.loads(getattr(diag, "message_detail", None) or "{}")
    except ValueError:
        return error
    kind = detail.get("type")
    if kind == "InvalidInputError":
        return InvalidInputError(detail["field"], detail["detail"])
    if kind == "SessionNotFoundError":
        return SessionNotFoundError(detail["sessionId"])
    if kind == "SessionConflictError":
        return SessionConflictError(detail["sessionId"], detail["detail"])
    if kind == "LineageClosedError":
        return LineageClosedError(detail["lineageId"])
    if kind == "LineageErasedError":
        return LineageErasedError(detail["sessionId"])
    if kind == "HistoryMismatchError":
        return HistoryMismatchError(detail["sessionId"], detail["detail"])
    return error


_INVALID = re.compile(r"invalid (\S+?): (.*)", re.DOTALL)


def from_failure(failure_type: str | None, message: str, lineage_id: str) -> SessionCompactionError | None:
    """Maps the ApplicationError of an Update validator back to its typed error (None: no
    caller caused it), as typedErrorOfFailure of src/client/rpc-errors.ts. An
    InvalidInputError's message is ``invalid <field>: <detail>``, so its field comes back from
    it; one without a field (from an older worker) is the request's."""
    if failure_type == "BackgroundCompactionRejectedError":
        return BackgroundCompactionRejectedError()
    if failure_type == "LineageClosedError":
        return LineageClosedError(lineage_id)
    if failure_type != "InvalidInputError":
        return None
    invalid = _INVALID.fullmatch(message)
    return InvalidInputError(invalid[1], invalid[2]) if invalid else InvalidInputError("request", message)


class TokenizerUnavailableError(SessionCompactionError):
    """The lineage's model needs a tokenizer whose ranks are missing or damaged; nothing was
    appended. The ranks come from the repository's node_modules (``npm run python:ranks``)."""

    def __init__(self, encoding: str, detail: str) -> None:
        super().__init__(f"the {encoding} tokenizer is unavailable: {detail}; run `npm run python:ranks` in the repository (after `npm ci`)")
        self.encoding = encoding
        self.detail = detail


# What a Postgres error means: classifyPostgresError of src/db/postgres-errors.ts, pinned by
# contract/vectors/postgres-errors.json.
_UNREACHABLE_CODES = frozenset(
    "ECONNREFUSED ECONNRESET ECONNABORTED EPIPE ETIMEDOUT EHOSTUNREACH EHOSTDOWN ENETUNREACH ENETDOWN ENOTFOUND EAI_AGAIN EAI_FAIL EAI_NONAME".split()
)
_UNREACHABLE_SQLSTATE = re.compile(r"08...|57P0[123]|53300|3D000|28000|28P01")
_UNREACHABLE_FOR_GOOD = frozenset("28000 28P01 3D000 ENOTFOUND EAI_FAIL EAI_NONAME ENOENT EACCES".split())
_REFUSED_FOR_GOOD = frozenset("22P05 22021 22P02 22001 22003 54000".split())


def _code_of(error: BaseException) -> str | None:
    """The SQLSTATE of a psycopg error, or the name of an OSError's errno (EAI_* for socket.gaierror)."""
    import errno
    import socket

    sqlstate = getattr(error, "sqlstate", None)
    if isinstance(sqlstate, str) and sqlstate:
        return sqlstate
    if isinstance(error, socket.gaierror):
        names = {getattr(socket, n): n for n in dir(socket) if n.startswith("EAI_") and isinstance(getattr(socket, n), int)}
        return names.get(error.errno)  # type: ignore[arg-type]
    if isinstance(error, OSError) and error.errno is not None:
        return errno.errorcode.get(error.errno)
    return None


def classify_postgres_error(error: BaseException) -> dict[str, Any]:
    """``kind`` (unreachable, data-plane, query, other), ``code``, ``transient`` (a read may be
    retried) and ``refused_for_good`` (the same write is refused on every attempt) of ``error``
    or its ``__cause__`` chain. A psycopg OperationalError without a SQLSTATE is a connection
    that failed or was lost."""
    import psycopg

    chain: list[BaseException] = []
    e: BaseException | None = error
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__
    for layer in chain:
        code = _code_of(layer)
        no_sqlstate_connection = code is None and isinstance(layer, psycopg.OperationalError)
        if no_sqlstate_connection or (code is not None and (code in _UNREACHABLE_CODES or _UNREACHABLE_SQLSTATE.fullmatch(code))):
            return {"kind": "unreachable", "code": code, "transient": code not in _UNREACHABLE_FOR_GOOD, "refused_for_good": False}
    for layer in chain:
        code = _code_of(layer)
        if code is not None and re.fullmatch(r"[0-9A-DF-Z][0-9A-Z]{4}", code):
            kind = "data-plane" if re.fullmatch(r"SC\d{3}", code) else "query"
            return {"kind": kind, "code": code, "transient": False, "refused_for_good": code in _REFUSED_FOR_GOOD}
    return {"kind": "other", "code": None, "transient": False, "refused_for_good": False}
