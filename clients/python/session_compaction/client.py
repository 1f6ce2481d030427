"""SessionsClient for Python: the same operations as the TypeScript client.

Appends and reads go to Postgres through the data-plane SQL functions (``session_create``,
``session_append``, ``session_transcript``, ``session_lineage``: one implementation for every
language). Compaction requests go to the lineage's workflow as the ``compact`` Update, or as
the ``requestCompaction`` signal plus the ``requestResult`` query (docs/wire-contract.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
import math
import uuid
import weakref
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
)
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RetryConfig, RPCError, RPCStatusCode

from .config import Config, load_config, temporal_connect_options
from .payloads import DATA_CONVERTER
from .dialects import DIALECTS, DialectName, message_texts
from .dialects import for_provider as for_provider_view
from .text import check_json, check_messages, check_text, reserved_text_in
from .tokens import TokenizerName, token_counts_with, tokenizer_for
from .errors import (
    BackgroundCompactionRejectedError,
    CallTimeoutError,
    InvalidInputError,
    LineageClosedError,
    LineageErasedError,
    RequestLostError,
    RetentionRunningError,
    from_failure,
    database_query_error,
    from_sql_error,
)
from .rpc_errors import is_run_ended_error, is_transient_connection_error, is_update_limit_error, is_workflow_not_found_error

WORKFLOW_TYPE = "sessionLineageWorkflow"
WORKFLOW_ID_PREFIX = "session-lineage/"
COMPACTION_MODES = ("rotate", "in_place")
#: The largest count Postgres' integer columns hold (token thresholds, context windows, counts).
MAX_TOKENS = 2_147_483_647
#: The data plane's bound on one message's token count (session_append refuses more).
MAX_MESSAGE_TOKENS = 10_000_000
_DERIVED_ID_SUFFIX = re.compile(r"--g\d+$")

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
_DERIVED_SUFFIX = re.compile(r"--g\d+$")
_REQUEST_FIELDS = {"requestId", "sessionId", "focusTopic", "force", "background", "trigger"}

SessionLineage = SearchAttributeKey.for_keyword("SessionLineage")
SessionHead = SearchAttributeKey.for_keyword("SessionHead")
SessionSource = SearchAttributeKey.for_keyword("SessionSource")
CompactionCount = SearchAttributeKey.for_int("CompactionCount")

CompactionMode = Literal["rotate", "in_place"]

#: The one retention schedule of a namespace (RETENTION_SCHEDULE_ID, src/client/retention.ts).
RETENTION_SCHEDULE_ID = "session-compaction-retention"
RETENTION_WORKFLOW_TYPE = "retentionWorkflow"
RETENTION_POLICY_FIELDS = ("endedSessionDays", "archivedDays", "auditDays", "appendKeyDays")


def manual_retention_workflow_id(task_queue: str) -> str:
    """The workflow id of a manual retention run on ``task_queue`` (manualRetentionWorkflowId,
    src/client/retention.ts): one id, so Temporal refuses a second manual run while one runs."""
    return f"{RETENTION_SCHEDULE_ID}-run-{task_queue}"
_DURATION = re.compile(
    r"^(\d*\.?\d+) *(milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w|years?|yrs?|y)?$", re.IGNORECASE
)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000, "y": 31_557_600_000}


def lineage_workflow_id(lineage_id: str) -> str:
    return f"{WORKFLOW_ID_PREFIX}{lineage_id}"


def check_session_id(value: object, field: str = "sessionId") -> str:
    """Mirrors checkSessionId of src/workflows/contract.ts."""
    if not isinstance(value, str) or value == "":
        raise InvalidInputError(field, "must be a non-empty string")
    if len(_DERIVED_SUFFIX.sub("", value)) > 128:
        raise InvalidInputError(field, "must be at most 128 characters")
    if not _SESSION_ID.fullmatch(value):
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
    # The text rule (checkRequestText): a NUL or a lone surrogate can be stored nowhere.
    if request_id is not None:
        check_text(request_id, "requestId")
    if focus is not None:
        check_text(focus, "focusTopic")
        reserved = reserved_text_in(focus)
        if reserved:
            raise InvalidInputError("focusTopic", f"may not contain {reserved}: only the service writes a summary's structure")
    return {k: v for k, v in raw.items() if v is not None and k != "background"} | {"sessionId": session_id}


def check_retention_policy(policy: object) -> dict[str, float]:
    """Mirrors checkRetentionPolicy of src/client/retention.ts: an object whose keys are among
    endedSessionDays, archivedDays, auditDays and appendKeyDays, each a number of days, 0 or
    more (fractions allowed), or None (kept for ever); at least one of them given."""
    if not isinstance(policy, Mapping):
        raise InvalidInputError("policy", "must be an object")
    checked: dict[str, float] = {}
    for key, value in policy.items():
        if key not in RETENTION_POLICY_FIELDS:
            raise InvalidInputError(f"policy.{key}", f"is not one of {', '.join(RETENTION_POLICY_FIELDS)}")
        if value is None:
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise InvalidInputError(f"policy.{key}", "must be a number of days, 0 or more")
        checked[key] = value
    if not checked:
        raise InvalidInputError("policy", "prunes nothing: give at least one of " + ", ".join(RETENTION_POLICY_FIELDS))
    return checked


def _retention_input(policy: object, batch: object) -> dict[str, Any]:
    """The retention workflow's input (RetentionInput, src/workflows/retention.ts), checked."""
    checked_batch = batch if isinstance(batch, int) and not isinstance(batch, bool) else None
    if isinstance(batch, float) and batch.is_integer():
        checked_batch = int(batch)
    if checked_batch is None or not 1 <= checked_batch <= 100_000:
        raise InvalidInputError("batch", "must be a whole number from 1 to 100000")
    return {"policy": check_retention_policy(policy), "batch": checked_batch}


def _interval(every: object) -> timedelta:
    """A schedule's interval: a ``timedelta``, or a duration string as the TypeScript client
    takes it (the ``ms`` package's: ``'24h'``, ``'1 day'``, ``'90m'``; a bare number is
    milliseconds). At least one second, as Temporal's intervals."""
    interval: timedelta | None = None
    if isinstance(every, timedelta):
        interval = every
    elif isinstance(every, str):
        match = _DURATION.fullmatch(every.strip())
        if match:
            unit = (match.group(2) or "ms").lower()
            key = "ms" if unit.startswith(("ms", "msec", "milli")) else unit[0]
            interval = timedelta(milliseconds=float(match.group(1)) * _DURATION_MS[key])
    if interval is None or interval < timedelta(seconds=1):
        raise InvalidInputError("every", "must be a duration such as '24h' (or a timedelta), at least one second")
    return interval


def _check_name(value: object, field: str, most: int) -> None:
    """A caller's string of 1 to ``most`` code points under the text rule (source, model, append key)."""
    if value is None:
        return
    if not isinstance(value, str) or not 1 <= len(value) <= most:
        raise InvalidInputError(field, f"must be a string of 1 to {most} characters")
    check_text(value, field)


def _check_count(value: object, field: str) -> None:
    """A positive whole number an integer column can hold (compactAtTokens, contextWindow)."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError(field, "must be a positive whole number")
    if value > MAX_TOKENS:
        raise InvalidInputError(field, f"must be a whole number from 1 to {MAX_TOKENS}")


#: createSession and compact join the lineage's workflow when it runs already (a second
#: create, concurrent compactions), never fail for it (JOIN_RUNNING_WORKFLOW of
#: src/client/start-options.ts). Signal-with-start joins by its nature.
JOIN_RUNNING_WORKFLOW = WorkflowIDConflictPolicy.USE_EXISTING


def lineage_start_input(lineage: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The workflow's input, built from the lineage row so a new run starts where Postgres
    stands (lineageStartOptions of src/client/start-options.ts; contract/vectors/start-options.json)."""
    start = {
        "lineageId": lineage["lineageId"],
        "headSessionId": lineage["headSessionId"],
        "generation": lineage["generation"],
        "mode": lineage["mode"],
        "settings": dict(settings),
    }
    if lineage.get("source"):
        start["source"] = lineage["source"]
    return start


def lineage_start_options(lineage: Mapping[str, Any], task_queue: str) -> dict[str, Any]:
    """What every start of the lineage's workflow carries besides its input: id, task queue,
    search attributes and the summary the Web UI shows."""
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
        "task_queue": task_queue,
        "search_attributes": TypedSearchAttributes(pairs),
        "static_summary": f"Session lineage {lineage['lineageId']}{source}, {lineage['mode']}",
        "static_details": f"Compactions of session lineage `{lineage['lineageId']}` run here one at a time. Transcripts live in Postgres; see the state query for head and queue.",
    }


class _RunEnded(Exception):
    """Raised by _compact_by_update for compact(): the run ended before it answered."""

    def __init__(self, terminated: bool) -> None:
        super().__init__("the lineage workflow run ended before it answered")
        self.terminated = terminated


class _CallDeadline:
    """A call's deadline, ``limit`` seconds from now: the TypeScript client's ``deadlineOf``."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.at = time.monotonic() + limit

    def left(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0

    def timed_out(self, request_id: str) -> CallTimeoutError:
        return CallTimeoutError(request_id, f"the deadline ({self.limit:g} s) passed before the answer came")


def _positive_seconds(value: object, field: str) -> float:
    """A positive, finite number of seconds (not a bool, not a string): InvalidInputError otherwise."""
    try:
        seconds = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidInputError(field, "must be a positive number of seconds")
    return seconds


def _reraise_cancellation() -> None:
    """Raises CancelledError when the running task is being cancelled: the SDK reports a
    cancelled Update as an error, which must not be taken for a failure to resend."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)  # Python 3.11+
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError


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
        self._db = db
        # The pool belongs to the event loop it was opened on (its locks and workers do). A
        # call from any other loop (a thread with its own loop, a later asyncio.run) opens a
        # connection of its own and closes it when it ends, cancelled or timed out included,
        # at most `database_pool_size` at once per loop: no loop ever waits on another's lock.
        try:
            self._db_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._db_loop = None
        self._loop_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()
        self._loop_slots_lock = threading.Lock()
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
        failure: BaseException | None = None
        try:
            loop = asyncio.get_running_loop()
            if loop is self._db_loop:
                async with self._db.connection() as conn:
                    cursor = await conn.execute(query, params)
                    row = await cursor.fetchone()
            else:
                row = await self._call_on_own_connection(loop, query, params)
        except psycopg.Error as error:
            failure = from_sql_error(error)
            if failure is error:
                failure = database_query_error(error, query)
            if failure is error:
                raise
        if failure is not None:
            # Raised outside the handler: the driver's error (its DETAIL and CONTEXT may quote
            # the statement's values, a refused row whole) is neither its cause nor its context.
            raise failure
        assert row is not None
        return row[0]

    async def _call_on_own_connection(self, loop: asyncio.AbstractEventLoop, query: str, params: Sequence[Any]) -> Any:
        """A call from a loop other than the pool's: its own connection, closed however the call
        ends (a cancelled or timed-out call leaves nothing open, and nothing bound to its loop)."""
        with self._loop_slots_lock:
            slots = self._loop_slots.get(loop)
            if slots is None:
                slots = self._loop_slots[loop] = asyncio.Semaphore(self.config.database_pool_size)
        async with slots:
            conn = await psycopg.AsyncConnection.connect(self.config.database_url, autocommit=True)
            try:
                cursor = await conn.execute(query, params)
                return await cursor.fetchone()
            finally:
                await asyncio.shield(conn.close())

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
    ) -> dict[str, Any]:
        """Creates a session (the root of a new lineage) and starts its workflow. Idempotent
        for the same parameters; a closed lineage is a LineageClosedError. ``compact_at_tokens``
        is the auto-compaction threshold in tokens (the TypeScript client also takes a
        percentage of a known model's window). ``dialect`` is the provider API format of the
        lineage's messages (``openai-chat``, ``openai-responses``, ``openai-agents``, ``anthropic``, ``gemini``):
        they are checked, stored and returned in it."""
        check_session_id(session_id)
        if mode not in COMPACTION_MODES:
            raise InvalidInputError("mode", f"must be one of {', '.join(COMPACTION_MODES)}")
        if dialect not in DIALECTS:
            raise InvalidInputError("dialect", f"must be one of {', '.join(DIALECTS)}")
        _check_name(source, "source", 100)
        _check_name(model, "model", 200)
        _check_count(compact_at_tokens, "compactAtTokens")
        _check_count(context_window, "contextWindow")
        lineage = await self._call(
            "select session_create(%s, %s, %s, %s::integer, %s::text, %s::integer, %s::text)",
            (session_id, source, mode, compact_at_tokens, model, context_window, dialect),
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
        _check_name(append_key, "appendKey", 200)
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
        check_session_id(session_id)
        return await self._call("select session_lineage(%s)", (session_id,))

    async def ledger(self, session_id: str) -> dict[str, Any] | None:
        """The ledger the lineage's head carries (SQL ``session_ledger``): the user's requests and
        corrections, files, commands, open errors and identifiers its compactions kept; None
        before the first compaction."""
        check_session_id(session_id)
        return await self._call("select session_ledger(%s)", (session_id,))

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
        limit = self.config.call_timeout_ms / 1000 if timeout is None else _positive_seconds(timeout, "timeout")
        call = _CallDeadline(limit)
        raw = {"sessionId": session_id, "requestId": request_id or str(uuid.uuid4()), "focusTopic": focus_topic, "force": force, "background": background}
        request = check_compact_request(raw)
        lineage = await self.lineage(request["sessionId"])
        if lineage["closed"]:
            raise LineageClosedError(lineage["lineageId"])
        self._check_held(lineage, request["sessionId"])
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
        self, lineage: Mapping[str, Any], request: dict[str, Any], answered_before: bool, call: _CallDeadline, unreachable_timeout: float
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
                _reraise_cancellation()
                if call.passed():
                    raise call.timed_out(request["requestId"]) from error
                if not is_transient_connection_error(error) or time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        return result

    async def _compact_by_update(self, lineage: Mapping[str, Any], request: dict[str, Any], call: _CallDeadline) -> dict[str, Any]:
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
                raise _RunEnded(await self._terminated(operation)) from error
            raise
        except Exception as error:
            if is_run_ended_error(error):
                raise _RunEnded(await self._terminated(operation)) from error
            if not is_update_limit_error(error):
                raise
            self.update_limit_fallbacks += 1
            handle = self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"]))
            await handle.signal("requestCompaction", request | {"trigger": "update"})
            return await self._await_answer(lineage["lineageId"], request["requestId"], timeout=max(call.left(), 0.001))

    async def _terminated(self, operation: WithStartWorkflowOperation[Any, Any]) -> bool:
        """Whether the run an Update went to was terminated (or is gone already: erased)."""
        try:
            handle = await asyncio.wait_for(operation.workflow_handle(), 1.0)
            run_id = handle.result_run_id or handle.run_id
            if not run_id:
                return False
            description = await self.temporal.get_workflow_handle(handle.id, run_id=run_id).describe()
        except RPCError as error:
            return is_workflow_not_found_error(error)
        except Exception:
            return False
        return description.status is not None and description.status.name == "TERMINATED"

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
        """The request's answer, polled with the ``requestStatus`` query (as the TypeScript
        client's LineagePoller): answered, pending, or unknown to this run. Unknown is read
        from Postgres (answered by a run that is gone) and otherwise lost once the run has
        ended or after ``request_lost_after`` seconds."""
        if timeout is None:
            return await self._poll_answer(lineage_id, request_id)
        try:
            return await asyncio.wait_for(self._poll_answer(lineage_id, request_id), timeout)
        except asyncio.TimeoutError:
            raise CallTimeoutError(request_id, f"the deadline ({timeout} s) passed before the answer came") from None

    async def _poll_answer(self, lineage_id: str, request_id: str) -> dict[str, Any]:
        handle = self.temporal.get_workflow_handle(lineage_workflow_id(lineage_id))
        delay = 0.05
        unknown_since: float | None = None
        while True:
            status = await self._request_status(handle, request_id)
            kind = status.get("status") if status else None
            if kind == "answered":
                return status["result"]  # type: ignore[index]
            if kind == "unknown":
                recorded = await self.recorded_answer(lineage_id, request_id)
                if recorded is not None:
                    return recorded
                now = time.monotonic()
                if unknown_since is None:
                    unknown_since = now
                if not await self._running(handle):
                    raise RequestLostError(request_id, "the lineage workflow run ended without it")
                if now - unknown_since > self.request_lost_after:
                    raise RequestLostError(request_id, f"the lineage workflow has not received it after {round(self.request_lost_after * 1000)} ms")
            elif kind == "pending":
                unknown_since = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _request_status(self, handle: Any, request_id: str) -> dict[str, Any] | None:
        """The run's ``requestStatus`` of one request; ``unknown`` where no run exists; None
        while the server cannot be reached (polled again)."""
        try:
            statuses = await handle.query("requestStatus", [request_id])
        except Exception as error:
            # Classified as the TypeScript client does (contract/vectors/rpc-errors.json).
            if is_workflow_not_found_error(error):
                return {"requestId": request_id, "status": "unknown"}
            if is_transient_connection_error(error):
                return None
            raise
        return next((s for s in statuses or [] if s.get("requestId") == request_id), {"requestId": request_id, "status": "unknown"})

    async def _running(self, handle: Any) -> bool:
        try:
            description = await handle.describe()
        except Exception as error:
            if is_workflow_not_found_error(error):
                return False
            raise
        return description.status is not None and description.status.name == "RUNNING"

    async def state(self, session_id: str) -> dict[str, Any]:
        """The workflow's ``state`` query."""
        lineage = await self.lineage(session_id)
        return await self.temporal.get_workflow_handle(lineage_workflow_id(lineage["lineageId"])).query("state")

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
        # No data-plane function closes a lineage (the workflow does, via the store): the one
        # statement the TypeScript store runs (closeLineage).
        await self._call(
            "with closed as (update lineages set closed_at = now() where id = %s and closed_at is null returning 1) select count(*) from closed",
            (lineage_id,),
        )
        try:
            workflow_runs = await asyncio.wait_for(self._delete_workflow_runs(lineage_workflow_id(lineage_id)), timeout)
        except asyncio.TimeoutError:
            raise CallTimeoutError(None, f"deleting the workflow runs of lineage {lineage_id} took longer than {timeout} s; the lineage is closed: erase it again") from None
        # Closed above; ``true`` closes it too, so an erase resumed after a failure never meets an open lineage.
        erased: dict[str, Any] = await self._call("select session_erase(%s, true)", (lineage_id,))
        # The id may come back as another lineage (another dialect or model): this client learns it anew.
        self._formats.clear()
        self._held.pop(lineage_id, None)
        return erased | {"workflowRuns": workflow_runs}

    async def _delete_workflow_runs(self, workflow_id: str) -> int:
        """Terminates the lineage's workflow and deletes each of its runs from Temporal (those
        visibility lists; when it lists none yet, the latest run); answers how many runs'
        deletion was accepted. A run or workflow that is gone already is not an error."""
        try:
            await self.temporal.get_workflow_handle(workflow_id).terminate(reason="session lineage erased")
        except RPCError as error:
            if not is_workflow_not_found_error(error):
                raise
        runs: list[str] = []
        async for execution in self.temporal.list_workflows(f"WorkflowId = '{workflow_id}'"):
            if execution.run_id not in runs:
                runs.append(execution.run_id)

        async def remove(run_id: str = "") -> bool:
            request = DeleteWorkflowExecutionRequest(
                namespace=self.config.namespace, workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id)
            )
            try:
                await self.temporal.workflow_service.delete_workflow_execution(request)
            except RPCError as error:
                if is_workflow_not_found_error(error):
                    return False
                raise
            return True

        deleted = 0
        for run_id in runs:
            deleted += await remove(run_id)
        # Visibility lags: a run the list does not show yet is the latest one.
        if not runs and await remove():
            deleted += 1
        return deleted

    async def run_retention(self, policy: Mapping[str, Any], batch: int = 1000) -> dict[str, Any]:
        """Runs retention once, now, and waits for it: the workflow ``retentionWorkflow`` on the
        client's task queue (the worker prunes in bounded batches, one transaction each, until
        nothing is left). ``policy`` holds how long each kind of row is kept, in days (0 or
        more, fractions allowed; None or absent: for ever): ``endedSessionDays`` (messages of
        sessions a rotation ended), ``archivedDays`` (rows an in-place compaction archived or a
        caller took back), ``auditDays`` (audit rows no remaining message needs),
        ``appendKeyDays`` (append keys: a resend after that is stored again). ``batch``: rows
        of each kind per transaction, 1 to 100000. Answers what it pruned: ``{batches,
        messages, compactions, appendKeys, prunedRanges, exported}``. Messages whose lineage
        kept no other copy are recorded as pruned ranges, which the audit counts as pruned.
        Raises RetentionRunningError, starting nothing, while another manual run (from either
        client or the CLI) or the scheduled run on the same task queue is still running."""
        retention_input = _retention_input(policy, batch)
        scheduled = await self._running_scheduled_retention()
        if scheduled is not None:
            raise RetentionRunningError(scheduled)
        workflow_id = manual_retention_workflow_id(self.config.task_queue)
        try:
            handle = await self.temporal.start_workflow(
                RETENTION_WORKFLOW_TYPE,
                retention_input,
                id=workflow_id,
                task_queue=self.config.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
        except WorkflowAlreadyStartedError:
            raise RetentionRunningError(workflow_id) from None
        result: dict[str, Any] = await handle.result()
        return result

    async def _running_scheduled_retention(self) -> str | None:
        """A run the retention schedule started on this client's task queue that is still
        running (runningScheduledRun, src/client/retention.ts): each run the schedule lists is
        described, which is consistent, unlike visibility."""
        try:
            description = await self.temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        action = description.schedule.action
        if not isinstance(action, ScheduleActionStartWorkflow) or action.task_queue != self.config.task_queue:
            return None
        started = [getattr(execution, "workflow_id", None) for execution in description.info.running_actions]
        started += [getattr(result.action, "workflow_id", None) for result in description.info.recent_actions]
        for workflow_id in dict.fromkeys(w for w in started if w):
            if (await self.temporal.get_workflow_handle(workflow_id).describe()).status == WorkflowExecutionStatus.RUNNING:
                return workflow_id
        return None

    async def schedule_retention(self, policy: Mapping[str, Any], every: str | timedelta, batch: int = 1000) -> dict[str, Any]:
        """Has Temporal run retention every ``every`` (``'24h'``, ``'1 day'`` or a ``timedelta``):
        the Temporal Schedule ``session-compaction-retention``, created, or updated with the new
        policy and interval (the same schedule the TypeScript client and ``sessions retention
        schedule`` manage). A run still going when the next is due is skipped, not doubled.
        Answers ``{scheduleId, created}``."""
        retention_input = _retention_input(policy, batch)
        interval = _interval(every)
        action = ScheduleActionStartWorkflow(
            RETENTION_WORKFLOW_TYPE, retention_input, id=f"{RETENTION_SCHEDULE_ID}-workflow", task_queue=self.config.task_queue
        )
        spec = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=interval)])

        def replace(previous: ScheduleUpdateInput) -> ScheduleUpdate:
            schedule = previous.description.schedule
            schedule.spec = spec
            schedule.action = action
            return ScheduleUpdate(schedule=schedule)

        try:
            await self.temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).update(replace)
            return {"scheduleId": RETENTION_SCHEDULE_ID, "created": False}
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        await self.temporal.create_schedule(
            RETENTION_SCHEDULE_ID, Schedule(action=action, spec=spec, policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP))
        )
        return {"scheduleId": RETENTION_SCHEDULE_ID, "created": True}

    async def unschedule_retention(self) -> bool:
        """Stops scheduled retention (deletes the Schedule); False when none was scheduled."""
        try:
            await self.temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).delete()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return True

    async def close(self) -> None:
        await self._db.close()

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
    return SessionsClient(config, temporal, db, lineage_settings, update_client, request_lost_after=request_lost_after)
