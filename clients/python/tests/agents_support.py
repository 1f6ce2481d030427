"""What the OpenAI Agents SDK tests share with the second process they start
(tests/agents_process.py): the agent's function tools, a scripted coding agent on the SDK's
own scripted model (``agents.testing.ScriptedModel``), the ledger of every request that model
receives, checked against the Responses API's rules (RS-1 to RS-8 of provider-rules.md, the
ones a provider answers 400 to), and a session that records what the Runner appends."""

from __future__ import annotations

import asyncio
import copy
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # the tests' OPENAI_* point at the fake LLM

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402
from openai.types.responses.response_reasoning_item import ResponseReasoningItem, Summary  # noqa: E402

from session_compaction import connect  # noqa: E402
from session_compaction.agents import CompactingSession, call_model_input_filter  # noqa: E402

set_tracing_disabled(True)
# The session returns items as stored; the ids of a turn whose reasoning was summarised away
# are dropped where the SDK prepares each model call (call_model_input_filter), as the README says.
RUN_CONFIG = RunConfig(tracing_disabled=True, call_model_input_filter=call_model_input_filter)
#: The marker every summary this service writes starts with (SUMMARY_PREFIX, src/compaction/messages.ts).
SUMMARY_PREFIX = "[CONTEXT SUMMARY: reference only, written by session-compaction]"


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (as conftest's): key order aside, numbers by value, booleans not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---- the agent's tools: JSON text and numbers as text, as real tools answer ----------------


@function_tool
def read_file(path: str) -> str:
    """Reads a file of the repository and answers it as JSON."""
    body = f"export function parse(input: string) {{ /* {path} */ return tokenize(input).map(toNode); }}\n"
    return json.dumps({"path": path, "lines": 120 + len(path), "text": body * 4, "ok": True, "ratio": 0.5})


@function_tool
def count_uses(name: str) -> str:
    """Counts the uses of a name in the repository."""
    return str(40 + len(name))


TOOLS = [read_file, count_uses]


def user_item(text: str) -> dict[str, Any]:
    """The item the SDK makes of a string input."""
    return {"content": text, "role": "user"}


def is_summary(item: Any) -> bool:
    content = item.get("content") if isinstance(item, dict) else None
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def provider_problems(items: list[Any], emitted_with_reasoning: dict[str, str]) -> list[str]:
    """What the Responses API would answer 400 (or 404) to in this input: an output without
    its earlier call (RS-1), a call without its output (RS-2), reasoning not followed by its
    model item (RS-3), an item still carrying the id of a response whose reasoning is gone
    (RS-4; ``emitted_with_reasoning`` maps the ids the scripted model emitted with a reasoning
    item to that item's id), duplicate ids (RS-6), reasoning without ``summary`` (RS-8)."""
    problems: list[str] = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    ids: set[str] = set()
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            problems.append(f"input[{i}] is not an object")
            continue
        kind = m.get("type")
        if isinstance(m.get("id"), str):
            if m["id"] in ids:
                problems.append(f"RS-6 duplicate item id {m['id']}")
            ids.add(m["id"])
        if kind == "function_call":
            if m.get("call_id") in calls:
                problems.append(f"duplicate call id {m.get('call_id')}")
            calls[m.get("call_id")] = i
        elif kind == "function_call_output":
            if m.get("call_id") not in calls:
                problems.append(f"RS-1 no tool call found for function call output with call_id {m.get('call_id')}")
            answered.add(m.get("call_id"))
        elif kind == "reasoning":
            if not isinstance(m.get("summary"), list):
                problems.append(f"RS-8 reasoning {m.get('id')} without summary")
            after = items[i + 1] if i + 1 < len(items) else None
            if not isinstance(after, dict) or not (after.get("type") in ("function_call", "reasoning") or (after.get("role") == "assistant")):
                problems.append(f"RS-3 reasoning {m.get('id')} was provided without its required following item")
    problems += [f"RS-2 no tool output found for function call {c}" for c in calls if c not in answered]
    for m in items:
        reasoning = emitted_with_reasoning.get(m.get("id")) if isinstance(m, dict) and isinstance(m.get("id"), str) else None
        if reasoning is not None and reasoning not in ids:
            problems.append(f"RS-4 item {m['id']} was provided without its required reasoning item {reasoning}")
    return problems


class Script:
    """A scripted coding agent: for each run (one user request) the scripted model answers
    with tool calls (one, or two in parallel; with a reasoning item or without; sometimes a
    second tool step) and then a final message. Every request the model receives is checked
    (``provider_problems``, the run's own request present verbatim, and, for a runner that is
    alone on its conversation, the previous request too) and counted."""

    def __init__(self, tag: str, *, alone: bool = True) -> None:
        self.tag = tag
        self.alone = alone
        self.model = ScriptedModel()
        self.agent = Agent(name=f"coder-{tag}", instructions="You are a careful coding agent.", model=self.model, tools=TOOLS)
        self.requests = 0
        self.rejected: list[str] = []
        self.with_summary = 0
        self.emitted_with_reasoning: dict[str, str] = {}
        self.current: dict[str, Any] | None = None
        self.previous: dict[str, Any] | None = None
        #: Awaited with (run, index of the model call in the run) before each model call answers:
        #: the model's latency, e.g. waiting for a compaction that an append requested.
        self.before_call: Callable[[int, int], Awaitable[None]] | None = None
        #: (run, call index, outcome) of each compaction a model call waited for.
        self.awaited: list[tuple[int, int, str]] = []

    def request_text(self, turn: int) -> str:
        return f"[{self.tag}] Request {turn}: refactor module {turn}, keep its public API, and add tests for empty and unicode input."

    def final_text(self, turn: int) -> str:
        return f"[{self.tag}] Done with request {turn}: module {turn} is refactored and tested."

    def plan(self, turn: int) -> str:
        """Scripts the model calls of one run and answers its user request."""
        tag = f"{self.tag}{turn}"
        first = [("read_file", {"path": f"src/module{turn}.ts"})]
        if turn % 2 == 0:  # parallel calls
            first.append(("count_uses", {"name": f"parse{turn}"}))
        steps = [self._step(turn, 0, f"{tag}a", first, reasoning=turn % 3 != 1)]
        if turn % 3 == 0:  # a second tool step
            steps.append(self._step(turn, 1, f"{tag}b", [("count_uses", {"name": f"load{turn}"})], reasoning=False))
        steps.append(self._final(turn, len(steps), tag, reasoning=turn % 2 == 1))
        self.model.extend(steps)
        self.previous, self.current = self.current, user_item(self.request_text(turn))
        return self.request_text(turn)

    def _step(self, turn: int, index: int, tag: str, calls: list[tuple[str, dict[str, Any]]], *, reasoning: bool) -> ModelStep:
        def output() -> list[Any]:
            items: list[Any] = [function_call(name, args, call_id=f"call_{tag}{k}", item_id=f"fc_{tag}{k}") for k, (name, args) in enumerate(calls)]
            return self._with_reasoning(items, f"rs_{tag}", reasoning)

        return ModelStep.respond(self._responder(turn, index, output))

    def _final(self, turn: int, index: int, tag: str, *, reasoning: bool) -> ModelStep:
        def output() -> list[Any]:
            return self._with_reasoning([assistant_message(self.final_text(turn), item_id=f"msg_{tag}")], f"rs_{tag}z", reasoning)

        return ModelStep.respond(self._responder(turn, index, output))

    def _with_reasoning(self, items: list[Any], reasoning_id: str, reasoning: bool) -> list[Any]:
        if not reasoning:
            return items
        for item in items:
            self.emitted_with_reasoning[item.id] = reasoning_id
        thought = ResponseReasoningItem(
            id=reasoning_id, type="reasoning", summary=[Summary(type="summary_text", text=f"Plan for {reasoning_id}.")], encrypted_content=f"gAAAA{reasoning_id}=="
        )
        return [thought, *items]

    def _responder(self, turn: int, index: int, output: Callable[[], list[Any]]) -> Callable[[Any], Awaitable[list[Any]]]:
        async def respond(call: Any) -> list[Any]:
            if self.before_call is not None:
                await self.before_call(turn, index)
            self.check(call.input)
            return output()

        return respond

    def check(self, items: Any) -> None:
        self.requests += 1
        if not isinstance(items, list):
            self.rejected.append(f"request {self.requests}: input is not a list")
            return
        problems = provider_problems(items, self.emitted_with_reasoning)
        if self.current is not None and not any(json_equal(m, self.current) for m in items):
            problems.append("the run's own user request is not in the input")
        if self.alone and self.previous is not None and not any(json_equal(m, self.previous) for m in items):
            problems.append("the previous user request is not in the input")
        if any(is_summary(m) for m in items):
            self.with_summary += 1
        if problems:
            self.rejected.append(f"request {self.requests} ({len(items)} items): {'; '.join(problems)}")

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "rejected": self.rejected,
            "withSummary": self.with_summary,
            "unconsumed": self.model.remaining_steps,
            "awaited": self.awaited,
        }

    def wait_for_compactions(self, session: LedgerSession, *, at: frozenset[int] = frozenset({0}), timeout: float = 30.0) -> None:
        """Makes the model slower than a summary: a model call with one of the indexes ``at``
        (0: a run's first call) waits for the compaction the session's last append requested,
        once per request. Without it the scripted model is so fast that dozens of items are
        appended during one summary, and the compacted head is over the threshold again (which
        starts the automatic compactions' cooldown)."""
        seen: set[str] = set()

        async def wait(turn: int, index: int) -> None:
            if index not in at:
                return
            for requested in [r for r in session.requested if r not in seen]:
                seen.add(requested)
                answer = await session.client.wait_for_result(session.session_id, requested, timeout=timeout)
                self.awaited.append((turn, index, answer["outcome"]))

        self.before_call = wait


class LedgerSession(CompactingSession):
    """A CompactingSession that also keeps the test's own ledger of every item the Runner appended."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.appended: list[Any] = []
        #: The ids of the compactions its appends requested (at the lineage's threshold).
        self.requested: list[str] = []

    async def add_items(self, items: Any) -> None:
        await super().add_items(items)
        self.appended += copy.deepcopy(list(items))
        if items and self.last_append and self.last_append.get("compactionRequestId"):
            self.requested.append(self.last_append["compactionRequestId"])


async def open_ledger_session(client: Any, session_id: str, **options: Any) -> LedgerSession:
    opened = await CompactingSession.open(client, session_id, **options)
    return LedgerSession(client, opened.session_id, dialect=opened.dialect, session_settings=opened.session_settings)


def run_sync_program(session_id: str, tag: str, turns: int, options: dict[str, Any], *, alone: bool, on_ready: Callable[[], None] | None = None) -> dict[str, Any]:
    """A synchronous program on the SDK's ``Runner.run_sync``, as a script or a thread of a
    server runs it: its own event loop (the thread's default one, which run_sync reuses), its
    own client and session, ``turns`` runs. Answers the script's stats and what it appended."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        client = loop.run_until_complete(connect())
        try:
            session = loop.run_until_complete(open_ledger_session(client, session_id, **options))
            script = Script(tag, alone=alone)
            script.wait_for_compactions(session)
            if on_ready is not None:
                on_ready()
            for turn in range(turns):
                result = Runner.run_sync(script.agent, script.plan(turn), session=session, run_config=RUN_CONFIG)
                if result.final_output != script.final_text(turn):
                    script.rejected.append(f"run {turn} ended with {result.final_output!r}")
            return {**script.stats(), "appended": session.appended}
        finally:
            loop.run_until_complete(client.close())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
