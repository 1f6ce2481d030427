"""A lineage's compaction events (src/client/compaction-events.ts): each one an Agent Client
Protocol ``compaction_update`` (``sessionUpdate``, ``compactionId``, ``status`` in_progress /
completed / failed / cancelled, ``summary`` when completed with one, ``error`` when failed,
``_meta`` with what the job's audit row knows) plus its ``cursor``, read through the data-plane
SQL function ``session_compaction_events``: the same answer as the TypeScript client's.

``follow_compaction_events`` polls it into an async iterator, bounded everywhere: at most
``limit`` events held at a time, a read every ``poll_interval`` seconds while nothing is new, an
end after ``idle_timeout`` seconds with nothing new, at ``timeout`` and when ``stop`` is set (all
three end the iteration without an error; cancelling the task ends it too). Resumable: pass the
last event's ``cursor`` as ``after``, in this process or another, and the reads continue with
exactly the events after it."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

from .errors import InvalidInputError, SessionNotFoundError

DEFAULT_EVENT_LIMIT = 100
MAX_EVENT_LIMIT = 1000
DEFAULT_POLL_INTERVAL = 0.25
#: The reason the events of a lineage erased while it is followed end with.
ERASED_REASON = "the lineage was erased"

_CURSOR = re.compile(r"^[0-9]{1,19}\.[0-9]{1,18}$")


def check_read_options(after: str | None, limit: int) -> None:
    """The read options, checked before anything is sent (the SQL function checks them too)."""
    if after is not None and (not isinstance(after, str) or not _CURSOR.match(after)):
        raise InvalidInputError("after", "must be the cursor of a compaction event")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_EVENT_LIMIT:
        raise InvalidInputError("limit", f"must be a whole number from 1 to {MAX_EVENT_LIMIT}")


def _check_seconds(value: float | None, field: str, least: float, most: float) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not least <= value <= most:
        raise InvalidInputError(field, f"must be a number of seconds from {least:g} to {most:g}")


def follow_compaction_events(
    read: Callable[[str | None, int], Awaitable[dict[str, Any]]],
    *,
    after: str | None,
    limit: int,
    poll_interval: float | None,
    idle_timeout: float | None,
    timeout: float,
    stop: asyncio.Event | None,
) -> AsyncIterator[dict[str, Any]]:
    """The lineage's events as they come, after ``after``. ``read(after, limit)`` is one page read
    (its errors end the iteration with them). A lineage erased while it is followed (its rows
    gone: SessionNotFoundError after a first successful read) ends the iteration, after a
    ``cancelled`` event for each job seen in progress and not seen ending. Options are checked
    now, not at the first ``anext``."""
    check_read_options(after, limit)
    _check_seconds(poll_interval, "poll_interval", 0.02, 60)
    _check_seconds(idle_timeout, "idle_timeout", 0, 2**31 / 1000)
    _check_seconds(timeout, "timeout", 0.001, 2**31 / 1000)
    return _follow(read, after, limit, DEFAULT_POLL_INTERVAL if poll_interval is None else poll_interval, idle_timeout, timeout, stop)


async def _follow(
    read: Callable[[str | None, int], Awaitable[dict[str, Any]]],
    after: str | None,
    limit: int,
    poll_interval: float,
    idle_timeout: float | None,
    timeout: float,
    stop: asyncio.Event | None,
) -> AsyncIterator[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    last_new_at = time.monotonic()
    read_once = False
    # Jobs seen in progress and not yet seen ending: a lineage runs one job at a time.
    open_jobs: dict[str, dict[str, Any]] = {}

    def stopped() -> bool:
        return (stop is not None and stop.is_set()) or time.monotonic() >= deadline

    while not stopped():
        try:
            page = await read(after, limit)
        except SessionNotFoundError:
            if not read_once:
                raise
            for event in open_jobs.values():
                meta = {k: v for k, v in event["_meta"].items() if k != "outcome"}
                meta.update(reason=ERASED_REASON, at=datetime.now(timezone.utc).isoformat())
                yield {**event, "status": "cancelled", "cursor": after or event["cursor"], "_meta": meta}
            return
        read_once = True
        for event in page["events"]:
            if stopped():
                return
            if event["status"] == "in_progress":
                open_jobs[event["compactionId"]] = event
            else:
                open_jobs.pop(event["compactionId"], None)
            after = event["cursor"]
            yield event
        if page["events"]:
            last_new_at = time.monotonic()
        if page["more"]:
            continue
        wait = min(poll_interval, deadline - time.monotonic())
        if idle_timeout is not None:
            idle_left = last_new_at + idle_timeout - time.monotonic()
            if idle_left <= 0:
                return
            wait = min(wait, idle_left)
        if wait <= 0:
            return
        if stop is None:
            await asyncio.sleep(wait)
        else:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
