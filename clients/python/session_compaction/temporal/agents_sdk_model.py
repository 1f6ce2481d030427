"""The OpenAI Agents SDK's ``Model`` as an agent model (model.py) for lineages of the
``openai-responses`` dialect, the Responses API input items the Python SDK's Runner keeps:
``model.get_response`` inside the model activity, on the lineage's head, with the tools'
schemas (the workflow runs the tools, each an activity). The model is any of the SDK's
(``OpenAIResponsesModel``, ``OpenAIChatCompletionsModel``, a provider's ``get_model()``), built
in the worker. The Python twin of src/temporal/agents-sdk-model.ts; needs the ``agents`` extra.

    agents_sdk_model(OpenAIResponsesModel("gpt-5-mini", AsyncOpenAI()), instructions="...", tools=[read_file])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents import Model, ModelSettings, ModelTracing, Tool

from .contract import AgentToolCall
from .model import AgentModelAnswer, AgentStep, output_text, parse_arguments


class AgentsSdkModel:
    """An AgentModel (model.py) over one of the Agents SDK's models."""

    dialect = "openai-responses"

    def __init__(self, model: Model, *, instructions: str | None = None, tools: Sequence[Tool] = (), model_settings: ModelSettings | None = None) -> None:
        self.model = model
        self.instructions = instructions
        #: The function tools the model may call: their schemas are sent; the workflow runs them.
        self.tools = list(tools)
        self.model_settings = model_settings or ModelSettings()

    async def call(self, messages: list[Any]) -> AgentModelAnswer:
        response = await self.model.get_response(
            self.instructions,
            messages,
            self.model_settings,
            self.tools,
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        # The items as the Runner stores them (its to_input_items), as JSON.
        items = json.loads(json.dumps(response.to_input_items()))
        return AgentModelAnswer(messages=items, input_tokens=response.usage.input_tokens or None)

    def read_step(self, messages: Sequence[Any]) -> AgentStep:
        calls: list[AgentToolCall] = []
        texts: list[str] = []
        for item in messages:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                calls.append(AgentToolCall(call_id=str(item.get("call_id")), name=str(item.get("name")), input=parse_arguments(item.get("arguments"))))
            if item.get("type") == "message" and item.get("role") == "assistant" and isinstance(item.get("content"), list):
                texts.extend(p["text"] for p in item["content"] if isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str))
        return AgentStep(tool_calls=calls) if calls else AgentStep(tool_calls=[], output="".join(texts))

    def tool_result(self, call: AgentToolCall, output: Any) -> list[Any]:
        return [{"type": "function_call_output", "call_id": call.call_id, "output": output_text(output)}]

    def user_message(self, text: str) -> Any:
        return {"role": "user", "content": text}


def agents_sdk_model(model: Model, *, instructions: str | None = None, tools: Sequence[Tool] = (), model_settings: ModelSettings | None = None) -> AgentsSdkModel:
    """The agent model of ``model`` (any of the Agents SDK's), with the agent's instructions
    (sent with every call, not stored) and its function tools (their schemas are sent)."""
    return AgentsSdkModel(model, instructions=instructions, tools=tools, model_settings=model_settings)
