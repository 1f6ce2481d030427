"""The workflow side of an agent whose conversation is a lineage (the Python twin of
src/temporal/workflow.ts): a loop of model calls and tool calls, each an activity
(activities.py), that carries only the lineage id. Deterministic: no I/O, no clock; what it
keeps between steps is the tool calls of the current step. Workflow history holds, per model
call, the lineage id in and the model's tool calls (or final text) out, and per tool call a
receipt.

    with workflow.unsafe.imports_passed_through():
        from session_compaction.temporal.workflow import AgentLoop

    @workflow.defn
    class CodingAgent:
        @workflow.run
        async def run(self, lineage_id: str) -> str:
            result = await AgentLoop(lineage_id, continue_as_new_after=50).run()
            return result.output or ""

After ``continue_as_new_after`` model calls in one run (or when Temporal suggests it), the loop
continues the workflow as new with the lineage id only, between a step's tool results and the
next model call; the next run's first model call reads the same head from the lineage.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RetryPolicy

from .contract import MODEL_CALL, TOOL_CALL, USER_INPUT, AgentModelStep, AgentToolCall, AgentToolReceipt, ModelCallInput, ToolCallInput, UserInput


@dataclass
class AgentRunResult:
    #: The model's final text, or None when ``max_model_calls`` stopped the run first.
    output: str | None = None
    #: Model calls this ``run()`` made.
    model_calls: int = 0
    #: Tool calls this ``run()`` ran.
    tool_calls: int = 0
    #: The head each model call was sent, in estimated tokens, in order.
    head_tokens: list[int] = field(default_factory=list)


class AgentLoop:
    """Calls the model activity and runs its tool calls (each an activity) until the model answers."""

    def __init__(
        self,
        lineage_id: str,
        *,
        continue_as_new_after: int = 100,
        continue_as_new: Callable[[], Awaitable[NoReturn]] | None = None,
        max_model_calls: float = math.inf,
        start_to_close_timeout: timedelta = timedelta(minutes=10),
        retry_policy: RetryPolicy | None = None,
        task_queue: str | None = None,
        sequential_tools: bool = False,
    ) -> None:
        """``continue_as_new`` is how the workflow continues as new carrying the lineage id
        (default: ``workflow.continue_as_new(lineage_id)``, for a workflow whose only argument is
        the lineage id). ``max_model_calls`` bounds one ``run()`` (it then returns with
        ``output`` None). The activities get ``start_to_close_timeout``, ``retry_policy`` and
        ``task_queue``."""
        self.lineage_id = lineage_id
        self.continue_as_new_after = continue_as_new_after
        self._continue_as_new = continue_as_new
        self.max_model_calls = max_model_calls
        self.sequential_tools = sequential_tools
        self._options: dict[str, Any] = {"start_to_close_timeout": start_to_close_timeout, "retry_policy": retry_policy, "task_queue": task_queue}
        #: Model calls this workflow run made so far (all of its ``run()``s).
        self.model_calls = 0

    async def say(self, text: str) -> None:
        """Appends a user message to the lineage (an activity, keyed: stored once)."""
        await workflow.execute_activity(USER_INPUT, UserInput(self.lineage_id, text), **self._options)

    async def _continue_as_new_now(self) -> NoReturn:
        if self._continue_as_new is not None:
            await self._continue_as_new()
        workflow.continue_as_new(self.lineage_id)

    async def _run_tools(self, calls: Sequence[AgentToolCall]) -> None:
        def one(call: AgentToolCall) -> Awaitable[AgentToolReceipt]:
            return workflow.execute_activity(TOOL_CALL, ToolCallInput(self.lineage_id, call), result_type=AgentToolReceipt, **self._options)

        if self.sequential_tools:
            for call in calls:
                await one(call)
        else:
            await asyncio.gather(*(one(call) for call in calls))

    async def run(self) -> AgentRunResult:
        """Calls the model and runs its tool calls until the model answers."""
        result = AgentRunResult()
        while result.model_calls < self.max_model_calls:
            step: AgentModelStep = await workflow.execute_activity(MODEL_CALL, ModelCallInput(self.lineage_id), result_type=AgentModelStep, **self._options)
            self.model_calls += 1
            result.model_calls += 1
            result.head_tokens.append(step.head_tokens)
            if not step.tool_calls:
                result.output = step.output or ""
                return result
            await self._run_tools(step.tool_calls)
            result.tool_calls += len(step.tool_calls)
            # Between a step's tool results and the next model call: the lineage ends with the
            # results, and the next run's first call reads them from it.
            if self.model_calls >= self.continue_as_new_after or workflow.info().is_continue_as_new_suggested():
                await self._continue_as_new_now()
        return result
