"""The Python client against the real stack: the whole cycle, stale callers, the signal and
query path, closing, and typed errors."""

from __future__ import annotations

import pytest

from session_compaction import (
    BackgroundCompactionRejectedError,
    InvalidInputError,
    LineageClosedError,
    SessionConflictError,
    SessionNotFoundError,
)

from .conftest import conversation, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_create_append_compact_read(client):
    sid = unique_id("py")
    created = await client.create_session(sid, source="python")
    assert created == {"sessionId": sid, "lineageId": sid, "mode": "rotate", "source": "python"}
    assert await client.create_session(sid, source="python") == created  # idempotent
    with pytest.raises(SessionConflictError, match="with source"):
        await client.create_session(sid, source="other")

    appended = await client.append(sid, conversation(12))
    assert appended["sessionId"] == sid and appended["count"] == 25 and appended["firstSeq"] == 1 and appended["lastSeq"] == 25
    result = await client.compact(sid, focus_topic="the parser", request_id="py-1")
    assert result["outcome"] == "compacted"
    assert result["sessionId"] == f"{sid}--g1" and result["previousSessionId"] == sid
    assert result["messages"] == (await client.transcript(sid))["messages"]
    assert len(result["messages"]) < 25

    # The same request id is answered again, never re-run.
    again = await client.compact(sid, request_id="py-1")
    assert again["outcome"] == "compacted" and again["sessionId"] == f"{sid}--g1"

    lineage = await client.lineage(f"{sid}--g1")
    assert [s["sessionId"] for s in lineage["sessions"]] == [sid, f"{sid}--g1"]
    assert lineage["sessions"][0]["endReason"] == "compression"
    state = await client.state(sid)
    assert state["headSessionId"] == f"{sid}--g1" and state["compactions"] == 1


async def test_stale_caller_gets_the_head(client):
    sid = unique_id("py-stale")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    first = await client.compact(sid)
    assert first["outcome"] == "compacted"
    stale = await client.compact(sid)
    assert stale["outcome"] == "stale"
    assert stale["sessionId"] == first["sessionId"]
    assert len((await client.lineage(sid))["sessions"]) == 2  # nothing ran


async def test_signal_and_wait_for_result(client):
    sid = unique_id("py-signal")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    request_id = await client.request_compaction(sid, request_id="by-signal")
    assert request_id == "by-signal"
    result = await client.wait_for_result(sid, request_id, timeout=120)
    assert result["outcome"] == "compacted" and result["requestId"] == "by-signal"


async def test_threshold_requests_a_compaction(client):
    sid = unique_id("py-threshold")
    created = await client.create_session(sid, compact_at_tokens=300, model="some-local-model", context_window=8000)
    assert created["model"] == "some-local-model" and created["contextWindow"] == 8000
    below = await client.append(sid, conversation(2))
    assert below["headTokens"] < 300 and "compactionRequestId" not in below
    above = await client.append(sid, conversation(12))
    assert above["headTokens"] >= 300
    assert above["compactionRequestId"] == f"threshold:{sid}:{above['lastLineageSeq']}"
    # Still above while that request is pending: no second request.
    again = await client.append(sid, [{"role": "user", "content": "and another thing"}])
    assert "compactionRequestId" not in again or again["sessionId"] != sid
    result = await client.wait_for_result(sid, above["compactionRequestId"], timeout=120)
    assert result["outcome"] == "compacted"


async def test_append_key_stores_a_resend_once(client, db):
    sid = unique_id("py-key")
    await client.create_session(sid)
    batch = [{"role": "user", "content": "exactly once"}]
    first = await client.append(sid, batch, append_key="turn-1")
    resent = await client.append(sid, batch, append_key="turn-1")
    assert first["replayed"] is False and resent["replayed"] is True
    assert {k: v for k, v in resent.items() if k != "replayed"} == {k: v for k, v in first.items() if k != "replayed"}
    rows = await (await db.execute("select count(*) from messages where session_id = %s", (sid,))).fetchone()
    assert rows[0] == 1


async def test_typed_errors(client):
    with pytest.raises(SessionNotFoundError):
        await client.append("py-no-such-session", [{"role": "user", "content": "x"}])
    with pytest.raises(SessionNotFoundError):
        await client.compact("py-no-such-session")
    with pytest.raises(InvalidInputError) as bad_id:
        await client.compact("bad id!")
    assert bad_id.value.field == "sessionId"
    sid = unique_id("py-errors")
    await client.create_session(sid)
    with pytest.raises(BackgroundCompactionRejectedError):
        await client.compact(sid, background=True)
    with pytest.raises(InvalidInputError) as bad_role:
        await client.append(sid, [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert bad_role.value.field == "messages[1].role"
    with pytest.raises(InvalidInputError) as nul:
        await client.append(sid, [{"role": "user", "content": "a\u0000b"}])
    assert nul.value.field == "messages"
    assert (await client.transcript(sid))["messages"] == []


async def test_close_session(client):
    sid = unique_id("py-close")
    await client.create_session(sid)
    await client.append(sid, [{"role": "user", "content": "bye"}])
    await client.close_session(sid)
    assert (await client.lineage(sid))["closed"] is True
    with pytest.raises(LineageClosedError):
        await client.append(sid, [{"role": "user", "content": "too late"}])
    with pytest.raises(LineageClosedError):
        await client.compact(sid)
    await client.close_session(sid)  # idempotent
