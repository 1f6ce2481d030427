"""What an agent's workflow and its activities exchange (activities.py runs them, workflow.py
calls them; the Python twin of src/temporal/contract.ts): the lineage id in, and out only what
the workflow must decide on, the tool calls to run and the final output. The conversation
never crosses into workflow history: the activities read it from the lineage and append to
it. Plain dataclasses with no imports of the client, so a workflow sandbox takes them as
they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The activities' names, as a worker registers them (AgentActivities) and the workflow calls them.
MODEL_CALL = "lineage_agent_model_call"
TOOL_CALL = "lineage_agent_tool_call"
USER_INPUT = "lineage_agent_input"


@dataclass(frozen=True)
class AgentToolCall:
    """One tool call the model asked for (its input is the model's output, so it is in history once)."""

    #: The provider's call id (the tool result answers it).
    call_id: str
    name: str
    #: The call's arguments as the model gave them: parsed JSON when they parse, else the text.
    input: Any = None


@dataclass(frozen=True)
class AgentModelStep:
    """What one model call returns to the workflow."""

    #: The tool calls to run next; empty when the model answered.
    tool_calls: list[AgentToolCall] = field(default_factory=list)
    #: The model's final text when it called no tool.
    output: str | None = None
    #: Input tokens the provider reported for this call, when it did.
    input_tokens: int | None = None
    #: The head's size in tokens as the service estimates them (four characters a token): what compaction bounds.
    head_tokens: int = 0
    #: Messages in the head the model was sent (after compaction).
    head_messages: int = 0
    #: True when this attempt found its batch stored by an earlier attempt (the model was not called again).
    recovered: bool = False


@dataclass(frozen=True)
class AgentToolReceipt:
    """What a tool call returns to the workflow: a receipt, not the output (that went to the lineage)."""

    call_id: str
    #: Characters of the tool's output as appended (JSON text).
    bytes: int
    #: True when an earlier attempt had already appended it (the tool was not run again).
    recovered: bool = False


@dataclass(frozen=True)
class ModelCallInput:
    lineage_id: str


@dataclass(frozen=True)
class ToolCallInput:
    lineage_id: str
    call: AgentToolCall


@dataclass(frozen=True)
class UserInput:
    lineage_id: str
    #: The user's message, as text.
    text: str
