"""Waits for the answer of a compaction request sent by signal (request_compaction, a
threshold, or compact's fallback at the in-flight Update limit), as the TypeScript client's
LineagePoller (src/client/answer-poller.ts): polled with the ``requestStatus`` query,
backing off while nothing changes. A request the run does not know (its signal never landed,
or the run ended) is declared lost, never polled forever."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client

from .errors import CallTimeoutError, RequestLostError
from .lineage_workflow import lineage_workflow_id
from .rpc_errors import is_transient_connection_error, is_workflow_not_found_error

#: The answer a decided job gave a request id, read from Postgres (SessionsClient.recorded_answer).
RecordedAnswer = Callable[[str, str], Awaitable["dict[str, Any] | None"]]


async def await_answer(
    temporal: Client,
    recorded_answer: RecordedAnswer,
    lineage_id: str,
    request_id: str,
    *,
    timeout: float | None,
    request_lost_after: float,
) -> dict[str, Any]:
    """The request's answer, polled with the ``requestStatus`` query: answered, pending, or
    unknown to this run. Unknown is read from Postgres (answered by a run that is gone) and
    otherwise lost once the run has ended or after ``request_lost_after`` seconds. Waits at
    most ``timeout`` seconds (CallTimeoutError)."""
    if timeout is None:
        return await poll_answer(temporal, recorded_answer, lineage_id, request_id, request_lost_after)
    try:
        return await asyncio.wait_for(poll_answer(temporal, recorded_answer, lineage_id, request_id, request_lost_after), timeout)
    except asyncio.TimeoutError:
        raise CallTimeoutError(request_id, f"the deadline ({timeout} s) passed before the answer came") from None


async def poll_answer(temporal: Client, recorded_answer: RecordedAnswer, lineage_id: str, request_id: str, request_lost_after: float) -> dict[str, Any]:
    handle = temporal.get_workflow_handle(lineage_workflow_id(lineage_id))
    delay = 0.05
    unknown_since: float | None = None
    while True:
        status = await request_status(handle, request_id)
        kind = status.get("status") if status else None
        if kind == "answered":
            return status["result"]  # type: ignore[index]
        if kind == "unknown":
            recorded = await recorded_answer(lineage_id, request_id)
            if recorded is not None:
                return recorded
            now = time.monotonic()
            if unknown_since is None:
                unknown_since = now
            if not await running(handle):
                raise RequestLostError(request_id, "the lineage workflow run ended without it")
            if now - unknown_since > request_lost_after:
                raise RequestLostError(request_id, f"the lineage workflow has not received it after {round(request_lost_after * 1000)} ms")
        elif kind == "pending":
            unknown_since = None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


async def request_status(handle: Any, request_id: str) -> dict[str, Any] | None:
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


async def running(handle: Any) -> bool:
    """Whether the workflow the handle names has a running run."""
    try:
        description = await handle.describe()
    except Exception as error:
        if is_workflow_not_found_error(error):
            return False
        raise
    return description.status is not None and description.status.name == "RUNNING"
