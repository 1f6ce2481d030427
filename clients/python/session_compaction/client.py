"""SessionsClient for Python: the same operations as the TypeScript client.

Appends and reads go to Postgres through the data-plane SQL functions (``session_create``,
``session_append``, ``session_transcript``, ``session_lineage``: one implementation for every
language). Compaction requests go to the lineage's workflow as the ``compact`` Update, or as
the ``requestCompaction`` signal plus the ``requestResult`` query (docs/wire-contract.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RetryConfig, RPCError, RPCStatusCode

from .config import Config, load_config, temporal_connect_options
from .tokens import TokenizerName, token_counts_with, tokenizer_for
from .errors import (
    BackgroundCompactionRejectedError,
    InvalidInputError,
    LineageClosedError,
    SessionCompactionError,
    from_failure,
    from_sql_error,
)

WORKFLOW_TYPE = "sessionLineageWorkflow"
WORKFLOW_ID_PREFIX = "session-lineage/"
COMPACTION_MODES = ("rotate", "in_place")

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_DERIVED_SUFFIX = re.compile(r"--g\d+$")
_REQUEST_FIELDS = {"requestId", "sessionId", "focusTopic", "force", "background", "trigger"}

SessionLineage = SearchAttributeKey.for_keyword("SessionLineage")
SessionHead = SearchAttributeKey.for_keyword("SessionHead")
SessionSource = SearchAttributeKey.for_keyword("SessionSource")
CompactionCount = SearchAttributeKey.for_int("CompactionCount")

CompactionMode = Literal["rotate", "in_place"]


def lineage_workflow_id(lineage_id: str) -> str:
    return f"{WORKFLOW_ID_PREFIX}{lineage_id}"


def check_session_id(value: object, field: str = "sessionId") -> str:
    """Mirrors checkSessionId of src/workflows/contract.ts."""
    if not isinstance(value, str) or value == "":
        raise InvalidInputError(field, "must be a non-empty string")
    if len(_DERIVED_SUFFIX.sub("", value)) > 128:
        raise InvalidInputError(field, "must be at most 128 characters")
    if not _SESSION_ID.match(value):
        raise InvalidInputError(field, "may contain only letters, digits and . _ : - and must start with a letter or digit")
    return value


def check_compact_request(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Mirrors checkCompactRequest of src/workflows/contract.ts (the Update validator runs the
    same rules; the contract vectors keep the two in step). Needed before a signal, which
    the workflow cannot refuse, only drop."""
    for key in raw:
        if key not in _REQUEST_FIELDS:
            raise InvalidInputError(key, "is not a known field")
    session_id = check_session_id(raw.get("sessionId"))
    request_id = raw.get("requestId")
    if request_id is not None and (not isinstance(request_id, str) or not 1 <= len(request_id) <= 200):
        raise InvalidInputError("requestId", "must be a string of 1 to 200 characters")
    focus = raw.get("focusTopic")
    if focus is not None and (not isinstance(focus, str) or len(focus) > 1000):
        raise InvalidInputError("focusTopic", "must be a string of at most 1000 characters")
    for flag in ("force", "background"):
        if raw.get(flag) is not None and not isinstance(raw.get(flag), bool):
            raise InvalidInputError(flag, "must be a boolean")
    trigger = raw.get("trigger")
    if trigger is not None and trigger not in ("update", "signal", "threshold"):
        raise InvalidInputError("trigger", "must be one of update, signal, threshold")
    if raw.get("background") is True:
        raise BackgroundCompactionRejectedError()
    return {k: v for k, v in raw.items() if v is not None and k != "background"} | {"sessionId": session_id}


def _is_update_limit_error(error: BaseException) -> bool:
    """The server's refusal of an Update beyond the per-workflow in-flight limit."""
    e: BaseException | None = error
    while e is not None:
        if isinstance(e, RPCError) and e.status == RPCStatusCode.RESOURCE_EXHAUSTED:
            return True
        if re.search(r"RESOURCE_EXHAUSTED|in-flight|inflight", str(e), re.IGNORECASE):
            return True
        e = e.__cause__
    return False


class SessionsClient:
    """Create with :func:`connect`. Every method is a coroutine."""

    def __init__(
        self,
        config: Config,
        temporal: Client,
        db: AsyncConnectionPool,
        settings: Mapping[str, Any],
        update_client: Client | None = None,
    ) -> None:
        self.config = config
        self.temporal = temporal
        # Updates go through a connection that does not retry: the SDK's own retry of the
        # in-flight limit's RESOURCE_EXHAUSTED would resend the Update after the compaction it
        # should have joined (answering `stale`). compact() falls back to the signal at once
        # instead, and resends itself while the server is unreachable.
        self._update_client = update_client or temporal
        self._db = db
        self._settings = dict(settings)
        #: How often compact() met the in-flight Update limit and went by signal instead.
        self.update_limit_fallbacks = 0
        self._tokenizers: dict[str, TokenizerName] = {}

    # ---- data plane (SQL functions) -------------------------------------------------------

    async def _call(self, query: str, params: Sequence[Any]) -> Any:
        try:
            async with self._db.connection() as conn:
                cursor = await conn.execute(query, params)
                row = await cursor.fetchone()
        except psycopg.Error as error:
            raise from_sql_error(error) from error
        assert row is not None
        return row[0]

    async def create_session(
        self,
        session_id: str,
        *,
        source: str | None = None,
        mode: CompactionMode = "rotate",
        compact_at_tokens: int | None = None,
        model: str | None = None,
        context_window: int | None = None,
    ) -> dict[str, Any]:
        """Creates a session (the root of a new lineage) and starts its workflow. Idempotent
        for the same parameters. ``compact_at_tokens`` is the auto-compaction threshold in
        tokens (the TypeScript client also takes a percentage of a known model's window)."""
        lineage = await self._call(
            "select session_create(%s, %s, %s, %s::integer, %s::text, %s::integer)",
            (session_id, source, mode, compact_at_tokens, model, context_window),
        )
        await self.temporal.start_workflow(
            WORKFLOW_TYPE,
            self._start_input(lineage),
            **self._start_options(lineage),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        result = {"sessionId": session_id, "lineageId": lineage["lineageId"], "mode": lineage["mode"]}
        if lineage.get("source"):
            result["source"] = lineage["source"]
        for key in ("compactAtTokens", "model", "contextWindow"):
            if lineage.get(key):
                result[key] = lineage[key]
        return result

    async def append(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        append_key: str | None = None,
        token_counts: Sequence[int] | None = None,
    ) -> dict[str, Any]:
        """Appends a batch (all or nothing) to the lineage's head in one round trip; answers
        with the head it landed in and its ranges. With ``append_key`` a resend after a lost
        answer is stored once (``replayed: True``). ``token_counts`` (one per message) are
        stored as given; without them the client counts with the tokenizer of the lineage's
        ``model`` (the same counts as the TypeScript client: o200k_base or cl100k_base for
        OpenAI models), and for other models the SQL function stores its estimate. An append that
        leaves the head at or above the lineage's threshold may request a compaction (the
        policy runs in ``session_append``); this sends it as the signal and answers its id
        as ``compactionRequestId``. If the signal fails, the next append sends it again."""
        check_session_id(session_id)
        self._check_limits(messages)
        counts = list(token_counts) if token_counts is not None else token_counts_with(await self._tokenizer(session_id), messages)
        appended: dict[str, Any] = await self._call(
            "select session_append(%s, %s, %s, %s::integer[], %s::bigint)",
            (session_id, Jsonb(list(messages)), append_key, counts, self.config.auto_compaction_resend_ms),
        )
        request_id = appended.pop("autoCompactionRequestId", None)
        if not request_id:
            return appended
        try:
            await self.request_compaction(appended["sessionId"], request_id=request_id, trigger="threshold")
            return appended | {"compactionRequestId": request_id}
        except Exception as error:  # the messages are stored: never make the caller resend them
            with contextlib.suppress(Exception):
                await self._call("select session_release_auto_compaction(%s, %s)", (appended["lineageId"], request_id))
            return appended | {"compactionRequestError": f"could not request the compaction: {error}"}

    async def _tokenizer(self, session_id: str) -> TokenizerName:
        """The lineage's tokenizer; its model never changes, so it is remembered per session id."""
        known = self._tokenizers.get(session_id)
        if known is not None:
            return known
        lineage = await self.lineage(session_id)
        tokenizer = tokenizer_for(lineage.get("model"))
        if len(self._tokenizers) >= 10_000:
            self._tokenizers.clear()
        self._tokenizers[session_id] = tokenizer
        return tokenizer

    def _check_limits(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Size limits are each client's configuration (MAX_APPEND_MESSAGES, ...); the SQL
        function checks the structure."""
        if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
            raise InvalidInputError("messages", "must be an array of chat messages")
        if len(messages) > self.config.max_append_messages:
            raise InvalidInputError("messages", f"holds {len(messages)} messages; at most {self.config.max_append_messages} per append")
        total = 0
        for i, m in enumerate(messages):
            content = m.get("content") if isinstance(m, Mapping) else None
            chars = len(content) if isinstance(content, str) else len(json.dumps(content or ""))
            for call in (m.get("tool_calls") or []) if isinstance(m, Mapping) else []:
                chars += len(str(call.get("function", {}).get("arguments", ""))) if isinstance(call, Mapping) else 0
            if chars > self.config.max_message_chars:
                raise InvalidInputError(f"messages[{i}]", f"is {chars} characters; at most {self.config.max_message_chars}")
            total += chars
        if total > self.config.max_append_chars:
            raise InvalidInputError("messages", f"total {total} characters; at most {self.config.max_append_chars} per append")

    async def transcript(self, session_id: str, *, include_archived: bool = False) -> dict[str, Any]:
        """``{sessionId, messages}`` of the lineage's head reached from any of its session ids."""
        check_session_id(session_id)
        return await self._call("select session_transcript(%s, %s)", (session_id, include_archived))

    async def lineage(self, session_id: str) -> dict[str, Any]:
        """The lineage's state and its sessions, root first."""
        check_session_id(session_id)
        return await self._call("select session_lineage(%s)", (session_id,))

    # ---- compaction (Temporal) ------------------------------------------------------------

    async def recorded_answer(self, lineage_id: str, request_id: str) -> dict[str, Any] | None:
        """The answer a decided job gave ``request_id`` (SQL ``session_recorded_answer``), or None.
        Answers outlive workflow runs: a request id answered once is never run again."""
        return await self._call("select session_recorded_answer(%s, %s)", (lineage_id, request_id))

    async def compact(
        self,
        session_id: str,
        *,
        focus_topic: str | None = None,
        force: bool | None = None,
        request_id: str | None = None,
        background: bool | None = None,
        unreachable_timeout: float = 120.0,
    ) -> dict[str, Any]:
        """Compacts the session if it is still its lineage's head, by the ``compact`` Update;
        at the server's in-flight Update limit the same request goes as a signal and its
        answer is read by query. Answers with the result and the head's transcript."""
        raw = {"sessionId": session_id, "requestId": request_id or str(uuid.uuid4()), "focusTopic": focus_topic, "force": force, "background": background}
        request = check_compact_request(raw)
        lineage = await self.lineage(request["sessionId"])
        if lineage["closed"]:
            raise LineageClosedError(lineage["lineageId"])
        # A request id answered already (perhaps by a run that is gone) is answered from Postgres.
        result = await self.recorded_answer(lineage["lineageId"], request["requestId"]) if request_id else None
        deadline = time.monotonic() + unreachable_timeout
        delay = 0.2
        while result is None:
            try:
                result = await self._compact_by_update(lineage, request)
            except RPCError as error:
                if error.status not in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED) or time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        transcript = await self.transcript(result["sessionId"])
        return result | {"messages": transcript["messages"]}

    async def _compact_by_update(self, lineage: Mapping[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        operation = WithStartWorkflowOperation(
            WORKFLOW_TYPE,
            self._start_input(lineage),
            **self._start_options(lineage),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        try:
            try:
                return await self._update_client.execute_update_with_start_workflow("compact", request, start_workflow_operation=operation)
            except Exception:
                # The operation's start handle carries the same error; read it so asyncio
                # does not log it as never retrieved.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(operation.workflow_handle(), 0.1)
                raise
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                typed = from_failure(cause.type, cause.message, lineage["lineageId"])
                if typed is not None:
                    raise typed from error
            raise
        except Exception as error:
            if not _is_update_limit_error(error):
                raise
            self.update_limit_fallbacks += 1
            handle = self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"]))
            await handle.signal("requestCompaction", request | {"trigger": "update"})
            return await self._await_answer(lineage["lineageId"], request["requestId"], timeout=None)

    async def request_compaction(
        self,
        session_id: str,
        *,
        focus_topic: str | None = None,
        force: bool | None = None,
        request_id: str | None = None,
        trigger: Literal["signal", "threshold"] | None = None,
    ) -> str:
        """Fire-and-forget compaction request (signal-with-start); returns its request id."""
        request_id = request_id or str(uuid.uuid4())
        request = check_compact_request(
            {"sessionId": session_id, "requestId": request_id, "focusTopic": focus_topic, "force": force, "trigger": trigger}
        )
        lineage = await self.lineage(request["sessionId"])
        if lineage["closed"]:
            raise LineageClosedError(lineage["lineageId"])
        # Answered already (perhaps by a run that is gone): never sent, never run again.
        if await self.recorded_answer(lineage["lineageId"], request_id) is not None:
            return request_id
        await self.temporal.start_workflow(
            WORKFLOW_TYPE,
            self._start_input(lineage),
            **self._start_options(lineage),
            start_signal="requestCompaction",
            start_signal_args=[request],
        )
        return request_id

    async def wait_for_result(self, session_id: str, request_id: str, *, timeout: float | None = 600.0) -> dict[str, Any]:
        """Waits for the answer to a request sent with request_compaction (or by a threshold)."""
        lineage = await self.lineage(session_id)
        return await self._await_answer(lineage["lineageId"], request_id, timeout=timeout)

    async def _await_answer(self, lineage_id: str, request_id: str, *, timeout: float | None) -> dict[str, Any]:
        """Polls the requestResult query until answered, the run ends, or the deadline."""
        handle = self.temporal.get_workflow_handle(lineage_workflow_id(lineage_id))
        deadline = None if timeout is None else time.monotonic() + timeout
        delay, polls = 0.05, 0
        while True:
            polls += 1
            answer = await handle.query("requestResult", request_id)
            if answer:
                return answer
            if polls % 20 == 0:
                # Answered by a run that is gone (the current one may be a newer run): Postgres has it.
                recorded = await self.recorded_answer(lineage_id, request_id)
                if recorded is not None:
                    return recorded
                description = await handle.describe()
                if description.status is not None and description.status.name != "RUNNING":
                    raise SessionCompactionError(
                        f"the lineage workflow ended ({description.status.name}) before answering request {request_id}; send it again with the same request id"
                    )
            if deadline is not None and time.monotonic() + delay > deadline:
                raise TimeoutError(f"no answer to request {request_id} within {timeout} s")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def state(self, session_id: str) -> dict[str, Any]:
        """The workflow's ``state`` query."""
        lineage = await self.lineage(session_id)
        return await self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"])).query("state")

    async def close_session(self, session_id: str, *, timeout: float = 600.0) -> None:
        """Closes the lineage: the workflow finishes its queue, marks it closed and completes."""
        lineage = await self.lineage(session_id)
        if lineage["closed"]:
            return
        handle = await self.temporal.start_workflow(
            WORKFLOW_TYPE, self._start_input(lineage), **self._start_options(lineage), start_signal="close"
        )
        await asyncio.wait_for(handle.result(), timeout)

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> SessionsClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # ---- workflow start options -----------------------------------------------------------

    def _start_input(self, lineage: Mapping[str, Any]) -> dict[str, Any]:
        start = {
            "lineageId": lineage["lineageId"],
            "headSessionId": lineage["headSessionId"],
            "generation": lineage["generation"],
            "mode": lineage["mode"],
            "settings": self._settings,
        }
        if lineage.get("source"):
            start["source"] = lineage["source"]
        return start

    def _start_options(self, lineage: Mapping[str, Any]) -> dict[str, Any]:
        pairs = [
            SearchAttributePair(SessionLineage, lineage["lineageId"]),
            SearchAttributePair(SessionHead, lineage["headSessionId"]),
            SearchAttributePair(CompactionCount, lineage["generation"]),
        ]
        if lineage.get("source"):
            pairs.append(SearchAttributePair(SessionSource, lineage["source"]))
        source = f" ({lineage['source']})" if lineage.get("source") else ""
        return {
            "id": lineage_workflow_id(lineage["lineageId"]),
            "task_queue": self.config.task_queue,
            "search_attributes": TypedSearchAttributes(pairs),
            "static_summary": f"Session lineage {lineage['lineageId']}{source}, {lineage['mode']}",
            "static_details": f"Compactions of session lineage `{lineage['lineageId']}` run here one at a time. Transcripts live in Postgres; see the state query for head and queue.",
        }


async def connect(
    env: Mapping[str, str] | None = None,
    *,
    config: Config | None = None,
    settings: Mapping[str, Any] | None = None,
) -> SessionsClient:
    """Connects to Temporal and Postgres with the TypeScript client's environment variables
    (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TEMPORAL_TLS*, TEMPORAL_API_KEY,
    DATABASE_URL, COMPACTION_*). ``settings`` override per-lineage workflow settings."""
    config = config or load_config(env)
    options = temporal_connect_options(config)
    temporal = await Client.connect(config.temporal_address, **options)  # type: ignore[arg-type]
    # At most one immediate resend (max_retries=0 does not turn retries off: it is read as the
    # default), so the in-flight limit's refusal reaches compact() within milliseconds.
    no_retry = RetryConfig(max_retries=1, initial_interval_millis=1, max_interval_millis=1, max_elapsed_time_millis=1)
    update_client = await Client.connect(config.temporal_address, **options, retry_config=no_retry)  # type: ignore[arg-type]
    # A pool, so concurrent calls (25 compactions at once read their lineage first) do not
    # queue behind one connection. Each function call is its own transaction (autocommit).
    db = AsyncConnectionPool(config.database_url, min_size=1, max_size=config.database_pool_size, kwargs={"autocommit": True}, open=False)
    await db.open(wait=True, timeout=30)
    lineage_settings = {
        "leaseTtlMs": config.lease_ttl_ms,
        "attemptTimeoutMs": config.attempt_timeout_ms,
        "maxAttempts": config.max_attempts,
        **(settings or {}),
    }
    return SessionsClient(config, temporal, db, lineage_settings, update_client)
