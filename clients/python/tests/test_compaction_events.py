"""A lineage's compaction events from Python (session_compaction.compaction_events; the
TypeScript twin's stack test is test/stack/compaction-events.test.ts): a UI-like consumer sees
in_progress, then completed with the summary the head holds; a refused job is failed; a
consumer that stops and resumes from its cursor in another client gets exactly the rest; every
wait ends at its bound."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import session_compaction as sc
from session_compaction import InvalidInputError, SessionNotFoundError

from .conftest import SUMMARY_PREFIX, conversation, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def collect(client: sc.SessionsClient, session_id: str, *, until: int | None = None, **options: Any) -> list[dict[str, Any]]:
    """Every event until ``until`` of them came, or the stream ends (idle 5 s by default)."""
    options.setdefault("poll_interval", 0.05)
    options.setdefault("idle_timeout", 5)
    events: list[dict[str, Any]] = []
    async for event in client.compaction_events(session_id, **options):
        events.append(event)
        if until is not None and len(events) >= until:
            break
    return events


async def test_a_consumer_sees_in_progress_then_completed_with_the_summary(client):
    sid = unique_id("py-ev")
    await client.create_session(sid)
    await client.append(sid, conversation(12))
    seen: list[dict[str, Any]] = []
    answered_at: list[float] = []

    async def follow() -> None:
        async for event in client.compaction_events(sid, poll_interval=0.05, idle_timeout=30):
            seen.append({**event, "seenAt": time.monotonic()})
            if event["status"] != "in_progress":
                return

    consumer = asyncio.create_task(follow())
    result = await client.compact(sid, request_id=f"{sid}-r1")
    answered_at.append(time.monotonic())
    await asyncio.wait_for(consumer, 30)

    assert result["outcome"] == "compacted"
    assert [e["status"] for e in seen] == ["in_progress", "completed"]
    started, completed = seen
    # The summariser takes 300 ms (scripts/python-tests.ts): the UI saw "compacting" before the answer.
    assert started["seenAt"] < answered_at[0]
    assert started["sessionUpdate"] == "compaction_update" and "summary" not in started
    assert started["_meta"]["requestIds"] == [f"{sid}-r1"] and started["_meta"]["lineageId"] == sid
    assert completed["compactionId"] == started["compactionId"]
    assert completed["_meta"]["outcome"] == "compacted" and completed["_meta"]["sessionId"] == result["sessionId"]
    summary = next(m["content"] for m in result["messages"] if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX))
    assert completed["summary"] == [{"type": "text", "text": summary[len(SUMMARY_PREFIX) :].strip()}]


async def test_a_refused_job_is_failed_with_its_reason(client):
    sid = unique_id("py-ev-refused")
    await client.create_session(sid)
    await client.append(sid, conversation(1))  # too short to summarise: refused
    result = await client.compact(sid)
    assert result["outcome"] == "refused"
    events = await collect(client, sid, until=2)
    assert [e["status"] for e in events] == ["in_progress", "failed"]
    assert events[1]["error"] == result["reason"] and events[1]["_meta"]["outcome"] == "refused"


async def test_resuming_from_a_cursor_in_another_client_gets_exactly_the_rest(client):
    sid = unique_id("py-ev-resume")
    await client.create_session(sid)
    await client.append(sid, conversation(12))
    ledger: list[tuple[str, str]] = []

    async def compact_once(n: int) -> None:
        head = (await client.transcript(sid))["sessionId"]
        result = await client.compact(head, request_id=f"{sid}-r{n}")
        ledger.append((f"{sid}-r{n}", result["outcome"]))
        await client.append(sid, conversation(12)[1:])

    await compact_once(1)
    await compact_once(2)
    first = await collect(client, sid, until=3, limit=1)
    assert len(first) == 3
    await compact_once(3)
    restarted = await sc.connect()
    try:
        rest = await collect(restarted, sid, until=3, after=first[-1]["cursor"], limit=2)
        # Nothing more after the last one.
        assert await collect(restarted, sid, after=rest[-1]["cursor"], idle_timeout=0.3) == []
    finally:
        await restarted.close()
    assert all(outcome == "compacted" for _, outcome in ledger)
    events = first + rest
    assert [(e["_meta"]["requestIds"], e["status"]) for e in events] == [
        pair for request_id, _ in ledger for pair in (([request_id], "in_progress"), ([request_id], "completed"))
    ]
    whole = await client.read_compaction_events(sid, limit=1000)
    assert [e["cursor"] for e in whole["events"]] == [e["cursor"] for e in events]
    assert whole["more"] is False and whole["cursor"] == events[-1]["cursor"]


async def test_every_wait_ends_at_its_bound(client):
    sid = unique_id("py-ev-bounds")
    await client.create_session(sid)
    assert await client.read_compaction_events(sid) == {"lineageId": sid, "events": [], "cursor": None, "more": False}
    for options in ({"idle_timeout": 0.3}, {"timeout": 0.3, "idle_timeout": None}):
        started = time.monotonic()
        assert await collect(client, sid, **options) == []
        assert time.monotonic() - started < 5
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(0.3, stop.set)
    started = time.monotonic()
    assert await collect(client, sid, stop=stop, idle_timeout=None) == []
    assert time.monotonic() - started < 5


async def test_wrong_options_and_unknown_sessions_are_typed_errors(client):
    sid = unique_id("py-ev-wrong")
    await client.create_session(sid)
    with pytest.raises(InvalidInputError, match="after"):
        await client.read_compaction_events(sid, after="not-a-cursor")
    with pytest.raises(InvalidInputError, match="limit"):
        await client.read_compaction_events(sid, limit=0)
    with pytest.raises(InvalidInputError, match="poll_interval"):
        client.compaction_events(sid, poll_interval=0)
    with pytest.raises(SessionNotFoundError):
        await client.read_compaction_events(unique_id("py-missing"))
