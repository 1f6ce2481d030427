"""The data's whole life from Python, on the real stack (as test/stack/data-lifecycle.test.ts):
erasing a lineage (``delete_lineage``), also while a TypeScript process appends to it,
retention run once (``run_retention``) and on a Temporal Schedule (``schedule_retention``,
``unschedule_retention``), and the Agents SDK session's ``clear_session``, which erases and
creates again.

Rows are counted with this file's own SQL, never with the numbers the code under test
answers; the project's audit (auditLineage, and the whole database's) is run in TypeScript.
No test waits for Temporal's deletion of executions, which it does in the background: a run
of an erased lineage is checked to be terminated (or already gone), not deleted."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from session_compaction import InvalidInputError, LineageClosedError, LineageErasedError, RetentionRunningError, SessionCompactionError, SessionNotFoundError, connect
from session_compaction.agents import CompactingSession
from session_compaction.client import lineage_workflow_id, manual_retention_workflow_id

from .conftest import PROJECT_ROOT, conversation, run_typescript, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

AUDIT_KEYS = ("forks", "orphans", "writesAfterEnd", "lostMessages", "duplicatedMessages", "sequenceGaps", "duplicatedByKey")
NONE = {"lineages": 0, "sessions": 0, "messages": 0, "compactions": 0, "appendKeys": 0, "pruned": 0}

#: The lineages this module's tests leave, audited together by the last test (one process).
LINEAGES: set[str] = set()

AUDIT_SCRIPT = """
const { SessionsClient } = require('./src/client');
(async () => {
  const client = await SessionsClient.connect();
  const lineages = {};
  for (const id of input) lineages[id] = await client.operator.auditLineage(id);
  const whole = await client.operator.audit();
  await client.close();
  console.log(JSON.stringify({ lineages, whole }));
})().catch((error) => { console.error(error); process.exit(1); });
"""


async def audit_sql(db, lineage_id: str) -> dict[str, int]:
    """The lineage's integrity counted with this file's SQL, the way the project's audit
    (src/db/audit.ts ``audit``) counts it, in milliseconds (the project's own runs in
    TypeScript, once, in the last test): forks, orphans, writes after end, lost (neither live in
    the head, nor taken back, nor in the range a committed compaction summarised), duplicated
    live rows, sequence gaps (numbers neither present nor in a pruned range), duplicated keyed rows."""
    one = lambda query: count(db, query, {"id": lineage_id})  # noqa: E731
    return {
        "forks": await one("select count(*) from (select parent_session_id from sessions where lineage_id = %(id)s and parent_session_id is not null group by 1 having count(*) > 1) f"),
        "orphans": await one("select count(*) from sessions s join lineages l on l.id = s.lineage_id where l.id = %(id)s and s.ended_at is null and s.id <> l.head_session_id"),
        "writesAfterEnd": await one("select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %(id)s and s.ended_at is not null and m.created_at > s.ended_at"),
        "lostMessages": await one("""
            with latest as (
              select distinct on (m.lineage_seq) m.id, m.session_id, m.seq, m.lineage_seq, m.archived_at, m.archived_by_compaction, m.retracted_by
              from messages m join sessions s on s.id = m.session_id
              where s.lineage_id = %(id)s and m.lineage_seq is not null order by m.lineage_seq, m.id desc)
            select count(*) from latest l join lineages g on g.id = %(id)s
            where not (l.session_id = g.head_session_id and l.archived_at is null) and l.retracted_by is null
              and not exists (select 1 from compactions c where c.outcome = 'compacted' and c.parent_session_id = l.session_id
                and case when c.summarised_from_seq is not null then l.lineage_seq between c.summarised_from_seq and c.summarised_to_seq else l.seq <= c.watermark_seq end
                and (c.child_session_id <> c.parent_session_id or l.archived_by_compaction = c.id))"""),
        "duplicatedMessages": await one("""select coalesce(sum(n - 1), 0) from (select count(*) as n from messages m join sessions s on s.id = m.session_id
            where s.lineage_id = %(id)s and m.lineage_seq is not null and m.archived_at is null group by m.session_id, m.lineage_seq having count(*) > 1) d"""),
        "sequenceGaps": await one("""select g.appended_count - (select count(distinct seq) from (
              select m.lineage_seq as seq from messages m join sessions s on s.id = m.session_id where s.lineage_id = %(id)s and m.lineage_seq is not null
              union all select generate_series(p.from_seq, p.to_seq) from pruned_messages p where p.lineage_id = %(id)s) known)
            from lineages g where g.id = %(id)s"""),
        "duplicatedByKey": await one("""select coalesce(sum(greatest(0, stored.n - (k.result->>'count')::int)), 0) from append_keys k
            join (select m.append_key, count(*) as n from messages m join sessions s on s.id = m.session_id
                  where s.lineage_id = %(id)s and m.append_key is not null and m.written_by_compaction is null group by 1) stored
              on k.lineage_id = %(id)s and stored.append_key = k.append_key"""),
    }


async def clean(db, lineage_id: str) -> None:
    """This file's audit of the lineage counts nothing; the project's audit of it runs in the last test."""
    report = await audit_sql(db, lineage_id)
    assert report == dict.fromkeys(AUDIT_KEYS, 0), f"{lineage_id}: {report}"
    LINEAGES.add(lineage_id)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def count(db, query: str, *params: Any) -> int:
    row = await (await db.execute(query, params[0] if len(params) == 1 and isinstance(params[0], dict) else params)).fetchone()
    return 0 if row is None or row[0] is None else int(row[0])  # no row: nothing of the lineage to count


async def rows_of(db, lineage_id: str) -> dict[str, int]:
    """Rows anywhere that name the lineage (this file's SQL)."""
    return {
        "lineages": await count(db, "select count(*) from lineages where id = %s", lineage_id),
        "sessions": await count(db, "select count(*) from sessions where lineage_id = %s", lineage_id),
        "messages": await count(db, "select count(*) from messages where session_id = %s or session_id like %s", lineage_id, f"{lineage_id}--g%"),
        "compactions": await count(db, "select count(*) from compactions where lineage_id = %s", lineage_id),
        "appendKeys": await count(db, "select count(*) from append_keys where lineage_id = %s", lineage_id),
        "pruned": await count(db, "select count(*) from pruned_messages where lineage_id = %s", lineage_id),
    }


async def grow(client, session_id: str, rounds: int) -> None:
    """Appends a batch (keyed) and compacts the head after each, ``rounds`` times."""
    for r in range(rounds):
        batch = conversation(4 + r)[0 if r == 0 else 1 :]
        head = (await client.append(session_id, batch, append_key=f"{session_id}-batch-{r}"))["sessionId"]
        result = await client.compact(head, force=True)
        assert result["outcome"] == "compacted", result


async def run_ids(client, lineage_id: str) -> list[str]:
    """The lineage workflow's runs as visibility lists them (waits for the first to be listed)."""
    workflow_id = lineage_workflow_id(lineage_id)
    for _ in range(100):
        runs = [w.run_id async for w in client.temporal.list_workflows(f"WorkflowId = '{workflow_id}'")]
        if runs:
            return runs
        await asyncio.sleep(0.1)
    return []


async def ended_or_gone(client, lineage_id: str, run_id: str) -> str:
    """A run of an erased lineage: TERMINATED (its deletion pending) or already NOT_FOUND."""
    try:
        description = await client.temporal.get_workflow_handle(lineage_workflow_id(lineage_id), run_id=run_id).describe()
    except RPCError as error:
        assert error.status == RPCStatusCode.NOT_FOUND, error
        return "NOT_FOUND"
    assert description.status != WorkflowExecutionStatus.RUNNING
    return description.status.name if description.status else "?"


# ---- delete_lineage ---------------------------------------------------------------------------


async def test_delete_lineage_erases_every_row_and_the_id_comes_back_empty(client, db):
    sid = unique_id("py-erase")
    await client.create_session(sid)
    await grow(client, sid, 3)
    await client.replace_tail(sid, 1)  # a message taken back: an archived row
    before = await rows_of(db, sid)
    runs = await run_ids(client, sid)
    assert before["lineages"] == 1 and before["sessions"] == 4 and before["compactions"] >= 3 and before["appendKeys"] == 3, before
    assert runs

    erased = await client.delete_lineage(f"{sid}--g2")  # any session id of the lineage
    after = await rows_of(db, sid)
    print(json.dumps({"erase": sid, "before": before, "after": after, "runs": len(runs), "answer": erased}))
    assert after == NONE
    assert erased["lineageId"] == sid
    assert erased["workflowRuns"] == len(runs)
    # Terminated; Temporal deletes the runs in the background (not waited for).
    assert {await ended_or_gone(client, sid, run) for run in runs} <= {"TERMINATED", "NOT_FOUND"}
    for call in (lambda: client.transcript(sid), lambda: client.lineage(f"{sid}--g3"), lambda: client.append(sid, [user("late")])):
        with pytest.raises(SessionNotFoundError):
            await call()
    with pytest.raises(SessionNotFoundError):
        await client.delete_lineage(sid)  # erased already
    with pytest.raises(InvalidInputError) as refused:
        await client.delete_lineage("")
    assert refused.value.field == "sessionId"

    # The same id again: a new lineage, empty, with other settings, and it compacts.
    again = await client.create_session(sid, mode="in_place", dialect="anthropic")
    assert again["mode"] == "in_place" and again["dialect"] == "anthropic"
    transcript = await client.transcript(sid)
    assert transcript["messages"] == [] and transcript["dialect"] == "anthropic"
    await client.append(sid, conversation(5)[1:])
    assert (await client.compact(sid, force=True))["outcome"] == "compacted"
    rows = await rows_of(db, sid)
    assert rows["sessions"] == 1 and rows["compactions"] == 1 and rows["appendKeys"] == 0, rows
    await clean(db, sid)


async def test_a_compaction_running_when_the_erase_lands_gets_a_typed_error_and_writes_nothing(client, db):
    sid = unique_id("py-erase-race")
    await client.create_session(sid)
    await client.append(sid, conversation(8))
    compaction = asyncio.ensure_future(client.compact(sid, force=True))
    deadline = time.monotonic() + 10
    while not (await client.state(sid)).get("inFlight"):  # summarising (the fake model takes 300 ms)
        assert not compaction.done() and time.monotonic() < deadline, "no compaction ran"
        await asyncio.sleep(0.02)
    await client.delete_lineage(sid)
    with pytest.raises(SessionCompactionError) as answered:
        await compaction
    # The summary ends within the second; its commit finds a closed lineage, then none, and writes nothing.
    await asyncio.sleep(1.0)
    rows = await rows_of(db, sid)
    print(json.dumps({"eraseDuringCompaction": sid, "answer": type(answered.value).__name__, "rowsAfter": rows}))
    assert isinstance(answered.value, (LineageClosedError, SessionNotFoundError)), answered.value
    assert rows == NONE
    # The same id again compacts: one compaction, one rotation.
    await client.create_session(sid)
    await client.append(sid, conversation(8))
    assert (await client.compact(sid, force=True))["outcome"] == "compacted"
    rows = await rows_of(db, sid)
    assert rows["sessions"] == 2 and rows["compactions"] == 1, rows
    await clean(db, sid)


async def test_delete_from_python_while_typescript_appends(client, db):
    sid = unique_id("py-erase-ts")
    await client.create_session(sid)
    await client.append(sid, conversation(4))
    appender = await asyncio.create_subprocess_exec(
        "node", "--import", "tsx", str(PROJECT_ROOT / "test/support/append-loop.ts"), sid, "--report-refusals",
        cwd=PROJECT_ROOT, env=os.environ, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=sys.stderr,
    )
    assert appender.stdin is not None and appender.stdout is not None
    lines: list[tuple[float, str]] = []  # (when read, line)

    async def read() -> None:
        async for line in appender.stdout:  # type: ignore[union-attr]
            lines.append((time.monotonic(), line.decode().strip()))

    def seen(kind: str) -> list[str]:
        return [text for _, text in lines if text.startswith(kind + " ")]

    reader = asyncio.create_task(read())
    try:
        deadline = time.monotonic() + 60
        while len(seen("acked")) < 10:  # TypeScript is appending, two writers
            assert time.monotonic() < deadline and appender.returncode is None, "the TypeScript appender did not start"
            await asyncio.sleep(0.05)
        erased = await client.delete_lineage(sid)
        erased_at = time.monotonic()
        while len(seen("refused")) < 10:  # each writer refused, and refused again
            assert time.monotonic() < deadline and appender.returncode is None, f"the appender was not refused: {lines[-5:]}"
            await asyncio.sleep(0.05)
        appender.stdin.close()
        assert await asyncio.wait_for(appender.wait(), 60) == 0  # no untyped error: it would have failed the process
        await reader
    finally:
        if appender.returncode is None:
            appender.kill()
            await appender.wait()
    refusals = [text.split(" ") for text in seen("refused")]
    names = {r[1] for r in refusals}
    assert names <= {"LineageClosedError", "SessionNotFoundError", "LineageErasedError"}, names
    # Per writer: once refused, never acknowledged again (the lineage stays closed, then gone).
    for w in (0, 1):
        mine = [text for _, text in lines if text.split(" ")[-1].startswith(f"ts{w}-")]
        first = next((i for i, text in enumerate(mine) if text.startswith("refused ")), None)
        assert first is not None, f"writer {w} was never refused"
        assert all(text.startswith("refused ") for text in mine[first:]), mine[first:][:5]
    # Acknowledgements read after the erase returned (committed before the close, printed or read late): a figure, not a rule.
    acked_late = [text for at, text in lines if at > erased_at and text.startswith("acked ")]
    done = seen("done")
    assert done == [f"done {len(seen('acked'))}"]
    after = await rows_of(db, sid)
    print(json.dumps({
        "eraseWhileAppending": sid, "acked": len(seen("acked")), "refused": {n: sum(r[1] == n for r in refusals) for n in sorted(names)},
        "ackedReadAfterErase": len(acked_late), "erasedMessages": erased["messages"], "rowsAfter": after,
    }))
    assert after == NONE
    assert await audit_sql(db, sid) == dict.fromkeys(AUDIT_KEYS, 0)  # nothing left to count


# ---- retention ---------------------------------------------------------------------------------


async def test_run_retention_prunes_ended_sessions_keeps_the_head_and_the_audit_counts_the_pruned(client, db):
    sid = unique_id("py-retain")
    await client.create_session(sid)
    await grow(client, sid, 3)
    head = await client.transcript(sid)
    lineage_rows = "select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s"
    ended = lineage_rows + " and s.ended_at is not null"
    dead_before = await count(db, ended, sid)
    pruned_before = await count(db, "select count(*) from pruned_messages where lineage_id = %s", sid)
    assert dead_before > 10 and pruned_before == 0

    # Retention prunes the whole database (every test's ended sessions): in batches of a quarter of it.
    everywhere = await count(db, "select count(*) from messages m join sessions s on s.id = m.session_id where s.ended_at is not null")
    batch = -(-everywhere // 4)
    totals = await client.run_retention({"endedSessionDays": 0, "archivedDays": None}, batch=batch)
    assert set(totals) >= {"batches", "messages", "compactions", "appendKeys", "prunedRanges", "exported"}
    assert totals["batches"] >= 4, totals
    dead_after = await count(db, ended, sid)
    pruned = await rows_of(db, sid)
    present = await count(db, "select count(distinct m.lineage_seq) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s and m.lineage_seq is not null", sid)
    appended = await count(db, "select appended_count from lineages where id = %s", sid)
    print(json.dumps({"retention": sid, "endedRowsEverywhere": everywhere, "batch": batch, "endedRowsBefore": dead_before, "endedRowsAfter": dead_after, "rowsAfter": pruned,
                      "seqsPresent": present, "appended": appended, "totals": totals}))
    assert dead_after == 0
    assert await client.transcript(sid) == head  # the head exactly as it was, seqs too
    assert pruned["pruned"] > 0 and pruned["sessions"] == 4
    # Without its pruned ranges the lineage would miss sequence numbers: the audit needed them.
    assert present < appended
    await clean(db, sid)
    # The lineage compacts on after retention.
    await client.append(sid, conversation(3)[1:])
    assert (await client.compact((await client.transcript(sid))["sessionId"], force=True))["outcome"] == "compacted"
    await clean(db, sid)
    LINEAGES.discard(sid)
    # Erased, it leaves nothing, its pruned ranges included.
    await client.delete_lineage(sid)
    assert await rows_of(db, sid) == NONE


async def test_a_manual_retention_run_while_one_is_running_is_refused_and_starts_nothing(client):
    """A manual run still running (here: one no worker picks up, so it stays running) makes the
    next manual run from this client fail with RetentionRunningError; nothing else is started."""
    workflow_id = manual_retention_workflow_id(client.config.task_queue)
    running = await client.temporal.start_workflow(
        "retentionWorkflow", {"policy": {"endedSessionDays": 0}, "batch": 10}, id=workflow_id, task_queue=f"{client.config.task_queue}-nobody-polls"
    )
    try:
        with pytest.raises(RetentionRunningError) as refused:
            await asyncio.wait_for(client.run_retention({"endedSessionDays": 0}), timeout=30)
        assert refused.value.workflow_id == workflow_id
        assert (await running.describe()).run_id == running.result_run_id
    finally:
        await running.terminate("test over")
    assert (await running.describe()).status == WorkflowExecutionStatus.TERMINATED


async def test_retention_policy_is_checked_as_in_typescript(client):
    """The same refusals, with the same field names, as checkRetentionPolicy (src/client/retention.ts),
    run here on both sides; nothing is started."""
    cases: list[tuple[Any, Any]] = [
        ([], 1000), ("30", 1000), (None, 1000), ({}, 1000), ({"endedSessionDays": None}, 1000),
        ({"endedDays": 3}, 1000), ({"endedSessionDays": -1}, 1000), ({"archivedDays": "7"}, 1000),
        ({"auditDays": True}, 1000), ({"appendKeyDays": 1, "extra": None}, 1000),
        ({"endedSessionDays": 1}, 0), ({"endedSessionDays": 1}, 100_001), ({"endedSessionDays": 1}, 2.5),
        ({"endedSessionDays": 1}, "10"), ({"endedSessionDays": 0.5, "appendKeyDays": 30}, 10),
    ]
    script = """
    const { ScheduleNotFoundError } = require('@temporalio/client');
    const { runRetention } = require('./src/client/retention');
    const temporal = {
      schedule: { getHandle: () => ({ describe: async () => { throw new ScheduleNotFoundError('no schedule', 'x'); } }) },
      workflow: { start: async () => ({ result: async () => 'started' }) },
    };
    (async () => {
      const out = [];
      for (const [policy, batch] of input) {
        try { out.push({ ok: await runRetention(temporal, 'q', policy, { batch }) }); }
        catch (error) { out.push({ field: error.field, name: error.name }); }
      }
      console.log(JSON.stringify(out));
    })();
    """
    typescript = await asyncio.to_thread(run_typescript, script, cases)
    python: list[dict[str, Any]] = []
    started: list[Any] = []

    class Started:
        async def result(self) -> str:
            return "started"

    async def start(*args: Any, **kwargs: Any) -> Started:
        started.append(args)
        return Started()

    async def no_schedule() -> None:
        return None

    original = client.temporal.start_workflow, client.operator._running_scheduled_retention
    client.temporal.start_workflow = start  # type: ignore[method-assign,assignment]
    client.operator._running_scheduled_retention = no_schedule  # type: ignore[method-assign]
    try:
        for policy, batch in cases:
            try:
                python.append({"ok": await client.run_retention(policy, batch=batch)})
            except InvalidInputError as error:
                python.append({"field": error.field, "name": "InvalidInputError"})
    finally:
        client.temporal.start_workflow, client.operator._running_scheduled_retention = original  # type: ignore[method-assign]
    assert python == typescript
    assert sum("ok" in r for r in python) == 1 and started[0][1] == {"policy": {"endedSessionDays": 0.5, "appendKeyDays": 30}, "batch": 10}
    # JSON cannot carry these; the rule is the same (a finite number).
    for value in (float("nan"), float("inf")):
        with pytest.raises(InvalidInputError) as refused:
            await client.run_retention({"auditDays": value})
        assert refused.value.field == "policy.auditDays"
    for every in ("", "soon", "0s", "-1h", 5):
        with pytest.raises(InvalidInputError) as refused:
            await client.schedule_retention({"endedSessionDays": 1}, every)  # type: ignore[arg-type]
        assert refused.value.field == "every"
    with pytest.raises(InvalidInputError) as refused:
        await client.schedule_retention({"endedSessionDays": -1}, "24h")
    assert refused.value.field == "policy.endedSessionDays"


async def test_schedule_retention_then_unschedule(client, db):
    sid = unique_id("py-scheduled")
    await client.create_session(sid)
    await grow(client, sid, 2)
    assert await count(db, "select count(*) from append_keys where lineage_id = %s", sid) == 2
    scheduled = await client.schedule_retention({"endedSessionDays": 30}, every="1 day")
    try:
        assert scheduled == {"scheduleId": "session-compaction-retention", "created": True}
        # Scheduled again: the same schedule, its policy and interval replaced.
        again = await client.schedule_retention({"endedSessionDays": 0, "appendKeyDays": 0}, every="12h", batch=50)
        assert again == {"scheduleId": "session-compaction-retention", "created": False}
        handle = client.temporal.get_schedule_handle(scheduled["scheduleId"])
        described = await handle.describe()
        assert [i.every.total_seconds() for i in described.schedule.spec.intervals] == [12 * 3600]
        assert described.schedule.policy.overlap.name == "SKIP"
        # Triggered now: the worker runs the Python-made input.
        await handle.trigger()
        workflow_id = None
        for _ in range(100):
            actions = (await handle.describe()).info.recent_actions
            if actions:
                workflow_id = actions[-1].action.workflow_id
                break
            await asyncio.sleep(0.1)
        assert workflow_id, "the schedule started no workflow"
        totals = await client.temporal.get_workflow_handle(workflow_id).result()
        assert totals["messages"] > 0
        assert await count(db, "select count(*) from append_keys where lineage_id = %s", sid) == 0
        assert await count(db, "select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s and s.ended_at is not null", sid) == 0
    finally:
        assert await client.unschedule_retention() is True
    assert await client.unschedule_retention() is False
    await clean(db, sid)


# ---- the Agents SDK session's clear ------------------------------------------------------------


async def test_clear_session_forgets_items_and_operation_ids(client, db):
    sid = unique_id("py-agents-clear")
    session = await CompactingSession.open(client, sid, source="py-tests", compact_at_tokens=50_000)
    await session.add_items([user("one"), user("two"), user("three")])
    assert await session.get_items(2) == [user("two"), user("three")]
    assert await session.get_items(0) == []
    assert await session.pop_item() == user("three")
    assert await session.get_items() == [user("one"), user("two")]
    # A keyed write (the Python SDK has no operation ids: an append key is what the lineage remembers).
    assert (await client.append(sid, [user("keyed")], append_key="c-1"))["replayed"] is False
    assert (await client.append(sid, [user("keyed")], append_key="c-1"))["replayed"] is True
    before = await rows_of(db, sid)
    await session.clear_session()
    after = await rows_of(db, sid)
    print(json.dumps({"clear": sid, "before": before, "after": after}))
    assert before["messages"] == 4 and before["appendKeys"] == 1  # 3 + 1 keyed; the popped one stays, archived
    assert after == {**NONE, "lineages": 1, "sessions": 1}  # erased, then created again: nothing archived is left
    assert await session.get_items() == []
    assert await session.pop_item() is None
    # Cleared, the lineage forgets its keys: the same key stores again.
    assert (await client.append(sid, [user("again")], append_key="c-1"))["replayed"] is False
    assert await session.get_items() == [user("again")]
    lineage = await client.lineage(sid)
    assert [s["sessionId"] for s in lineage["sessions"]] == [sid]
    assert (lineage["source"], lineage["compactAtTokens"], lineage["dialect"], lineage["mode"]) == ("py-tests", 50_000, "openai-responses", "rotate")

    # A session wrapped (not opened) is created again with the lineage's own settings; one
    # erased already by someone else is created again all the same.
    other = unique_id("py-agents-wrap")
    await client.create_session(other, mode="in_place", source="wrapped", dialect="openai-agents")
    wrapped = CompactingSession(client, other, dialect="openai-agents")
    await wrapped.add_items([user("x")])
    await wrapped.clear_session()
    assert await wrapped.get_items() == []
    assert {k: (await client.lineage(other))[k] for k in ("mode", "source", "dialect")} == {"mode": "in_place", "source": "wrapped", "dialect": "openai-agents"}
    await client.delete_lineage(other)
    await wrapped.clear_session()
    assert (await client.lineage(other))["mode"] == "in_place" and await wrapped.get_items() == []
    await clean(db, sid)
    await clean(db, other)


async def test_a_closed_lineage_refuses_appends_until_erased(client, db):
    sid = unique_id("py-closed")
    await client.create_session(sid)
    await client.append(sid, conversation(2))
    await client.close_session(sid)
    with pytest.raises(LineageClosedError):
        await client.append(sid, [user("late")])
    with pytest.raises(LineageClosedError):
        await client.create_session(sid)
    await client.delete_lineage(sid)
    assert await rows_of(db, sid) == NONE
    await client.create_session(sid)
    assert (await client.append(sid, [user("new")]))["sessionId"] == sid
    await clean(db, sid)


async def test_an_old_writer_is_refused_once_the_lineage_is_erased_and_created_again(client, db):
    """A client holds the incarnation of the lineage it writes to (as test/stack/incarnation.test.ts):
    after another client erased the lineage and created its id again, the old writer's append
    and its keyed resend of a batch acknowledged before the erase are LineageErasedError, and
    nothing of them is stored; once it creates the session itself it writes to the new lineage."""
    sid = unique_id("py-incarnation")
    await client.create_session(sid)
    old_writer = await connect()
    try:
        acked = await old_writer.append(sid, conversation(2), append_key=f"{sid}-k1")
        assert acked["replayed"] is False
        await client.delete_lineage(sid)
        await client.create_session(sid)
        await client.append(sid, [user("the new lineage's first message")])
        with pytest.raises(LineageErasedError):
            await old_writer.append(sid, [user("late from the old writer")])
        with pytest.raises(LineageErasedError):
            await old_writer.append(sid, conversation(2), append_key=f"{sid}-k1")
        with pytest.raises(LineageErasedError):
            await old_writer.replace_tail(sid, 1, replacement=[user("redo")])
        with pytest.raises(LineageErasedError):
            await old_writer.compact(sid, force=True)
        with pytest.raises(LineageErasedError):
            await old_writer.request_compaction(sid, force=True)
        assert await rows_of(db, sid) == NONE | {"lineages": 1, "sessions": 1, "messages": 1}
        await old_writer.create_session(sid)
        assert (await old_writer.append(sid, [user("now the new lineage's")]))["firstLineageSeq"] == 2
    finally:
        await old_writer.close()
    await clean(db, sid)


# ---- the project's audit ----------------------------------------------------------------------


async def test_the_project_audit_of_every_lineage_left_and_of_the_database_is_clean():
    """The project's own audit (auditLineage, and the whole database's audit, as `sessions audit`)
    of every lineage the tests above left, in one process: what this file's SQL counted, 0 each."""
    assert LINEAGES, "run with the tests above"
    reports = await asyncio.to_thread(run_typescript, AUDIT_SCRIPT, sorted(LINEAGES))
    for name, report in [*reports["lineages"].items(), ("whole database", reports["whole"])]:
        print(json.dumps({"audit": name, **{k: report[k] for k in AUDIT_KEYS}}))
        for key in AUDIT_KEYS:
            assert report[key] == 0, f"{name}: audit {key} {report[key]} ({report.get('details')})"
