"""What the agent activities need of a model, whichever SDK calls it (the Python twin of
src/temporal/model.ts): one call on the lineage's head, and the dialect's shapes of what is
appended around it (the tool calls a stored batch holds, a tool's result, a user message).
``agents_sdk_model`` (agents_sdk_model.py) is the one the package ships, for the OpenAI Agents
SDK's ``Model``; any other is a small class with these members."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .contract import AgentToolCall


@dataclass(frozen=True)
class AgentModelAnswer:
    #: What the model returned, in the lineage's dialect: appended as one batch.
    messages: list[Any]
    #: The input tokens the provider reported, when it did.
    input_tokens: int | None = None


@dataclass(frozen=True)
class AgentStep:
    """The tool calls a batch the model returned holds, or its final text when it holds none."""

    tool_calls: list[AgentToolCall]
    output: str | None = None


class AgentModel(Protocol):
    #: The dialect of the lineages this model reads and writes.
    dialect: str

    async def call(self, messages: list[Any]) -> AgentModelAnswer:
        """One model call: the head in (compacted by the service at its threshold), what the model returned out (tools are not run here)."""
        ...

    def read_step(self, messages: Sequence[Any]) -> AgentStep: ...

    def tool_result(self, call: AgentToolCall, output: Any) -> list[Any]:
        """The messages that answer ``call`` with a tool's output (a string, or JSON)."""
        ...

    def user_message(self, text: str) -> Any: ...


def parse_arguments(text: Any) -> Any:
    """A tool call's arguments as the workflow gets them: parsed JSON when they parse, else the text."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def output_text(output: Any) -> str:
    """A tool's output as the tool result carries it: a string as it is, anything else as JSON."""
    return output if isinstance(output, str) else json.dumps(output)
