"""An agent that runs on Temporal with its conversation in a lineage, from Python
(session_compaction.temporal, docs/agents-on-temporal.md "Python"), on the real Temporal dev
server that scripts/python-tests.ts starts, with a Python worker of this test's own (its own
task queue, the workflow in the sandbox):

- the OpenAI Agents SDK's real ``OpenAIResponsesModel`` against the strict Responses fake
  (STRICT_RESPONSES_URL: a scripted agent's reasoning and tool calls, every request checked as
  OpenAI checks it; the script fails the run when it refused one), 30+ model calls whose tools
  answer 5 KB of JSON each;
- its workflow history: every model activity carries the lineage id in and at most the
  model's own output out, so history grows by the model's output per call (linearly), far
  below what the conversation would weigh;
- it continues as new at least twice, and each run's first model call reads exactly the head
  (JSON-equal) the previous run left;
- a model activity and a tool activity fail after their append on their first attempt (the
  faults land); the retries answer from what their key stored (the model is not called again,
  the tool not run again) and nothing is stored twice (the ledger by append key, and the audit).
- every run's history replays with the workflow as it is, and the replays store nothing.

The second test runs the same agent with compaction on (a lineage created with a threshold
its tool outputs pass every few calls, so the service's worker compacts while the agent
runs): the model calls read compacted heads and the strict fake accepts them; the heads stay
bounded while the conversation grows; continue-as-new carries the conversation; the lineage's
own records (its committed compactions, its rows by append key, the audit) show the
compactions happened and nothing was lost or stored twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI
from temporalio import activity
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from session_compaction import SessionsClient
from session_compaction.temporal import AgentActivities, AgentToolCall, activity_append_key
from session_compaction.temporal.agents_sdk_model import AgentsSdkModel, agents_sdk_model
from session_compaction.temporal.contract import MODEL_CALL, TOOL_CALL
from session_compaction.temporal.model import AgentModelAnswer

from .conftest import SUMMARY_PREFIX, json_equal, run_audit, unique_id
from .temporal_agent_workflows import BEFORE_CONTINUE_AS_NEW, CALLS_PER_RUN, NEXT_TASK, LineageAgent

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
from agents import FunctionTool, OpenAIResponsesModel, set_tracing_disabled  # noqa: E402

set_tracing_disabled(True)

#: Model calls the agent makes at least (it stops at the first answer past the budget).
MODEL_CALLS = 30
TOOL_NAMES = ["run_tests", "read_file", "grep", "edit_file", "list_dir"]
#: The first attempt of the n-th model activity and of the n-th tool activity fails after its append.
FAIL_MODEL_CALL = 7
FAIL_TOOL_CALL = 12


def tool_output(args: Any, call: AgentToolCall) -> dict[str, Any]:
    """A tool's answer: 5 KB of JSON, the same for the same call."""
    files: list[dict[str, Any]] = []
    out: dict[str, Any] = {"tool": call.name, "callId": call.call_id, "args": args, "ok": True, "files": files}
    i = 0
    while len(json.dumps(out)) < 5_000:
        digest = uuid.uuid5(uuid.NAMESPACE_URL, f"{call.call_id}/{i}").hex
        files.append({"path": f"src/module_{digest[:6]}.ts", "line": 10 + i, "match": f"export function parse_{digest[6:14]}(input: string) {{ return tokenize(input); }}"})
        i += 1
    return out


def function_tool_schema(name: str) -> FunctionTool:
    async def not_run(*_: Any) -> str:  # the workflow runs the tools, each an activity
        raise AssertionError("the model adapter never runs a tool")

    return FunctionTool(
        name=name,
        description=f"the {name} tool",
        params_json_schema={"type": "object", "properties": {}, "additionalProperties": True},
        on_invoke_tool=not_run,
        strict_json_schema=False,
    )


@dataclass
class Ledger:
    """What the test saw the agent's activities do."""

    #: (run id, append key, head) of every model call, in order.
    model_calls: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    calls_per_key: Counter[str] = field(default_factory=Counter)
    #: The head each run left, recorded just before it continued as new.
    heads_before_continue_as_new: list[list[Any]] = field(default_factory=list)
    #: (activity type, append key) of every attempt that failed after its append.
    faults: list[tuple[str, str]] = field(default_factory=list)
    #: (append key, attempt, whether the key had stored a batch) of every attempt's first read.
    reads: list[tuple[str, int, bool]] = field(default_factory=list)
    appends: Counter[str] = field(default_factory=Counter)
    tasks: int = 0
    #: Items each model call's answer held, by append key (what its batch must hold, once).
    answered: dict[str, int] = field(default_factory=dict)
    #: Every model request the provider refused (the strict fake answers a refusal with an error).
    refused: list[str] = field(default_factory=list)
    #: The session id of the head each model call read, by append key.
    head_sessions: dict[str, str] = field(default_factory=dict)
    #: The session id of the head each run left (with heads_before_continue_as_new).
    sessions_before_continue_as_new: list[str] = field(default_factory=list)


class RecordingModel:
    """The Agents SDK model, recording the head of every call (the model the worker registers)."""

    def __init__(self, inner: AgentsSdkModel, ledger: Ledger) -> None:
        self.inner, self.ledger, self.dialect = inner, ledger, inner.dialect

    async def call(self, messages: list[Any]) -> AgentModelAnswer:
        key = activity_append_key()
        self.ledger.model_calls.append((activity.info().workflow_run_id or "", key, messages))
        self.ledger.calls_per_key[key] += 1
        try:
            answer = await self.inner.call(messages)
        except Exception as error:
            self.ledger.refused.append(f"{type(error).__name__}: {error}")
            raise
        self.ledger.answered[key] = len(answer.messages)
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class FaultySessions:
    """The client, failing the first attempt of the chosen activities right after their append landed."""

    def __init__(self, inner: SessionsClient, ledger: Ledger) -> None:
        self.inner, self.ledger = inner, ledger

    async def appended_under(self, session_id: str, append_key: str) -> list[Any] | None:
        stored = await self.inner.appended_under(session_id, append_key)
        self.ledger.reads.append((append_key, activity.info().attempt, stored is not None))
        return stored

    async def append(self, session_id: str, messages: Any, *, append_key: str | None = None, **kwargs: Any) -> dict[str, Any]:
        appended = await self.inner.append(session_id, messages, append_key=append_key, **kwargs)
        info = activity.info()
        self.ledger.appends[info.activity_type] += 1
        nth = {MODEL_CALL: FAIL_MODEL_CALL, TOOL_CALL: FAIL_TOOL_CALL}.get(info.activity_type)
        if info.attempt == 1 and self.ledger.appends[info.activity_type] == nth:
            self.ledger.faults.append((info.activity_type, append_key or ""))
            raise RuntimeError(f"injected: the worker lost the answer of {info.activity_type} after its append")
        return appended

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class HeadRecordingSessions:
    """The client, recording which session's head each model activity read (a compaction moves the head to a new session)."""

    def __init__(self, inner: SessionsClient, ledger: Ledger) -> None:
        self.inner, self.ledger = inner, ledger

    async def transcript(self, session_id: str, **kwargs: Any) -> dict[str, Any]:
        transcript = await self.inner.transcript(session_id, **kwargs)
        if activity.in_activity() and activity.info().activity_type == MODEL_CALL:
            self.ledger.head_sessions[activity_append_key()] = transcript["sessionId"]
        return transcript

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def payload_bytes(payloads: Any) -> int:
    return sum(p.ByteSize() for p in payloads.payloads)


async def run_histories(temporal: Client, workflow_id: str, first_run_id: str) -> list[tuple[str, WorkflowHistory]]:
    """Every run of the workflow, in order, with its history."""
    runs: list[tuple[str, WorkflowHistory]] = []
    run_id: str | None = first_run_id
    while run_id:
        history = await temporal.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        runs.append((run_id, history))
        last = history.events[-1]
        run_id = (
            last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            if last.HasField("workflow_execution_continued_as_new_event_attributes")
            else None
        )
    return runs


@dataclass
class ModelCallEvents:
    run_id: str
    activity_id: str
    input_bytes: int
    result_bytes: int = 0
    #: History bytes of every run so far, summed, when this call completed.
    history_after: int = 0


def model_call_events(runs: list[tuple[str, WorkflowHistory]]) -> tuple[list[ModelCallEvents], int]:
    """The model activities of every run, with what they carried in and out, and the history's total bytes."""
    calls: list[ModelCallEvents] = []
    total = 0
    for run_id, history in runs:
        scheduled: dict[int, ModelCallEvents] = {}
        for event in history.events:
            total += event.ByteSize()
            if event.HasField("activity_task_scheduled_event_attributes"):
                a = event.activity_task_scheduled_event_attributes
                if a.activity_type.name == MODEL_CALL:
                    scheduled[event.event_id] = ModelCallEvents(run_id, a.activity_id, payload_bytes(a.input))
            if event.HasField("activity_task_completed_event_attributes"):
                c = event.activity_task_completed_event_attributes
                if c.scheduled_event_id in scheduled:
                    call = scheduled[c.scheduled_event_id]
                    call.result_bytes, call.history_after = payload_bytes(c.result), total
                    calls.append(call)
    return calls, total


def append_key_of(workflow_id: str, run_id: str, activity_id: str) -> str:
    """The key activity_append_key() makes for this activity (computed here from the history)."""
    return "temporal:" + hashlib.sha256(f"{workflow_id}\n{run_id}\n{activity_id}".encode()).hexdigest()[:48]


async def test_temporal_agent_keeps_its_conversation_in_the_lineage(client: SessionsClient, db: Any) -> None:
    temporal = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    lineage_id = unique_id("py-temporal-agent")
    task_queue = unique_id("py-temporal-agents")
    ledger = Ledger()
    await client.create_session(lineage_id, dialect="openai-responses")
    await client.append(lineage_id, [{"role": "user", "content": "Request 0: the parser drops unicode input; find why, fix it and run the tests."}])

    openai = AsyncOpenAI(base_url=os.environ["STRICT_RESPONSES_URL"], api_key="test-key", max_retries=0)
    model = agents_sdk_model(
        OpenAIResponsesModel("agent-model-python-temporal", openai),
        instructions="You are a coding agent. Use the tools.",
        tools=[function_tool_schema(name) for name in TOOL_NAMES],
    )
    activities = AgentActivities(FaultySessions(client, ledger), RecordingModel(model, ledger), {name: tool_output for name in TOOL_NAMES})  # type: ignore[arg-type]

    @activity.defn(name=NEXT_TASK)
    async def next_task(lineage: str) -> str | None:
        if len(ledger.model_calls) >= MODEL_CALLS:
            return None
        ledger.tasks += 1
        return f"Request {ledger.tasks}: now make the tokenizer handle surrogate pairs and add tests for them."

    @activity.defn(name=BEFORE_CONTINUE_AS_NEW)
    async def before_continue_as_new(lineage: str) -> None:
        ledger.heads_before_continue_as_new.append((await client.transcript(lineage, for_provider=True))["messages"])

    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("session_compaction"))
    async with Worker(
        temporal, task_queue=task_queue, workflows=[LineageAgent], activities=[*activities.all(), next_task, before_continue_as_new], workflow_runner=runner
    ):
        handle = await temporal.start_workflow(LineageAgent.run, lineage_id, id=f"agent-{lineage_id}", task_queue=task_queue)
        await handle.result()

    # ---- the faults landed, and their retries answered from what their key stored --------
    assert sorted(kind for kind, _ in ledger.faults) == [MODEL_CALL, TOOL_CALL], ledger.faults
    for _, key in ledger.faults:
        assert (key, 2, True) in ledger.reads, f"the retry of {key} did not find its first attempt's batch"
    assert all(n == 1 for n in ledger.calls_per_key.values()), f"a model activity called the model twice: {ledger.calls_per_key.most_common(3)}"
    assert len(ledger.model_calls) >= MODEL_CALLS

    # ---- nothing stored twice, nothing lost: the lineage's rows by append key ------------
    cursor = await db.execute(
        "select m.append_key, m.body from messages m join sessions s on s.id = m.session_id"
        " where s.lineage_id = %s and m.written_by_compaction is null order by m.lineage_seq",
        (lineage_id,),
    )
    rows = await cursor.fetchall()
    by_key: dict[str | None, list[Any]] = defaultdict(list)
    for key, body in rows:
        by_key[key].append(body)
    transcript = (await client.transcript(lineage_id))["messages"]
    assert json_equal(transcript, [body for _, body in rows]), "the head is not the appended messages in order"
    calls = [m["call_id"] for m in transcript if m.get("type") == "function_call"]
    outputs = [m["call_id"] for m in transcript if m.get("type") == "function_call_output"]
    assert len(calls) == len(set(calls)) and sorted(calls) == sorted(outputs), "a tool call without exactly one result"
    model_keys = {key for _, key, _ in ledger.model_calls}
    assert model_keys <= set(by_key), "a model call's batch is missing"
    report = run_audit()
    for check in ("forks", "orphans", "writesAfterEnd", "lostMessages", "duplicatedMessages", "sequenceGaps"):
        assert report[check] == 0, f"audit {check}: {report[check]} ({report.get('details')})"

    # ---- continue-as-new: at least twice, and each run starts from the head the last one left
    runs = await run_histories(temporal, handle.id, handle.first_execution_run_id or "")
    assert len(runs) >= 3, f"{len(runs)} runs"
    assert len(ledger.heads_before_continue_as_new) == len(runs) - 1
    for (run_id, _), head in zip(runs[1:], ledger.heads_before_continue_as_new):
        first = next(h for r, _, h in ledger.model_calls if r == run_id)
        assert json_equal(first, head), f"run {run_id} started from another head than the one the last run left"

    # ---- every run's history replays (the workflow is deterministic) and a replay stores nothing
    replayer = Replayer(workflows=[LineageAgent], workflow_runner=runner)
    for _, history in runs:
        await replayer.replay_workflow(history)
    count = await (await db.execute("select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = %s", (lineage_id,))).fetchone()
    assert count is not None and count[0] == len(rows)

    # ---- history: the lineage id in, at most the model's output out; linear in the calls --
    events, total = model_call_events(runs)
    assert len(events) == len(ledger.model_calls)
    conversation_bytes = 0
    for call in events:
        assert call.input_bytes <= 200, f"a model activity took {call.input_bytes} bytes in"
        batch = by_key[append_key_of(handle.id, call.run_id, call.activity_id)]
        assert batch, "no batch under a model call's key"
        assert call.result_bytes <= len(json.dumps(batch)) + 512, f"a model activity returned {call.result_bytes} bytes for a {len(json.dumps(batch))}-byte output"
    for _, _, head in ledger.model_calls:
        conversation_bytes += len(json.dumps(head))
    per_call = [b.history_after - a.history_after for a, b in zip(events, events[1:])]
    print(
        f"\n[python temporal agent] {len(events)} model calls, {sum(1 for m in transcript if m.get('type') == 'function_call_output')} tool calls,"
        f" {len(runs)} runs (continue-as-new every {CALLS_PER_RUN}); history {total:,} bytes in all,"
        f" after 10 / 20 / 30 calls {events[9].history_after:,} / {events[19].history_after:,} / {events[29].history_after:,};"
        f" per model call mean {total // len(events):,}, max {max(per_call):,};"
        f" the heads the model calls read (what the plain way sends into history) {conversation_bytes:,} bytes"
    )
    assert total < conversation_bytes / 5, f"history {total} bytes for {conversation_bytes} bytes of heads"
    assert total < 8_000 * len(events), f"history {total} bytes for {len(events)} model calls"


#: The compacting agent's threshold: its 5 KB tool outputs pass it every few model calls.
COMPACT_AT = 16_000
#: Model calls the compacting agent makes at least: four runs of CALLS_PER_RUN.
COMPACTING_MODEL_CALLS = 80


def head_tokens(head: list[Any]) -> int:
    """A head's size as the model activity estimates it (four characters a token)."""
    return -(-len(json.dumps(head)) // 4)


async def test_temporal_agent_keeps_going_while_its_lineage_compacts(client: SessionsClient, db: Any) -> None:
    """The same agent with compaction on: the lineage compacts at COMPACT_AT tokens while the
    agent runs (the service's worker, the summariser 300 ms), so its model calls read
    compacted heads, which the strict fake accepts; the heads stay bounded while the
    conversation grows; each continue-as-new carries the conversation (the head the last run
    left, or its compaction); nothing is lost or stored twice."""
    temporal = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    lineage_id = unique_id("py-temporal-compacting")
    task_queue = unique_id("py-temporal-compacting")
    ledger = Ledger()
    await client.create_session(lineage_id, dialect="openai-responses", compact_at_tokens=COMPACT_AT)
    await client.append(lineage_id, [{"role": "user", "content": "Request 0: the parser drops unicode input; find why, fix it and run the tests."}])

    openai = AsyncOpenAI(base_url=os.environ["STRICT_RESPONSES_URL"], api_key="test-key", max_retries=0)
    model = agents_sdk_model(
        OpenAIResponsesModel("agent-model-python-compacting", openai),
        instructions="You are a coding agent. Use the tools.",
        tools=[function_tool_schema(name) for name in TOOL_NAMES],
    )
    activities = AgentActivities(HeadRecordingSessions(client, ledger), RecordingModel(model, ledger), {name: tool_output for name in TOOL_NAMES})  # type: ignore[arg-type]

    @activity.defn(name=NEXT_TASK)
    async def next_task(lineage: str) -> str | None:
        if len(ledger.model_calls) >= COMPACTING_MODEL_CALLS:
            return None
        ledger.tasks += 1
        return f"Request {ledger.tasks}: now make the tokenizer handle surrogate pairs and add tests for them."

    @activity.defn(name=BEFORE_CONTINUE_AS_NEW)
    async def before_continue_as_new(lineage: str) -> None:
        transcript = await client.transcript(lineage, for_provider=True)
        ledger.heads_before_continue_as_new.append(transcript["messages"])
        ledger.sessions_before_continue_as_new.append(transcript["sessionId"])

    runner = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("session_compaction"))
    async with Worker(
        temporal, task_queue=task_queue, workflows=[LineageAgent], activities=[*activities.all(), next_task, before_continue_as_new], workflow_runner=runner
    ):
        handle = await temporal.start_workflow(LineageAgent.run, lineage_id, id=f"agent-{lineage_id}", task_queue=task_queue)
        await handle.result()

    # ---- every model request accepted, each model call made once -----------------------
    assert ledger.refused == [], ledger.refused
    assert len(ledger.model_calls) >= COMPACTING_MODEL_CALLS
    assert all(n == 1 for n in ledger.calls_per_key.values()), f"a model activity called the model twice: {ledger.calls_per_key.most_common(3)}"

    # ---- the lineage compacted during the run (its own records, not the code's counters) -
    cursor = await db.execute(
        "select parent_session_id, child_session_id from compactions where lineage_id = %s and outcome = 'compacted' order by generation", (lineage_id,)
    )
    committed = await cursor.fetchall()
    compactions = len(committed)
    assert compactions >= 3, f"{compactions} compactions committed"
    heads = [(key, head) for _, key, head in ledger.model_calls]
    compacted_heads = [i for i, (key, _) in enumerate(heads) if ledger.head_sessions[key] != lineage_id]
    assert compacted_heads, "no model call read a compacted head"
    assert any(SUMMARY_PREFIX in json.dumps(head) for _, head in heads), "no model call was sent a summary"

    # ---- the heads stayed bounded while the conversation grew ---------------------------
    cursor = await db.execute(
        "select m.append_key, m.body from messages m join sessions s on s.id = m.session_id"
        " where s.lineage_id = %s and m.written_by_compaction is null order by m.lineage_seq",
        (lineage_id,),
    )
    rows = await cursor.fetchall()
    bodies = [body for _, body in rows]
    conversation_tokens = head_tokens(bodies)
    after_first = [head_tokens(head) for _, head in heads[compacted_heads[0] :]]
    max_head = max(after_first)
    assert max_head < 3 * COMPACT_AT, f"a head of {max_head} tokens after the first compaction (threshold {COMPACT_AT})"
    assert conversation_tokens > 3 * max_head, f"the conversation ({conversation_tokens} tokens) did not outgrow the heads ({max_head})"

    # ---- nothing lost, nothing stored twice: each model call's batch once, each tool call answered once
    per_key = Counter(key for key, _ in rows)
    for key, items in ledger.answered.items():
        assert per_key[key] == items, f"the batch under {key}: {per_key[key]} rows for {items} items"
    calls = [m["call_id"] for m in bodies if m.get("type") == "function_call"]
    outputs = [m["call_id"] for m in bodies if m.get("type") == "function_call_output"]
    assert len(calls) == len(set(calls)) and sorted(calls) == sorted(outputs), "a tool call without exactly one result"
    report = run_audit()
    for check in ("forks", "orphans", "writesAfterEnd", "lostMessages", "duplicatedMessages", "sequenceGaps"):
        assert report[check] == 0, f"audit {check}: {report[check]} ({report.get('details')})"

    # ---- continue-as-new carried the conversation: each run's first model call read the head
    # the last run left, or (a compaction committed in between) the head its compactions made of it
    runs = await run_histories(temporal, handle.id, handle.first_execution_run_id or "")
    assert len(runs) >= 4, f"{len(runs)} runs"
    assert len(ledger.heads_before_continue_as_new) == len(runs) - 1
    child_of = dict(committed)
    for (run_id, _), left, left_session in zip(runs[1:], ledger.heads_before_continue_as_new, ledger.sessions_before_continue_as_new):
        key, found = next((k, h) for r, k, h in ledger.model_calls if r == run_id)
        found_session = ledger.head_sessions[key]
        if found_session == left_session:
            assert json_equal(found, left), f"run {run_id} started from another head than the one the last run left"
        else:
            chain, session = [], left_session
            while session in child_of and session != found_session and len(chain) <= compactions:
                session = child_of[session]
                chain.append(session)
            assert session == found_session, f"run {run_id} read session {found_session}, not a compaction of {left_session}"

    print(
        f"\n[python temporal agent, compaction at {COMPACT_AT}] {len(heads)} model calls over {len(runs)} runs,"
        f" {compactions} compactions, {len(compacted_heads)} model calls read a compacted head;"
        f" head tokens max {max(head_tokens(h) for _, h in heads):,}, after the first compaction max {max_head:,};"
        f" the conversation {conversation_tokens:,} tokens; 0 requests refused"
    )
