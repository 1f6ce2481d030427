"""The activities of an agent that runs on Temporal with its conversation in a lineage (the
Python twin of src/temporal/activities.ts): the workflow holds only the lineage id; each
activity reads the lineage's head, calls the model or a tool, appends what came back, and
returns to the workflow only what it must decide on (contract.py). Workflow history grows by
the model's output per call, not by the conversation; compaction (the service's, at the
lineage's threshold) bounds what each model call sends.

    activities = AgentActivities(sessions, agents_sdk_model(model, tools=[read_file]), tools={"read_file": read_file_impl})
    Worker(client, task_queue="agents", workflows=[CodingAgent], activities=activities.all())

Idempotent under retries and replays: every append is keyed by the activity's own identity
(workflow id, run id, activity id: the same for every attempt of one activity, and never
another's), so an attempt that fails after its append (a worker killed, a lost answer) stores
nothing twice. A retried attempt first reads what its key stored
(``SessionsClient.appended_under``): when the first attempt's batch is there, it answers from
it without calling the model or the tool again, so the workflow decides on what the lineage
holds. A replay runs no activity at all.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..errors import InvalidInputError
from .contract import MODEL_CALL, TOOL_CALL, USER_INPUT, AgentModelStep, AgentToolCall, AgentToolReceipt, ModelCallInput, ToolCallInput, UserInput
from .model import AgentModel, output_text

if TYPE_CHECKING:
    from ..client import SessionsClient

#: A tool the workflow can have run: called with the model's arguments and the call; its output (a string, or JSON) goes to the lineage.
AgentTool = Callable[[Any, AgentToolCall], Union[Any, Awaitable[Any]]]


def activity_append_key() -> str:
    """The append key of the running activity: the same for each of its attempts, another for
    every other activity (the same key as the TypeScript activities make)."""
    info = activity.info()
    if not info.workflow_id or not info.workflow_run_id:
        raise ApplicationError("the agent activities run only as activities of a workflow", type="InvalidInputError", non_retryable=True)
    digest = hashlib.sha256(f"{info.workflow_id}\n{info.workflow_run_id}\n{info.activity_id}".encode()).hexdigest()
    return f"temporal:{digest[:48]}"


class AgentActivities:
    """The three activities, over a client, a model and the tools by the name the model calls
    them (a call to another name is answered with an error text). Register ``all()``."""

    def __init__(self, sessions: SessionsClient, model: AgentModel, tools: Mapping[str, AgentTool] | None = None) -> None:
        self.sessions = sessions
        self.model = model
        self.tools = dict(tools or {})

    def all(self) -> list[Callable[..., Any]]:
        return [self.model_call, self.tool_call, self.user_input]

    async def _append_once(self, lineage_id: str, key: str, batch: list[Any]) -> list[Any]:
        """Appends ``batch`` under ``key``; when an earlier attempt stored another batch under
        it (an attempt still running after its timeout, a model answering differently),
        answers that one."""
        try:
            await self.sessions.append(lineage_id, batch, append_key=key)
            return batch
        except InvalidInputError as error:
            stored = await self.sessions.appended_under(lineage_id, key)
            if stored is not None:
                return stored
            raise ApplicationError(str(error), type="InvalidInputError", non_retryable=True) from None

    @activity.defn(name=MODEL_CALL)
    async def model_call(self, request: ModelCallInput) -> AgentModelStep:
        """Reads the head, calls the model, appends what it returned (keyed), returns the step."""
        key = activity_append_key()
        stored = await self.sessions.appended_under(request.lineage_id, key)
        if stored is not None:
            step = self.model.read_step(stored)
            return AgentModelStep(tool_calls=step.tool_calls, output=step.output, recovered=True)
        head = (await self.sessions.transcript(request.lineage_id, for_provider=True))["messages"]
        answer = await self.model.call(head)
        batch = await self._append_once(request.lineage_id, key, answer.messages)
        step = self.model.read_step(batch)
        return AgentModelStep(
            tool_calls=step.tool_calls,
            output=step.output,
            input_tokens=answer.input_tokens,
            head_tokens=-(-len(json.dumps(head)) // 4),
            head_messages=len(head),
            recovered=batch is not answer.messages,
        )

    @activity.defn(name=TOOL_CALL)
    async def tool_call(self, request: ToolCallInput) -> AgentToolReceipt:
        """Runs one tool call and appends its result (keyed), returns a receipt."""
        key = activity_append_key()
        call = request.call
        stored = await self.sessions.appended_under(request.lineage_id, key)
        if stored is not None:
            return AgentToolReceipt(call_id=call.call_id, bytes=len(json.dumps(stored)), recovered=True)
        tool = self.tools.get(call.name)
        if tool is None:
            output: Any = {"error": f"no tool named {call.name}"}
        else:
            output = tool(call.input, call)
            if inspect.isawaitable(output):
                output = await output
        batch = self.model.tool_result(call, output)
        appended = await self._append_once(request.lineage_id, key, batch)
        return AgentToolReceipt(call_id=call.call_id, bytes=len(output_text(output)), recovered=appended is not batch)

    @activity.defn(name=USER_INPUT)
    async def user_input(self, request: UserInput) -> None:
        """Appends a user message (keyed)."""
        await self._append_once(request.lineage_id, activity_append_key(), [self.model.user_message(request.text)])
