"""The Python client against the real stack: the whole cycle, stale callers, the signal and
query path, closing, typed errors, and the same token counts as the TypeScript client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import pytest
from psycopg.types.json import Jsonb

import session_compaction as sc
from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from session_compaction import (
    BackgroundCompactionRejectedError,
    HistoryMismatchError,
    InvalidInputError,
    LineageClosedError,
    SessionConflictError,
    SessionNotFoundError,
    SessionsClient,
    load_config,
)

from .conftest import PROJECT_ROOT, conversation, unique_id, vectors

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_create_append_compact_read(client):
    sid = unique_id("py")
    created = await client.create_session(sid, source="python")
    assert created == {"sessionId": sid, "lineageId": sid, "mode": "rotate", "dialect": "openai-chat", "source": "python"}
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


async def test_the_ledger_of_the_head_quotes_every_summarised_request(client):
    sid = unique_id("py-ledger")
    await client.create_session(sid)
    assert await client.ledger(sid) is None  # no compaction yet
    messages = conversation(12)
    await client.append(sid, messages)
    result = await client.compact(sid, force=True)
    assert result["outcome"] == "compacted"
    ledger = await client.ledger(result["sessionId"])
    assert ledger is not None and ledger["version"] == 1
    requests = [m["content"] for m in messages if m["role"] == "user"]
    kept = [m["content"] for m in result["messages"] if m["role"] == "user"]
    # Every request is in the ledger (verbatim), kept verbatim in the head, or counted as folded (a
    # transcript of mostly requests folds its oldest to stay smaller), by this test's own list.
    listed = [r["text"] for r in ledger["requests"]]
    assert set(listed + kept) <= set(requests) and len(set(listed + kept)) + ledger["folded"]["requests"] == len(requests)
    assert listed
    summary = next(m for m in result["messages"] if m.get("name") == "context_summary")
    assert all(r["text"] in summary["content"] for r in ledger["requests"])
    with pytest.raises(SessionNotFoundError):
        await client.ledger(unique_id("py-no-such"))


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


async def test_replace_tail(client, db):
    """session_replace_tail: the last messages taken back (archived, retracted_by set) and others
    appended in their place in one step; exactly an expected suffix or nothing
    (HistoryMismatchError); keyed, stored once; the replacement counted and checked as an append."""
    sid = unique_id("py-tail")
    await client.create_session(sid, compact_at_tokens=300)
    messages = conversation(3)
    await client.append(sid, messages)
    popped = await client.replace_tail(sid)
    assert popped["removed"] == [messages[-1]] and popped["appended"] is None and popped["replayed"] is False
    assert popped["sessionId"] == popped["lineageId"] == sid
    assert (await client.transcript(sid))["messages"] == messages[:-1]

    with pytest.raises(HistoryMismatchError) as mismatch:
        await client.replace_tail(sid, expected=[messages[-1]], replacement=[{"role": "user", "content": "x"}])
    assert mismatch.value.session_id == sid and "not the ones expected" in mismatch.value.detail
    assert str(mismatch.value).startswith(f'the head of session "{sid}" changed: ') and str(mismatch.value).endswith("; nothing was changed")
    with pytest.raises(HistoryMismatchError, match="fewer than the 9 expected"):
        await client.replace_tail(sid, expected=messages + messages[:2])
    assert (await client.transcript(sid))["messages"] == messages[:-1]

    replacement = [{"role": "assistant", "content": "Rewritten: " + "the refactor keeps the API. " * 40}]
    replaced = await client.replace_tail(sid, expected=messages[-3:-1], replacement=replacement, key="op-1")
    assert replaced["removed"] == messages[-3:-1] and replaced["appended"]["count"] == 1
    assert replaced["appended"]["compactionRequestId"].startswith(f"threshold:{sid}:")  # the threshold, as an append
    again = await client.replace_tail(sid, expected=messages[-3:-1], replacement=replacement, key="op-1")
    assert again["replayed"] is True and again["removed"] == replaced["removed"] and "autoCompactionRequestId" not in again["appended"]
    with pytest.raises(InvalidInputError) as reused:
        await client.replace_tail(sid, 2, key="op-1")
    assert reused.value.field == "appendKey"
    await client.wait_for_result(sid, replaced["appended"]["compactionRequestId"], timeout=120)

    head = (await client.transcript(sid))["sessionId"]
    before = await client.transcript(head)
    cleared = await client.replace_tail(sid, "all")
    assert cleared["removed"] == before["messages"] and (await client.transcript(sid))["messages"] == []
    assert (await client.replace_tail(sid, None))["removed"] == []
    rows = await (await db.execute("select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s and m.retracted_by is not null", (sid,))).fetchone()
    assert rows[0] >= 3 + len(before["messages"])

    for bad, field in [({"count": -1}, "count"), ({"count": True}, "count"), ({"key": ""}, "key"), ({"expected": "x"}, "expected"), ({"expected": [1]}, "expected"),
                       ({"expected": [{}], "count": 3}, "count"), ({"replacement": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
                       ({"replacement": [{"role": "user", "content": "a\u0000b"}]}, "messages[0].content")]:
        with pytest.raises(InvalidInputError) as error:
            await client.replace_tail(sid, **bad)
        assert error.value.field == field, bad


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
        await client.append(sid, [{"role": "user", "content": "ok"}, {"role": "user", "content": "a\u0000b"}])
    assert nul.value.field == "messages[1].content"
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


async def test_same_token_counts_as_typescript(client, db, tmp_path):
    """The same batch appended to a gpt-4o lineage from Python and from the TypeScript client
    (the `sessions` command) stores the same token counts, and they are the tokenizer's, not
    the estimate session_append stores for a client that passes none."""
    batch = [c["message"] for c in vectors("token-counts.json")["cases"]] + conversation(3)
    py_sid, ts_sid, est_sid = unique_id("py-gpt4o"), unique_id("ts-gpt4o"), unique_id("est-gpt4o")
    for sid in (py_sid, ts_sid, est_sid):
        await client.create_session(sid, model="gpt-4o")
    await client.append(py_sid, batch)
    batch_file = tmp_path / "batch.json"
    batch_file.write_text(json.dumps(batch))
    subprocess.run(
        ["node", "--import", "tsx", "src/cli/main.ts", "append", ts_sid, "--file", str(batch_file), "--json"],
        cwd=PROJECT_ROOT, env=os.environ, capture_output=True, text=True, timeout=120, check=True,
    )
    await client._call("select session_append(%s, %s)", (est_sid, Jsonb(batch)))  # no counts: the SQL estimate

    async def stored(sid: str) -> list[int]:
        rows = await (await db.execute("select token_estimate from messages where session_id = %s order by seq", (sid,))).fetchall()
        return [r[0] for r in rows]

    from_python, from_typescript, estimate = await stored(py_sid), await stored(ts_sid), await stored(est_sid)
    assert len(from_python) == len(batch)
    assert from_python == from_typescript
    assert from_python != estimate  # the counts are the tokenizer's: the mechanism landed


async def test_missing_tokenizer_ranks_are_a_typed_error(client, db, tmp_path, monkeypatch):
    """Without its rank file (or with a damaged one) an OpenAI-model append is refused with
    TokenizerUnavailableError and writes nothing, rather than silently storing estimates."""
    from session_compaction import tokens

    sid = unique_id("py-noranks")
    await client.create_session(sid, model="gpt-4")
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "RANKS_DIR", tmp_path)
    with pytest.raises(sc.TokenizerUnavailableError, match="cl100k_base.*npm run python:ranks"):
        await client.append(sid, [{"role": "user", "content": "hello"}])
    (tmp_path / "cl100k_base.tiktoken").write_bytes(b"aGVsbG8= 0\n")
    with pytest.raises(sc.TokenizerUnavailableError, match="SHA-256"):
        await client.append(sid, [{"role": "user", "content": "hello"}])
    row = await (await db.execute("select count(*) from messages where session_id = %s", (sid,))).fetchone()
    assert row[0] == 0


async def test_request_id_resent_after_its_run_is_gone_is_not_run_again(client, db):
    # A run that completes when idle forgets its answers; Postgres keeps them.
    idle_client = await sc.connect(settings={"idleTimeoutMs": 1000, "retryInitialIntervalMs": 200, "retryMaximumIntervalMs": 1000})
    try:
        sid = unique_id("py-resend")
        await idle_client.create_session(sid)
        await idle_client.append(sid, conversation(1))  # too short to summarise: refused, the head stays
        await idle_client.request_compaction(sid, request_id="once")
        assert (await idle_client.wait_for_result(sid, "once", timeout=60))["outcome"] == "refused"
        handle = idle_client.temporal.get_workflow_handle(sc.lineage_workflow_id(sid))
        for _ in range(100):
            if (await handle.describe()).status.name != "RUNNING":
                break
            await asyncio.sleep(0.2)
        assert (await handle.describe()).status.name == "COMPLETED"  # the run that answered is gone

        # Now there is plenty to summarise: a second run of the same request id would compact.
        await idle_client.append(sid, conversation(12)[1:])
        assert await idle_client.request_compaction(sid, request_id="once") == "once"
        assert (await idle_client.wait_for_result(sid, "once", timeout=60))["outcome"] == "refused"
        again = await idle_client.compact(sid, request_id="once")
        assert again["outcome"] == "refused" and again["sessionId"] == sid
        # Our own ledger: one session, and the request id in one job only.
        assert [s["sessionId"] for s in (await idle_client.lineage(sid))["sessions"]] == [sid]
        rows = await (await db.execute("select count(*) from compactions where lineage_id = %s and request_ids @> %s", (sid, Jsonb(["once"])))).fetchone()
        assert rows[0] == 1
    finally:
        await idle_client.close()


async def test_a_request_the_workflow_never_got_is_lost(client):
    """wait_for_result for a request id the running workflow never received raises
    RequestLostError after request_lost_after (the TypeScript client's requestLostAfterMs),
    not at the end of its timeout; for a run that has ended it is lost at once."""
    quick = await sc.connect(request_lost_after=1.0)
    try:
        sid = unique_id("py-lost")
        await quick.create_session(sid)
        started = asyncio.get_running_loop().time()
        with pytest.raises(sc.RequestLostError, match="never-sent was lost: the lineage workflow has not received it after 1000 ms") as lost:
            await quick.wait_for_result(sid, "never-sent", timeout=120)
        assert lost.value.request_id == "never-sent"
        assert asyncio.get_running_loop().time() - started < 20
        # A request that did land is not lost while it waits (pending), nor once answered.
        await quick.append(sid, conversation(10))
        request_id = await quick.request_compaction(sid)
        assert (await quick.wait_for_result(sid, request_id, timeout=120))["outcome"] == "compacted"

        await quick.close_session(sid)
        started = asyncio.get_running_loop().time()
        with pytest.raises(sc.RequestLostError, match="the lineage workflow run ended without it"):
            await client.wait_for_result(sid, "never-sent-either", timeout=120)  # the default bound (30 s) is not waited for
        assert asyncio.get_running_loop().time() - started < 10
        # Answers outlive the run: the request that was answered is still answered.
        assert (await client.wait_for_result(sid, request_id, timeout=30))["outcome"] == "compacted"
    finally:
        await quick.close()


async def test_a_wait_is_bounded(client):
    sid = unique_id("py-timeout")
    await client.create_session(sid)
    with pytest.raises(sc.CallTimeoutError, match="wait for request not-yet again") as timed_out:
        await client.wait_for_result(sid, "not-yet", timeout=0.5)  # unknown, but within the 30 s bound
    assert isinstance(timed_out.value, TimeoutError)


async def test_a_compact_past_its_deadline_is_call_timeout_error_and_still_completes(client):
    """As the TypeScript client's compact timeoutMs: the summary takes longer than the
    deadline (the fake summariser answers after 300 ms), so the call ends with CallTimeoutError
    naming the request id, and the request still completes, once."""
    sid = unique_id("py-compact-timeout")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    started = asyncio.get_running_loop().time()
    with pytest.raises(sc.CallTimeoutError, match=r"the deadline \(0.05 s\) passed before the answer came") as timed_out:
        await client.compact(sid, force=True, timeout=0.05)
    assert asyncio.get_running_loop().time() - started < 10
    request_id = timed_out.value.request_id
    assert request_id
    answer = await client.wait_for_result(sid, request_id, timeout=120)
    assert (answer["outcome"], answer["generation"]) == ("compacted", 1)
    # The same request id again is answered, not run again.
    again = await client.compact(sid, request_id=request_id, timeout=60)
    assert (again["outcome"], again["sessionId"], again["generation"]) == ("compacted", answer["sessionId"], 1)
    assert (await client.lineage(sid))["generation"] == 1


class _UpdateThatSwallowsCancellation:
    """What temporalio's Update poll does when its task is cancelled: it raises
    WorkflowUpdateRPCTimeoutOrCancelledError instead (temporalio/client/_workflow.py), which
    reads as a transient error. Every send hangs until then."""

    def __init__(self) -> None:
        self.sends = 0

    async def execute_update_with_start_workflow(self, *args, **kwargs):
        self.sends += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise WorkflowUpdateRPCTimeoutOrCancelledError() from None


def _client_with_update(update_client) -> SessionsClient:
    """A SessionsClient whose lineage reads are answered in memory and whose Updates go to ``update_client``."""
    client = SessionsClient(load_config({}), temporal=None, db=None, settings={}, update_client=update_client)  # type: ignore[arg-type]

    async def lineage(session_id):
        return {"lineageId": session_id, "headSessionId": session_id, "generation": 0, "mode": "rotate", "closed": False}

    client.lineage = lineage  # type: ignore[method-assign]
    return client


async def test_a_compact_deadline_holds_when_the_sdk_turns_the_cancellation_into_an_error():
    """No stack: the Update never answers, and cancelling it makes the SDK raise an error that
    reads as transient. The call still ends at its deadline with CallTimeoutError (not a
    resend until the unreachable bound), and a caller's own cancellation stays a cancellation."""
    update = _UpdateThatSwallowsCancellation()
    client = _client_with_update(update)
    # Waited on without cancelling it (a call that ignores cancellation would hang the test).
    timed = asyncio.ensure_future(client.compact("py-swallow", timeout=0.3, unreachable_timeout=30))
    await asyncio.wait({timed}, timeout=10)
    assert timed.done(), "compact ran on past its deadline"
    with pytest.raises(sc.CallTimeoutError, match=r"the deadline \(0.3 s\) passed before the answer came"):
        timed.result()
    assert update.sends == 1

    cancelled = asyncio.ensure_future(client.compact("py-swallow", timeout=60, unreachable_timeout=30))
    while update.sends < 2:
        await asyncio.sleep(0.01)
    cancelled.cancel()
    await asyncio.wait({cancelled}, timeout=10)
    assert cancelled.done(), "compact went on after its caller cancelled it"
    assert cancelled.cancelled()
    assert update.sends == 2


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), 10**400, True, "5"])
async def test_a_compact_timeout_that_is_not_a_positive_number_is_refused(client, timeout):
    sid = unique_id("py-compact-bad-timeout")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    with pytest.raises(sc.InvalidInputError, match="invalid timeout: must be a positive number of seconds"):
        await client.compact(sid, force=True, timeout=timeout)
    assert (await client.lineage(sid))["generation"] == 0


async def test_a_close_past_its_deadline_is_call_timeout_error(client):
    """As the TypeScript client's closeSession: CallTimeoutError, not a bare TimeoutError; the close was sent and still lands."""
    sid = unique_id("py-close-timeout")
    await client.create_session(sid)
    with pytest.raises(sc.CallTimeoutError, match="passed before the lineage closed"):
        await client.close_session(sid, timeout=0.001)
    await client.close_session(sid)
    assert (await client.lineage(sid))["closed"] is True


async def test_request_sizes_are_code_points(client):
    """The text rule measures sizes in code points in every client: a focus topic of 600
    astral characters (1200 UTF-16 units) and a request id of 150 are within 1000 and 200."""
    sid = unique_id("py-focus")
    await client.create_session(sid)
    await client.append(sid, conversation(10))
    result = await client.compact(sid, force=True, focus_topic="😀" * 600, request_id="🧪" * 150)
    assert result["outcome"] == "compacted" and result["requestId"] == "🧪" * 150


async def test_a_statement_the_database_refuses_is_a_database_query_error_without_the_batch(client, db):
    """psycopg's own error quotes the server's DETAIL and CONTEXT: a refused row whole, here the
    appended batch with a card number. The caller gets DatabaseQueryError, and nothing of it."""
    session_id = unique_id("py-refused")
    await client.create_session(session_id)
    card = "4111 1111 1111 1111"
    fn = f"refuse_{session_id.replace('-', '_')}"
    await db.execute(
        f"""create function {fn}() returns trigger language plpgsql as $$ begin
          if new.session_id = '{session_id}' then
            raise exception 'new row violates check constraint "messages_size"' using detail = 'Failing row contains ' || new.body::text, errcode = '23514';
          end if; return new; end $$"""
    )
    await db.execute(f"create trigger {fn} before insert on messages for each row execute function {fn}()")
    try:
        with pytest.raises(sc.DatabaseQueryError) as raised:
            await client.append(session_id, [{"role": "user", "content": f"Renew the plan and charge my card {card}."}])
    finally:
        await db.execute(f"drop trigger {fn} on messages")
        await db.execute(f"drop function {fn}()")
    error = raised.value
    assert (error.operation, error.code) == ("session_append", "23514")
    assert str(error) == 'the database failed session_append: new row violates check constraint "messages_size" (SQLSTATE 23514)'
    seen: list[str] = []
    e: BaseException | None = error
    while e is not None and len(seen) < 10:  # the whole chain: cause and context
        seen.append(repr(e) + str(e))
        e = e.__cause__ or e.__context__
    assert card not in "\n".join(seen)
    assert (await client.transcript(session_id))["messages"] == []
