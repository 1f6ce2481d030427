"""Agents that run on Temporal with their conversation in a lineage (docs/agents-on-temporal.md,
"Python"): the activities (activities.py, for the worker), the loop a workflow runs
(workflow.py), what they exchange (contract.py) and what they need of a model (model.py;
agents_sdk_model.py adapts the OpenAI Agents SDK's models, with the ``agents`` extra)."""

from .activities import AgentActivities, AgentTool, activity_append_key
from .contract import AgentModelStep, AgentToolCall, AgentToolReceipt, ModelCallInput, ToolCallInput, UserInput
from .model import AgentModel, AgentModelAnswer, AgentStep
from .workflow import AgentLoop, AgentRunResult

__all__ = [
    "AgentActivities",
    "AgentLoop",
    "AgentModel",
    "AgentModelAnswer",
    "AgentModelStep",
    "AgentRunResult",
    "AgentStep",
    "AgentTool",
    "AgentToolCall",
    "AgentToolReceipt",
    "ModelCallInput",
    "ToolCallInput",
    "UserInput",
    "activity_append_key",
]
