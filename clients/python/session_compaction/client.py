"""SessionsClient for Python: what an agent service calls, the same operations as the
TypeScript client's SessionsClient (create_session, append, replace_tail, compact,
request_compaction, wait_for_result, transcript, close_session, delete_lineage); what an
operator reads and runs is OperatorClient (operator_client.py, ``sessions.operator``).

Appends and reads go to Postgres through the data-plane SQL functions (``session_create``,
``session_append``, ``session_transcript``, ``session_lineage``: one implementation for every
language; data_plane.py). Compaction requests go to the lineage's workflow as the ``compact``
Update, or as the ``requestCompaction`` signal plus the ``requestResult`` query
(docs/wire-contract.md).

Where each part's TypeScript twin is: the table at the end of docs/wire-contract.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RetryConfig

from .answer_poller import await_answer
from .checks import COMPACTION_MODES, CompactionMode, check_compact_request, check_name, check_session_id
from .compaction_events import DEFAULT_EVENT_LIMIT, check_read_options, follow_compaction_events
from .config import Config, load_config, temporal_connect_options
from .data_plane import DataPlane, open_pool
from .deadline import CallDeadline, reraise_cancellation
from .dialects import DIALECTS, DialectName, message_texts
from .dialects import for_provider as for_provider_view
from .errors import CallTimeoutError, InvalidInputError, LineageClosedError, LineageErasedError, RequestLostError, from_failure
from .lineage_workflow import WORKFLOW_ID_PREFIX, WORKFLOW_TYPE, delete_workflow_runs, lineage_workflow_id, run_terminated
from .numbers import MAX_MESSAGE_TOKENS, MAX_TOKENS, positive_seconds
from .operator_client import OperatorClient
from .payloads import DATA_CONVERTER
from .retention import RETENTION_POLICY_FIELDS, RETENTION_SCHEDULE_ID, RETENTION_WORKFLOW_TYPE, check_retention_policy, manual_retention_workflow_id
from .rpc_errors import is_run_ended_error, is_transient_connection_error, is_update_limit_error
from .start_options import JOIN_RUNNING_WORKFLOW, lineage_start_input, lineage_start_options
from .text import check_json, check_messages, check_text
from .thresholds import check_count
from .tokens import TokenizerName, token_counts_with, tokenizer_for

#: Importable from here as before the split (session_compaction.client).
__all__ = [
    "COMPACTION_MODES",
    "JOIN_RUNNING_WORKFLOW",
    "MAX_MESSAGE_TOKENS",
    "MAX_TOKENS",
    "RETENTION_POLICY_FIELDS",
    "RETENTION_SCHEDULE_ID",
    "RETENTION_WORKFLOW_TYPE",
    "WORKFLOW_ID_PREFIX",
    "WORKFLOW_TYPE",
    "CompactionMode",
    "OperatorClient",
    "SessionsClient",
    "check_compact_request",
    "check_retention_policy",
    "check_session_id",
    "connect",
    "lineage_start_input",
    "lineage_start_options",
    "lineage_workflow_id",
    "manual_retention_workflow_id",
]

_DERIVED_ID_SUFFIX = re.compile(r"--g\d+$")


class _RunEnded(Exception):
    """Raised by _compact_by_update for compact(): the run ended before it answered."""

    def __init__(self, terminated: bool) -> None:
        super().__init__("the lineage workflow run ended before it answered")
        self.terminated = terminated


class SessionsClient:
    """Create with :func:`connect`. Every method is a coroutine."""

    def __init__(
        self,
        config: Config,
        temporal: Client,
        db: AsyncConnectionPool,
        settings: Mapping[str, Any],
        update_client: Client | None = None,
        *,
        request_lost_after: float = 30.0,
    ) -> None:
        self.config = config
        self.temporal = temporal
        # Updates go through a connection that does not retry: the SDK's own retry of the
        # in-flight limit's RESOURCE_EXHAUSTED would resend the Update after the compaction it
        # should have joined (answering `stale`). compact() falls back to the signal at once
        # instead, and resends itself while the server is unreachable.
        self._update_client = update_client or temporal
        self._data = DataPlane(config, db)
        #: What an operator reads and runs (state, ledger, retention), on the same connections.
        self.operator = OperatorClient(config, temporal, self._data)
        self._settings = dict(settings)
        #: How often compact() met the in-flight Update limit and went by signal instead.
        self.update_limit_fallbacks = 0
        self._formats: dict[str, tuple[TokenizerName, DialectName]] = {}
        #: The incarnation of each lineage this client writes to, by lineage id (see append).
        self._held: dict[str, str] = {}
        #: Seconds a request may stay unknown to a running lineage workflow before
        #: wait_for_result declares it lost (RequestLostError), as the TypeScript client's
        #: ``requestLostAfterMs``.
        self.request_lost_after = request_lost_after

    # ---- data plane (SQL functions) -------------------------------------------------------

    async def _call(self, query: str, params: Sequence[Any]) -> Any:
        return await self._data.call(query, params)

    async def create_session(
        self,
        session_id: str,
        *,
        source: str | None = None,
        mode: CompactionMode = "rotate",
        compact_at_tokens: int | None = None,
        model: str | None = None,
        context_window: int | None = None,
        dialect: DialectName = "openai-chat",
        rungs: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Creates a session (the root of a new lineage) and starts its workflow. Idempotent
        for the same parameters; a closed lineage is a LineageClosedError. ``compact_at_tokens``
        is the auto-compaction threshold in tokens (the TypeScript client also takes a
        percentage of a known model's window). ``dialect`` is the provider API format of the
        lineage's messages (``openai-chat``, ``openai-responses``, ``openai-agents``, ``anthropic``, ``gemini``):
        they are checked, stored and returned in it. ``rungs`` are the rungs the lineage's
        compactions may use (``masking``, ``summary``, ``trim``; the others pass as not enabled);
        None: the worker's default (COMPACTION_RUNGS). An unknown name, an empty list or the trim
        alone is an InvalidInputError and nothing is written."""
        check_session_id(session_id)
        if mode not in COMPACTION_MODES:
            raise InvalidInputError("mode", f"must be one of {', '.join(COMPACTION_MODES)}")
        if dialect not in DIALECTS:
            raise InvalidInputError("dialect", f"must be one of {', '.join(DIALECTS)}")
        check_name(source, "source", 100)
        check_name(model, "model", 200)
        check_count(compact_at_tokens, "compactAtTokens")
        check_count(context_window, "contextWindow")
        if rungs is not None and (isinstance(rungs, str) or not all(isinstance(r, str) for r in rungs)):
            raise InvalidInputError("rungs", "must be a list of rung names")
        lineage = await self._call(
            "select session_create(%s, %s, %s, %s::integer, %s::text, %s::integer, %s::text, %s::text[])",
            (session_id, source, mode, compact_at_tokens, model, context_window, dialect, None if rungs is None else list(rungs)),
        )
        # From now on this client writes to this incarnation of the lineage (see append).
        self._held[lineage["lineageId"]] = lineage["incarnation"]
        await self.temporal.start_workflow(
            WORKFLOW_TYPE,
            self._start_input(lineage),
            **self._start_options(lineage),
            id_conflict_policy=JOIN_RUNNING_WORKFLOW,
        )
        result = {"sessionId": session_id, "lineageId": lineage["lineageId"], "mode": lineage["mode"], "dialect": lineage["dialect"]}
        if lineage.get("source"):
            result["source"] = lineage["source"]
        for key in ("compactAtTokens", "model", "contextWindow", "rungs"):
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
        as ``compactionRequestId``. If the signal fails, the next append sends it again.

        Messages are in the lineage's dialect and stored exactly as given, every field kept
        (``session_append`` checks their structure in that dialect). Every string and key
        must hold no NUL and be well-formed Unicode, and every value must be JSON (no NaN or
        Infinity): anything else is an InvalidInputError naming the field, and nothing is sent.

        The client holds the incarnation of each lineage it writes to, learnt at create_session
        or at its first use of the lineage: once that lineage is erased (by any client), every
        append of this client to it, resends included, is a LineageErasedError and writes
        nothing, even after the id was created again; create_session (or delete_lineage)
        through this client moves it to the lineage the id has now."""
        check_session_id(session_id)
        check_name(append_key, "appendKey", 200)
        tokenizer, dialect = await self._format(session_id)
        incarnation = self._held.get(_DERIVED_ID_SUFFIX.sub("", session_id))
        check_messages(messages)
        self._check_limits(messages, dialect)
        if token_counts is not None:
            counts: list[int] | None = list(token_counts) if isinstance(token_counts, (list, tuple)) else None
            if (
                counts is None
                or len(counts) != len(messages)
                or any(not isinstance(c, int) or isinstance(c, bool) or not 0 <= c <= MAX_MESSAGE_TOKENS for c in counts)
            ):
                raise InvalidInputError(
                    "tokenCounts", f"must hold one count per message ({len(messages)}), each a whole number from 0 to {MAX_MESSAGE_TOKENS}"
                )
        else:
            counts = token_counts_with(tokenizer, messages, dialect)
        appended: dict[str, Any] = await self._call(
            "select session_append(%s, %s, %s, %s::bigint[], %s::bigint, %s::text)",
            (session_id, Jsonb(list(messages)), append_key, counts, self.config.auto_compaction_resend_ms, incarnation),
        )
        return await self._request_auto_compaction(appended)

    async def appended_under(self, session_id: str, append_key: str) -> list[Any] | None:
        """The batch an ``append`` stored under ``append_key`` in the session's lineage, exactly
        as appended (compactions since do not change it), or None when the key stored nothing:
        what a retried step reads to learn what its first attempt appended before it failed
        (the TypeScript client's ``appendedUnder``)."""
        check_session_id(session_id)
        check_name(append_key, "appendKey", 200)
        if append_key is None:
            raise InvalidInputError("appendKey", "is required")
        return await self._data.messages_under_append_key(session_id, append_key)

    async def replace_tail(
        self,
        session_id: str,
        count: int | Literal["all"] | None = 1,
        expected: Sequence[Mapping[str, Any]] | None = None,
        replacement: Sequence[Mapping[str, Any]] = (),
        key: str | None = None,
    ) -> dict[str, Any]:
        """Takes back the last messages of the lineage's head and appends ``replacement`` in
        their place, in one transaction (SQL ``session_replace_tail``): what the agent
        frameworks' sessions call pop, clear and "replace this exact suffix". ``count`` of them
        (default 1; ``None`` or ``"all"`` for every live message of the head), or exactly
        ``expected`` (``count`` is then its length): the head must end with these messages,
        JSON-equal, else HistoryMismatchError and nothing changes. With ``key`` the operation
        is stored once per lineage, in the namespace of append keys: sent again, it answers
        the first call (``replayed: True``); a key used for anything else is refused.

        Answers ``{sessionId, lineageId, removed, appended, replayed}``: ``removed`` the bodies
        taken back, oldest first; ``appended`` the append's answer (as ``append``, with
        ``compactionRequestId`` when it requested a compaction) or None. Messages taken back
        stay in Postgres, archived with ``retracted_by`` set (the audit counts them as taken
        back, not lost); a compaction whose summary read one of them does not commit, so none
        comes back. The replacement is checked, counted and limited exactly as ``append``."""
        check_session_id(session_id)
        if count == "all":
            count = None
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_TOKENS):
            raise InvalidInputError("count", "must be a whole number, 0 or more, or 'all'")
        if key is not None:
            if not isinstance(key, str) or not 1 <= len(key) <= 200:
                raise InvalidInputError("key", "must be a string of 1 to 200 characters")
            check_text(key, "key")
        expected_list: list[Any] | None = None
        if expected is not None:
            if not isinstance(expected, (list, tuple)) or not all(isinstance(m, Mapping) for m in expected):
                raise InvalidInputError("expected", "must be an array of messages")
            expected_list = list(check_json(list(expected), "expected"))
            if count not in (None, 1, len(expected_list)):
                raise InvalidInputError("count", "must be the number of expected messages")
            count = len(expected_list)
        if not isinstance(replacement, (list, tuple)):
            raise InvalidInputError("replacement", "must be an array of messages")
        tokenizer, dialect = await self._format(session_id)
        counts: list[int] | None = None
        if replacement:
            check_messages(replacement)
            self._check_limits(replacement, dialect)
            counts = token_counts_with(tokenizer, replacement, dialect)
        result: dict[str, Any] = await self._call(
            "select session_replace_tail(%s, %s::integer, %s::jsonb, %s::jsonb, %s::text, %s::bigint[], %s::text)",
            (
                session_id,
                count,
                None if expected_list is None else Jsonb(expected_list),
                Jsonb(list(replacement)),
                key,
                counts,
                # The incarnation this client holds (see append): an erased lineage is LineageErasedError.
                self._held.get(_DERIVED_ID_SUFFIX.sub("", session_id)),
            ),
        )
        if result.get("appended") is not None:
            if result.get("replayed"):  # a replayed operation already sent its request (or released it)
                result["appended"].pop("autoCompactionRequestId", None)
            else:
                result["appended"] = await self._request_auto_compaction(result["appended"])
        return result

    async def _request_auto_compaction(self, appended: dict[str, Any]) -> dict[str, Any]:
        """Sends the automatic compaction request an append's answer carries, if any, as the
        ``requestCompaction`` signal; the messages are stored either way."""
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

    def _check_held(self, lineage: Mapping[str, Any], session_id: str) -> None:
        """A compaction asked by a client that wrote to an erased incarnation would compact the
        new lineage: LineageErasedError (see append)."""
        held = self._held.get(lineage["lineageId"])
        if held is not None and held != lineage.get("incarnation"):
            raise LineageErasedError(session_id)

    async def _format(self, session_id: str) -> tuple[TokenizerName, DialectName]:
        """The lineage's tokenizer and dialect; its model and dialect never change, so they are
        remembered per session id."""
        known = self._formats.get(session_id)
        if known is not None:
            return known
        lineage = await self.lineage(session_id)
        self._held.setdefault(lineage["lineageId"], lineage["incarnation"])
        found: tuple[TokenizerName, DialectName] = (tokenizer_for(lineage.get("model")), lineage.get("dialect") or "openai-chat")
        if len(self._formats) >= 10_000:
            self._formats.clear()
        self._formats[session_id] = found
        return found

    def _check_limits(self, messages: Sequence[Mapping[str, Any]], dialect: str) -> None:
        """Size limits are each client's configuration (MAX_APPEND_MESSAGES, ...), measured as
        the TypeScript client does: code points of every text the dialect says a provider
        counts. The SQL function checks the structure."""
        if len(messages) > self.config.max_append_messages:
            raise InvalidInputError("messages", f"holds {len(messages)} messages; at most {self.config.max_append_messages} per append")
        total = 0
        for i, m in enumerate(messages):
            chars = sum(len(text) for text in message_texts(m, dialect))
            if chars > self.config.max_message_chars:
                raise InvalidInputError(f"messages[{i}]", f"is {chars} characters; at most {self.config.max_message_chars}")
            total += chars
        if total > self.config.max_append_chars:
            raise InvalidInputError("messages", f"total {total} characters; at most {self.config.max_append_chars} per append")

    async def transcript(self, session_id: str, *, include_archived: bool = False, for_provider: bool = False) -> dict[str, Any]:
        """The lineage's head reached from any of its session ids: ``{sessionId, dialect,
        messages, seqs}``, ``messages`` exactly as appended (JSON-equal: every field kept) and
        ``seqs[i]`` the position of ``messages[i]`` in the head. With ``include_archived``,
        the rows an in-place compaction replaced as ``archived: [{seq, archivedAt, message}]``.
        With ``for_provider`` the messages are the provider-ready view the agent sends on its
        next call (openai-chat: no ``annotations``, no null ``function_call``, ``audio`` as
        ``{id}``, no ``index`` in tool calls; openai-responses: the ids of a model turn whose
        reasoning was summarised away dropped; anthropic and gemini: as stored)."""
        check_session_id(session_id)
        transcript: dict[str, Any] = await self._call("select session_transcript(%s, %s)", (session_id, include_archived))
        if for_provider:
            transcript["messages"] = for_provider_view(transcript["dialect"], transcript["messages"])
        return transcript

    async def lineage(self, session_id: str) -> dict[str, Any]:
        """The lineage's state and its sessions, root first."""
        return await self._data.lineage(session_id)

    async def read_compaction_events(self, session_id: str, *, after: str | None = None, limit: int = DEFAULT_EVENT_LIMIT) -> dict[str, Any]:
        """One read of the compaction events of the session's lineage (any session id of it) after
        the cursor ``after``, at most ``limit`` (1 to 1000): ``{lineageId, events, cursor, more}``
        (SQL ``session_compaction_events``; see compaction_events). Answers at once, with no
        events when none is new."""
        check_session_id(session_id)
        check_read_options(after, limit)
        return await self._call("select session_compaction_events(%s, %s::text, %s::integer)", (session_id, after, limit))

    def compaction_events(
        self,
        session_id: str,
        *,
        after: str | None = None,
        limit: int = DEFAULT_EVENT_LIMIT,
        poll_interval: float | None = None,
        idle_timeout: float | None = None,
        timeout: float | None = None,
        stop: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """The compaction events of the session's lineage as they happen, each an Agent Client
        Protocol ``compaction_update`` (``compactionId``, ``status`` in_progress / completed /
        failed / cancelled, ``summary``, ``error``, ``_meta``) plus its ``cursor``:
        ``async for event in client.compaction_events(session_id): ...``. From the first event
        of the lineage, or after ``after`` (a cursor an earlier event gave, in this process or
        another: exactly the events after it). Bounded: ``limit`` per read, a read every
        ``poll_interval`` seconds (default 0.25) while nothing is new; it ends without an error
        after ``idle_timeout`` seconds with nothing new, at ``timeout`` (default
        COMPACTION_CALL_TIMEOUT_MS) or when ``stop`` is set. The TypeScript client's
        ``compactionEvents``."""
        check_session_id(session_id)
        overall = self.config.call_timeout_ms / 1000 if timeout is None else positive_seconds(timeout, "timeout")
        return follow_compaction_events(
            lambda cursor, most: self.read_compaction_events(session_id, after=cursor, limit=most),
            after=after,
            limit=limit,
            poll_interval=poll_interval,
            idle_timeout=idle_timeout,
            timeout=overall,
            stop=stop,
        )

    async def ledger(self, session_id: str) -> dict[str, Any] | None:
        """The ledger the lineage's head carries (SQL ``session_ledger``): the user's requests and
        corrections, files, commands, open errors and identifiers its compactions kept; None
        before the first compaction. An operator's read: ``self.operator.ledger``."""
        return await self.operator.ledger(session_id)

    # ---- compaction (Temporal) ------------------------------------------------------------

    async def recorded_answer(self, lineage_id: str, request_id: str) -> dict[str, Any] | None:
        """The answer a decided job gave ``request_id`` (SQL ``session_recorded_answer``), or None.
        Answers outlive workflow runs: a request id answered once is never run again."""
        check_text(request_id, "requestId")
        return await self._call("select session_recorded_answer(%s, %s)", (lineage_id, request_id))

    async def compact(
        self,
        session_id: str,
        *,
        focus_topic: str | None = None,
        force: bool | None = None,
        request_id: str | None = None,
        background: bool | None = None,
        timeout: float | None = None,
        unreachable_timeout: float = 120.0,
    ) -> dict[str, Any]:
        """Compacts the session if it is still its lineage's head, by the ``compact`` Update;
        at the server's in-flight Update limit the same request goes as a signal and its
        answer is read by query. Answers with the result and ``messages``, the head's
        messages exactly as appended (as ``transcript``). Waits at most ``timeout`` seconds
        (default COMPACTION_CALL_TIMEOUT_MS) for the answer, as the TypeScript client's
        ``timeoutMs``: past it, CallTimeoutError with the request id (the request may still
        complete: ``wait_for_result`` it)."""
        limit = self.config.call_timeout_ms / 1000 if timeout is None else positive_seconds(timeout, "timeout")
        call = CallDeadline(limit)
        raw = {"sessionId": session_id, "requestId": request_id or str(uuid.uuid4()), "focusTopic": focus_topic, "force": force, "background": background}
        request = check_compact_request(raw)
        lineage = await self.lineage(request["sessionId"])
        if lineage["closed"]:
            raise LineageClosedError(lineage["lineageId"])
        self._check_held(lineage, request["sessionId"])
        # The workflow knows sessions by their stored names (with tenants, ``<tenant>:<id>``).
        request["sessionId"] = lineage.get("sessionId", request["sessionId"])
        # The SDK turns a cancelled Update poll into WorkflowUpdateRPCTimeoutOrCancelledError,
        # so wait_for alone cannot end the call: the loop checks the deadline itself too.
        try:
            result = await asyncio.wait_for(self._compact_until_answered(lineage, request, bool(request_id), call, unreachable_timeout), call.left())
        except asyncio.TimeoutError:
            if not call.passed():
                raise
            raise call.timed_out(request["requestId"]) from None
        transcript = await self.transcript(result["sessionId"])
        return result | {"messages": transcript["messages"]}

    async def _compact_until_answered(
        self, lineage: Mapping[str, Any], request: dict[str, Any], answered_before: bool, call: CallDeadline, unreachable_timeout: float
    ) -> dict[str, Any]:
        """The compact Update until it is answered: sent again when the run ended before it
        answered, or while Temporal is unreachable (for ``unreachable_timeout`` seconds), never
        past the call's deadline (CallTimeoutError)."""
        # A request id answered already (perhaps by a run that is gone) is answered from Postgres.
        result = await self.recorded_answer(lineage["lineageId"], request["requestId"]) if answered_before else None
        deadline = min(time.monotonic() + unreachable_timeout, call.at)
        delay = 0.2
        resends = 0
        while result is None:
            try:
                result = await self._compact_by_update(lineage, request, call)
            except _RunEnded as ended:
                if call.passed():
                    raise call.timed_out(request["requestId"]) from None
                # The run ended before it answered (closed, erased, terminated, or continued as
                # new under load), as the TypeScript client: closed or erased meanwhile is said
                # so (LineageClosedError, SessionNotFoundError) instead of starting runs.
                now = await self.lineage(lineage["lineageId"])
                if now["closed"]:
                    raise LineageClosedError(lineage["lineageId"]) from None
                if ended.terminated:
                    raise RequestLostError(
                        request["requestId"], "the lineage workflow run was terminated before it answered (the lineage erased, or an operator)"
                    ) from None
                if time.monotonic() > deadline:
                    raise RequestLostError(request["requestId"], "the lineage workflow runs kept ending before they answered") from None
                await asyncio.sleep(min(1.0, 0.1 * 2**resends))
                resends += 1
                result = await self.recorded_answer(lineage["lineageId"], request["requestId"])
            except Exception as error:
                reraise_cancellation()
                if call.passed():
                    raise call.timed_out(request["requestId"]) from error
                if not is_transient_connection_error(error) or time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        return result

    async def _compact_by_update(self, lineage: Mapping[str, Any], request: dict[str, Any], call: CallDeadline) -> dict[str, Any]:
        operation = WithStartWorkflowOperation(
            WORKFLOW_TYPE,
            self._start_input(lineage),
            **self._start_options(lineage),
            id_conflict_policy=JOIN_RUNNING_WORKFLOW,
        )
        try:
            try:
                return await self._update_client.execute_update_with_start_workflow(
                    "compact", request, start_workflow_operation=operation, rpc_timeout=timedelta(seconds=max(call.left(), 0.001))
                )
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
            if is_run_ended_error(error):
                raise _RunEnded(await run_terminated(self.temporal, operation)) from error
            raise
        except Exception as error:
            if is_run_ended_error(error):
                raise _RunEnded(await run_terminated(self.temporal, operation)) from error
            if not is_update_limit_error(error):
                raise
            self.update_limit_fallbacks += 1
            handle = self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"]))
            await handle.signal("requestCompaction", request | {"trigger": "update"})
            return await self._await_answer(lineage["lineageId"], request["requestId"], timeout=max(call.left(), 0.001))

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
        self._check_held(lineage, request["sessionId"])
        request["sessionId"] = lineage.get("sessionId", request["sessionId"])
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
        """Waits for the answer to a request sent with request_compaction (or by a threshold),
        at most ``timeout`` seconds (CallTimeoutError, also a TimeoutError: the request may
        still complete). A request the workflow never got (its signal never landed, or it
        stayed unknown to the running workflow for ``request_lost_after`` seconds), or whose
        run ended without it, is RequestLostError: send it again with the same id."""
        if not isinstance(request_id, str) or not 1 <= len(request_id) <= 200:
            raise InvalidInputError("requestId", "must be a string of 1 to 200 characters")
        check_text(request_id, "requestId")
        lineage = await self.lineage(session_id)
        return await self._await_answer(lineage["lineageId"], request_id, timeout=timeout)

    async def _await_answer(self, lineage_id: str, request_id: str, *, timeout: float | None) -> dict[str, Any]:
        """The request's answer, polled as the TypeScript client's LineagePoller (answer_poller.py)."""
        return await await_answer(
            self.temporal, self.recorded_answer, lineage_id, request_id, timeout=timeout, request_lost_after=self.request_lost_after
        )

    async def state(self, session_id: str) -> dict[str, Any]:
        """The workflow's ``state`` query. An operator's read: ``self.operator.state``."""
        return await self.operator.state(session_id)

    async def close_session(self, session_id: str, *, timeout: float = 600.0) -> None:
        """Closes the lineage: the workflow finishes its queue, marks it closed and completes.
        Waits at most ``timeout`` seconds (CallTimeoutError; the lineage still closes)."""
        lineage = await self.lineage(session_id)
        if lineage["closed"]:
            return
        handle = await self.temporal.start_workflow(
            WORKFLOW_TYPE, self._start_input(lineage), **self._start_options(lineage), start_signal="close"
        )
        try:
            await asyncio.wait_for(handle.result(), timeout)
        except asyncio.TimeoutError:
            # As the TypeScript client's closeSession: the close was sent and still completes.
            raise CallTimeoutError(None, f"the deadline ({timeout} s) passed before the lineage closed") from None

    # ---- the data's whole life: erase and retention ----------------------------------------

    async def delete_lineage(self, session_id: str, *, timeout: float = 600.0) -> dict[str, Any]:
        """Erases the session's lineage (``session_id``: any of its session ids): every row of
        it in Postgres (lineage, sessions, messages, audit rows, append keys, pruned ranges)
        and every run of its workflow in Temporal, as the TypeScript client's ``deleteLineage``
        and in its order. The lineage is closed first, so a request racing the erase gets
        LineageClosedError (or, once the rows are gone, SessionNotFoundError), never a
        half-erased lineage; then its workflow is terminated and each of its runs deleted;
        then its rows go, in one transaction (SQL ``session_erase``). An erase that failed
        midway leaves a closed lineage: call it again. Afterwards the same id can be created
        again, as a new and empty lineage. An unknown id is SessionNotFoundError.

        Answers ``{lineageId, messages, sessions, compactions, appendKeys, workflowRuns}``: the
        rows deleted, by kind, and the workflow runs whose deletion Temporal accepted (it
        deletes them in the background, the dev server within about half a minute). The
        Temporal part waits at most ``timeout`` seconds (CallTimeoutError)."""
        check_session_id(session_id)
        lineage = await self.lineage(session_id)
        lineage_id: str = lineage["lineageId"]
        # Closed first (SQL session_close, as the TypeScript client), so a request racing the erase is refused.
        await self._call("select session_close(%s)", (lineage_id,))
        try:
            workflow_runs = await asyncio.wait_for(delete_workflow_runs(self.temporal, self.config.namespace, lineage_workflow_id(lineage_id)), timeout)
        except asyncio.TimeoutError:
            raise CallTimeoutError(None, f"deleting the workflow runs of lineage {lineage_id} took longer than {timeout} s; the lineage is closed: erase it again") from None
        # Closed above; ``true`` closes it too, so an erase resumed after a failure never meets an open lineage.
        erased: dict[str, Any] = await self._call("select session_erase(%s, true)", (lineage_id,))
        # The id may come back as another lineage (another dialect or model): this client learns it anew.
        self._formats.clear()
        self._held.pop(lineage_id, None)
        return erased | {"workflowRuns": workflow_runs}

    # ---- retention: the operator's (OperatorClient), kept here for existing callers ----------

    async def run_retention(self, policy: Mapping[str, Any], batch: int = 1000) -> dict[str, Any]:
        """Runs retention once, now, and waits for it: ``self.operator.run_retention``."""
        return await self.operator.run_retention(policy, batch)

    async def schedule_retention(self, policy: Mapping[str, Any], every: str | timedelta, batch: int = 1000) -> dict[str, Any]:
        """Has Temporal run retention every ``every``: ``self.operator.schedule_retention``."""
        return await self.operator.schedule_retention(policy, every, batch)

    async def unschedule_retention(self) -> bool:
        """Stops scheduled retention: ``self.operator.unschedule_retention``."""
        return await self.operator.unschedule_retention()

    async def close(self) -> None:
        await self._data.close()

    async def __aenter__(self) -> SessionsClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # ---- workflow start options -----------------------------------------------------------

    def _start_input(self, lineage: Mapping[str, Any]) -> dict[str, Any]:
        return lineage_start_input(lineage, self._settings)

    def _start_options(self, lineage: Mapping[str, Any]) -> dict[str, Any]:
        return lineage_start_options(lineage, self.config.task_queue)


async def connect(
    env: Mapping[str, str] | None = None,
    *,
    config: Config | None = None,
    settings: Mapping[str, Any] | None = None,
    request_lost_after: float = 30.0,
) -> SessionsClient:
    """Connects to Temporal and Postgres with the TypeScript client's environment variables
    (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TEMPORAL_TLS*, TEMPORAL_API_KEY,
    DATABASE_URL, COMPACTION_*). ``settings`` override per-lineage workflow settings;
    ``request_lost_after`` bounds how long wait_for_result waits for a request the running
    workflow does not know (RequestLostError)."""
    config = config or load_config(env)
    options = temporal_connect_options(config)
    temporal = await Client.connect(config.temporal_address, **options, data_converter=DATA_CONVERTER)  # type: ignore[arg-type]
    # At most one immediate resend (max_retries=0 does not turn retries off: it is read as the
    # default), so the in-flight limit's refusal reaches compact() within milliseconds.
    no_retry = RetryConfig(max_retries=1, initial_interval_millis=1, max_interval_millis=1, max_elapsed_time_millis=1)
    update_client = await Client.connect(config.temporal_address, **options, retry_config=no_retry, data_converter=DATA_CONVERTER)  # type: ignore[arg-type]
    db = await open_pool(config)
    lineage_settings = {
        "leaseTtlMs": config.lease_ttl_ms,
        "attemptTimeoutMs": config.attempt_timeout_ms,
        "maxAttempts": config.max_attempts,
        **(settings or {}),
    }
    return SessionsClient(config, temporal, db, lineage_settings, update_client, request_lost_after=request_lost_after)