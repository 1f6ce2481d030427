"""The OpenAI Agents SDK (``openai-agents``) on a CompactingSession, on the real stack: the
SDK's Runner (``run``, ``run_streamed``, ``run_sync`` in a thread and in a second process)
drives a scripted coding agent on the SDK's own scripted model (``agents.testing``) through
many runs with function tools answering JSON text, parallel calls and reasoning items, while
the service compacts the conversation at its threshold, mid-run too. Every request the model
receives is checked against the Responses API's rules by the test's own ledger
(tests/agents_support.py), and so is every message of the head against what the Runner
appended; the project's audit counts no fork, orphan or lost message. Also: the Session
protocol itself, two runners on one conversation, and pop_item / clear_session, also while a
compaction runs."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import sys
import time
from typing import Any

import pytest

try:
    import agents  # noqa: F401
except ImportError:  # pragma: no cover
    pytest.fail('the OpenAI Agents SDK is missing: pip install -e "clients/python[test,agents]"', pytrace=False)

from agents import Runner
from agents.memory import Session, SessionSettings, is_openai_responses_compaction_aware_session
from agents.run_config import CallModelData, ModelInputData
from agents.testing import assistant_message, function_call

from session_compaction import InvalidInputError, SessionCompactionError, SessionConflictError
from session_compaction.agents import CompactingSession, call_model_input_filter

from .agents_support import RUN_CONFIG, SUMMARY_PREFIX, Script, is_summary, json_equal, open_ledger_session, provider_problems, run_sync_program, user_item
from .conftest import run_typescript, unique_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

PYTHON_ROOT = pathlib.Path(__file__).resolve().parents[1]
AUDIT_KEYS = ("forks", "orphans", "writesAfterEnd", "lostMessages", "duplicatedMessages", "sequenceGaps", "duplicatedByKey")


#: The lineages this module's tests made, audited together by the last test (one process).
LINEAGES: dict[str, str] = {}

AUDIT_SCRIPT = """
const { SessionsClient } = require('./src/client');
(async () => {
  const client = await SessionsClient.connect();
  const reports = {};
  for (const id of input) reports[id] = await client.operator.auditLineage(id);
  await client.close();
  console.log(JSON.stringify(reports));
})().catch((error) => { console.error(error); process.exit(1); });
"""


async def settle(client, session_id: str, timeout: float = 30.0) -> None:
    """Waits until the lineage's workflow has no compaction queued or running."""
    deadline = time.monotonic() + timeout
    while True:
        state = await client.state(session_id)
        if not state.get("queue") and not state.get("inFlight"):
            return
        assert time.monotonic() < deadline, f"compactions still pending: {state}"
        await asyncio.sleep(0.05)


async def compactions(db, lineage_id: str) -> tuple[dict[str, int], list[str]]:
    """The lineage's compactions by outcome (its audit rows), and the reasons they gave."""
    cursor = await db.execute("select outcome, reason from compactions where lineage_id = %s order by started_at", (lineage_id,))
    outcomes: dict[str, int] = {}
    reasons: list[str] = []
    for outcome, reason in await cursor.fetchall():
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if reason:
            reasons.append(f"{outcome}: {reason}")
    return outcomes, reasons


async def check_lineage(client, db, session_id: str, appended: list[Any], scripts: list[dict[str, Any]], label: str, **extra: Any) -> dict[str, Any]:
    """After the runs: no request rejected, every model call consumed; every message of the head
    a summary or JSON-equal to an item the Runner appended (the ledger); no fork (one child per
    parent, sessions = generation + 1). Prints the measured numbers; the project's audit of the
    lineage runs in the last test."""
    await settle(client, session_id)
    for stats in scripts:
        assert stats["rejected"] == [], stats["rejected"][:5]
        assert stats["unconsumed"] == 0
    head = (await client.transcript(session_id))["messages"]
    for m in head:
        assert is_summary(m) or any(json_equal(m, a) for a in appended), f"a head item is not one the Runner appended: {m}"
    lineage = await client.lineage(session_id)
    parents = [s["parentSessionId"] for s in lineage["sessions"] if s["parentSessionId"]]
    forks = len(parents) - len(set(parents))
    assert forks == 0 and len(lineage["sessions"]) == lineage["generation"] + 1
    LINEAGES[session_id] = label
    outcomes, reasons = await compactions(db, lineage["lineageId"])
    measured = {
        "test": label,
        "runs": extra.pop("runs", None),
        "modelRequests": sum(s["requests"] for s in scripts),
        "requestsWithSummary": sum(s["withSummary"] for s in scripts),
        "rejected": sum(len(s["rejected"]) for s in scripts),
        "compactions": outcomes,
        "reasons": reasons,
        "generation": lineage["generation"],
        "forks": forks,
        "headItems": len(head),
        "appended": len(appended),
        "awaitedCompactions": [a for s in scripts for a in s.get("awaited", [])],
        **extra,
    }
    print(json.dumps(measured))
    return measured


async def run_turns(script: Script, session: CompactingSession, turns: range, *, streamed: bool = False) -> None:
    for turn in turns:
        text = script.plan(turn)
        if streamed:
            result = Runner.run_streamed(script.agent, text, session=session, run_config=RUN_CONFIG)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(script.agent, text, session=session, run_config=RUN_CONFIG)
        assert result.final_output == script.final_text(turn)


# ---- the ledger ------------------------------------------------------------------------------


async def test_the_ledger_refuses_what_the_responses_api_refuses():
    """The check every scripted model call runs: the valid input passes, each rule's break is named."""
    user = user_item("Fix it.")
    thought = {"id": "rs_1", "summary": [], "type": "reasoning"}
    call = {"arguments": "{}", "call_id": "c1", "name": "read_file", "type": "function_call", "id": "fc_1"}
    output = {"call_id": "c1", "output": '{"ok": true}', "type": "function_call_output"}
    message = {"id": "msg_1", "content": [{"text": "Done.", "type": "output_text", "annotations": []}], "role": "assistant", "type": "message"}
    emitted = {"fc_1": "rs_1"}
    assert provider_problems([user, thought, call, output, message], emitted) == []
    assert provider_problems([user, {k: v for k, v in call.items() if k != "id"}, output], emitted) == []  # its id dropped: fine
    broken = {
        "RS-1": [user, output],
        "RS-2": [user, thought, call],
        "RS-3": [user, thought, output],
        "RS-4": [user, call, output],
        "RS-6": [user, thought, call, output, message, message],
        "RS-8": [user, {"id": "rs_1", "type": "reasoning"}, call, output],
    }
    for rule, items in broken.items():
        assert any(p.startswith(rule) for p in provider_problems(items, emitted)), rule


# ---- the protocol ---------------------------------------------------------------------------


async def test_the_session_protocol(client):
    sid = unique_id("py-agents-protocol")
    session = await CompactingSession.open(client, sid)
    assert isinstance(session, Session) and is_openai_responses_compaction_aware_session(session)
    assert session.session_id == sid and session.dialect == "openai-responses"
    assert (await CompactingSession.open(client, sid)).session_id == sid  # idempotent
    with pytest.raises(SessionConflictError):
        await CompactingSession.open(client, sid, compact_at_tokens=500)

    await session.add_items([])  # nothing sent
    assert await session.get_items() == [] and session.last_append is None
    with pytest.raises(InvalidInputError) as bad:
        await session.add_items([user_item("fine"), 42])
    assert bad.value.field == "items[1]" and await session.get_items() == []  # all or nothing

    # Items as dicts (what the Runner passes) and as the SDK's pydantic models.
    call = function_call("read_file", {"path": "src/a.ts"}, call_id="call_p1", item_id="fc_p1")
    message = assistant_message("Read it.", item_id="msg_p1")
    output = {"type": "function_call_output", "call_id": "call_p1", "output": '{"lines": 12, "ok": true}'}
    await session.add_items([user_item("Read src/a.ts."), call, output, message])
    expected = [user_item("Read src/a.ts."), call.model_dump(exclude_unset=True, mode="json"), output, message.model_dump(exclude_unset=True, mode="json")]
    assert json_equal((await client.transcript(sid))["messages"], expected)  # stored exactly as given
    # get_items returns the items as stored, ids included (as the SDK's own sessions do).
    got = await session.get_items()
    assert json_equal(got, expected) and got[1]["id"] == "fc_p1" and got[3]["id"] == "msg_p1"
    # What the model is sent is the SDK's to prepare: call_model_input_filter drops the ids of
    # a turn cut off from its reasoning (after the summary, or at the input's start: RS-4);
    # this whole turn of a non-reasoning model keeps its ids.
    def sent(items: list[Any]) -> list[Any]:
        data = CallModelData(model_data=ModelInputData(input=items, instructions="be careful"), agent=None, context=None)
        ready = call_model_input_filter(data)
        assert ready.instructions == "be careful"
        return ready.input

    assert json_equal(sent(got), expected)
    summary = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"{SUMMARY_PREFIX}\nRead src/a.ts."}]}
    after_summary = sent([summary, expected[1], expected[2], user_item("And b?"), expected[3]])
    assert "id" not in after_summary[1] and after_summary[4]["id"] == "msg_p1"
    assert "id" not in sent(expected[3:])[0]  # a history cut by a limit, starting inside a turn
    assert session.last_append["count"] == 4 and session.last_append["sessionId"] == sid
    assert json_equal(await session.get_items(limit=2), expected[-2:])
    assert await session.get_items(limit=0) == [] and json_equal(await session.get_items(limit=-1), expected)
    limited = CompactingSession(client, sid, session_settings={"limit": 1})
    assert isinstance(limited.session_settings, SessionSettings) and json_equal(await limited.get_items(), expected[-1:])
    # Settings as the SDK's own sessions have them: empty by default, a misspelt key refused.
    assert session.session_settings == SessionSettings()
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        CompactingSession(client, sid, session_settings={"limitt": 1})
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        await CompactingSession.open(client, sid, session_settings={"limitt": 1})

    # The Runner's own compaction hook: nothing without force (the service compacts at its
    # threshold); with force, the lineage's workflow compacts the head now.
    await session.run_compaction({"response_id": "resp-1", "force": False})
    assert (await client.lineage(sid))["generation"] == 0 and session.last_compaction is None
    # Five answered turns, each with a tool call and a JSON output worth summarising, then a
    # sixth request: the unanswered request is carried verbatim, the answered ones are not.
    turns: list[Any] = []
    for i in range(6):
        turns.append(user_item(f"Now step {i}: keep going with the parser work, please."))
        if i == 5:
            break
        rows = [{"line": n, "token": f"tok_{i}_{n}", "kind": "identifier" if n % 3 else "keyword"} for n in range(12)]
        turns += [
            function_call("parse_file", {"path": f"src/step{i}.ts"}, call_id=f"call_s{i}", item_id=f"fc_s{i}"),
            {"type": "function_call_output", "call_id": f"call_s{i}", "output": json.dumps({"ok": True, "tokens": rows})},
            assistant_message(f"Step {i} parsed: 12 tokens, no errors.", item_id=f"msg_s{i}"),
        ]
    await session.add_items(turns)
    await session.run_compaction({"force": True})
    assert session.last_compaction["outcome"] == "compacted", session.last_compaction
    assert (await client.lineage(sid))["generation"] == 1 and session.session_id == sid
    head = await session.get_items()
    assert any(is_summary(m) for m in head)
    assert json_equal(head[-1], user_item("Now step 5: keep going with the parser work, please."))
    LINEAGES[sid] = "protocol"


# ---- the Runner -----------------------------------------------------------------------------


async def test_runner_run_many_turns_compacting_at_the_threshold(client, db):
    """Runner.run, 24 runs (56 model calls: single and parallel calls, reasoning or not, a
    second tool step every third run), on a lineage that compacts at 1500 tokens."""
    sid = unique_id("py-agents-run")
    session = await open_ledger_session(client, sid, compact_at_tokens=1500)
    script = Script("r")
    script.wait_for_compactions(session)
    await run_turns(script, session, range(24))
    measured = await check_lineage(client, db, sid, session.appended, [script.stats()], "run", runs=24)
    assert measured["compactions"].get("compacted", 0) >= 2 and measured["requestsWithSummary"] > 0
    head = (await client.transcript(sid))["messages"]
    assert any(json_equal(m, script.current) for m in head)  # the latest request, verbatim


@pytest.mark.parametrize("dialect", ["openai-responses", "openai-agents"])
async def test_run_streamed_with_compactions_landing_mid_run(client, db, dialect):
    """Runner.run_streamed, 10 runs; when a run's tool step requests a compaction, the model's
    next call waits for it to commit, so it lands between two steps of one run (the run's
    later items go to the new head), and the next run reads the compacted head."""
    sid = unique_id("py-agents-stream")
    session = await open_ledger_session(client, sid, compact_at_tokens=900, dialect=dialect, model="gpt-4o")
    script = Script("s")
    script.wait_for_compactions(session, at=frozenset({1}))  # a run's second model call: mid-run
    await run_turns(script, session, range(10), streamed=True)
    measured = await check_lineage(client, db, sid, session.appended, [script.stats()], f"run_streamed {dialect}", runs=10)
    assert any(index == 1 and outcome == "compacted" for _, index, outcome in script.awaited) and measured["requestsWithSummary"] > 0


async def test_run_sync_in_a_thread(client, db):
    """Runner.run_sync cannot run inside a running event loop: a synchronous program does it,
    in a thread with its own loop and client (run_sync reuses the thread's default loop)."""
    sid = unique_id("py-agents-sync")
    options = {"compact_at_tokens": 1200}
    await CompactingSession.open(client, sid, **options)
    stats = await asyncio.to_thread(run_sync_program, sid, "t", 8, options, alone=True)
    measured = await check_lineage(client, db, sid, stats["appended"], [stats], "run_sync thread", runs=8)
    assert measured["compactions"].get("compacted", 0) >= 1


async def test_two_runners_on_one_conversation(client, db):
    """Two CompactingSession objects over one id, two agents running at once (10 runs each),
    compactions at the threshold, and one runner forcing a compaction through the SDK's
    ``run_compaction`` hook between its runs."""
    sid = unique_id("py-agents-two")
    options = {"compact_at_tokens": 1500, "model": "gpt-4o"}
    first, second = await open_ledger_session(client, sid, **options), await open_ledger_session(client, sid, **options)
    a, b = Script("a", alone=False), Script("b", alone=False)
    a.wait_for_compactions(first)
    b.wait_for_compactions(second)

    async def runs(script: Script, session: CompactingSession, force_at: int | None) -> None:
        for turn in range(10):
            await run_turns(script, session, range(turn, turn + 1))
            if turn == force_at:
                await session.run_compaction({"force": True})

    await asyncio.gather(runs(a, first, 4), runs(b, second, None))
    assert first.last_compaction is not None and first.last_compaction["outcome"] == "compacted", first.last_compaction
    measured = await check_lineage(client, db, sid, first.appended + second.appended, [a.stats(), b.stats()], "two runners", runs=20)
    assert measured["compactions"].get("compacted", 0) >= 1


async def test_a_second_process_on_the_same_conversation(client, db):
    """A second OS process (Runner.run_sync, its own client) and this one (Runner.run) on one
    conversation at the same time, 6 runs each."""
    sid = unique_id("py-agents-proc")
    options = {"compact_at_tokens": 1500}
    session = await open_ledger_session(client, sid, **options)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.agents_process", sid, "p", "6", json.dumps(options),
        cwd=PYTHON_ROOT, env=os.environ, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        assert (await asyncio.wait_for(process.stdout.readline(), 120)).strip() == b"ready"
        process.stdin.write(b"go\n")
        await process.stdin.drain()
        here = Script("q", alone=False)
        here.wait_for_compactions(session)
        await run_turns(here, session, range(6))
        line = await asyncio.wait_for(process.stdout.readline(), 120)
        assert await asyncio.wait_for(process.wait(), 60) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    there = json.loads(line)
    measured = await check_lineage(client, db, sid, session.appended + there["appended"], [here.stats(), there], "second process", runs=12)
    assert measured["compactions"].get("compacted", 0) >= 1


# ---- pop_item and clear_session -------------------------------------------------------------


def history(tag: str, turns: int) -> list[dict[str, Any]]:
    """Items as the Runner stores them: user request, reasoning, call, JSON-text output, answer."""
    items: list[dict[str, Any]] = []
    for i in range(turns):
        items += [
            user_item(f"[{tag}] Request {i}: rename loadConfig{i} everywhere and keep the tests green, please."),
            {"id": f"rs_{tag}{i}", "summary": [{"text": f"Find loadConfig{i}.", "type": "summary_text"}], "type": "reasoning"},
            {"arguments": json.dumps({"path": f"src/config{i}.ts"}), "call_id": f"call_{tag}{i}", "name": "read_file", "type": "function_call", "id": f"fc_{tag}{i}"},
            {"call_id": f"call_{tag}{i}", "output": json.dumps({"lines": 120 + i, "text": "export function loadConfig() {}" * 3}), "type": "function_call_output"},
            {"id": f"msg_{tag}{i}", "content": [{"annotations": [], "text": f"Renamed loadConfig{i}.", "type": "output_text", "logprobs": []}], "role": "assistant", "status": "completed", "type": "message"},
        ]
    return items


async def compaction_running(client, sid: str, task: asyncio.Task[Any]) -> None:
    """Returns once the workflow runs a compaction (the fake LLM takes 300 ms to summarise)."""
    deadline = time.monotonic() + 10
    while not (await client.state(sid)).get("inFlight"):
        assert not task.done() and time.monotonic() < deadline
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.05)


async def test_pop_item_and_clear_session(client, db):
    sid = unique_id("py-agents-pop")
    session = await open_ledger_session(client, sid)
    items = history("p", 2)

    async def stored() -> list[Any]:
        """The head as stored, which get_items returns."""
        messages = (await client.transcript(sid))["messages"]
        assert json_equal(await session.get_items(), messages)
        return messages

    await session.add_items(items)
    popped = await session.pop_item()
    assert json_equal(popped, items[-1]) and json_equal(await stored(), items[:-1])
    for expected in reversed(items[:-1]):
        assert json_equal(await session.pop_item(), expected)
    assert await session.pop_item() is None and await stored() == []

    await session.add_items(items)
    await session.clear_session()
    assert await stored() == []
    lineage = await client.lineage(sid)
    assert lineage["generation"] == 0 and [s["sessionId"] for s in lineage["sessions"]] == [sid]  # the same lineage, never forked
    await session.add_items(items[:1])
    assert json_equal(await stored(), items[:1])

    # Popped while a compaction summarises: the item stays out of the head it commits.
    await session.add_items(history("q", 8))
    compaction = asyncio.ensure_future(client.compact(sid, force=True))
    await compaction_running(client, sid, compaction)
    popped = await session.pop_item()
    first = await compaction
    head = await stored()
    assert not any(json_equal(m, popped) for m in head), "a popped item came back with the compaction"
    assert json_equal(head[-1], history("q", 8)[-2])

    # Cleared while a compaction summarises: the lineage is erased under it, so the compaction
    # is answered with a typed error (never an untyped one), and the head stays empty.
    await session.add_items(history("r", 8))
    compaction = asyncio.ensure_future(client.compact((await client.transcript(sid))["sessionId"], force=True))  # the head: the first may have rotated
    await compaction_running(client, sid, compaction)
    await session.clear_session()
    try:
        second = await compaction
    except SessionCompactionError as error:
        second = {"outcome": type(error).__name__}
    assert await stored() == [], second
    await session.add_items(items[:1])
    assert json_equal(await stored(), items[:1])
    await check_lineage(client, db, sid, session.appended, [], "pop and clear", compactionOutcomes=[first["outcome"], second["outcome"]])


# ---- the project's audit ----------------------------------------------------------------------


async def test_the_audit_of_every_lineage_is_clean():
    """The project's own audit (auditLineage, as `sessions audit <id>`) of every lineage the
    tests above made, in one process: no fork, orphan, write after end, lost (messages taken
    back are not lost) or duplicated message, sequence gap."""
    assert LINEAGES, "run with the tests above"
    reports = await asyncio.to_thread(run_typescript, AUDIT_SCRIPT, sorted(LINEAGES))
    for session_id, report in reports.items():
        print(json.dumps({"audit": LINEAGES[session_id], **{k: report[k] for k in AUDIT_KEYS}}))
        for key in AUDIT_KEYS:
            assert report[key] == 0, f"{LINEAGES[session_id]}: audit {key} {report[key]} ({report.get('details')})"
