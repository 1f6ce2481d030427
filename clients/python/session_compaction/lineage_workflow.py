"""What the client does to a lineage's workflow besides sending compaction requests
(src/client/lineage-workflow.ts): its id and type, whether the run an Update went to was
terminated, and deleting its runs when the lineage is erased."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.service import RPCError

from .rpc_errors import is_workflow_not_found_error

WORKFLOW_TYPE = "sessionLineageWorkflow"
WORKFLOW_ID_PREFIX = "session-lineage/"


def lineage_workflow_id(lineage_id: str) -> str:
    return f"{WORKFLOW_ID_PREFIX}{lineage_id}"


async def run_terminated(temporal: Client, operation: WithStartWorkflowOperation[Any, Any]) -> bool:
    """Whether the run an Update went to was terminated (or is gone already: erased)."""
    try:
        handle = await asyncio.wait_for(operation.workflow_handle(), 1.0)
        run_id = handle.result_run_id or handle.run_id
        if not run_id:
            return False
        description = await temporal.get_workflow_handle(handle.id, run_id=run_id).describe()
    except RPCError as error:
        return is_workflow_not_found_error(error)
    except Exception:
        return False
    return description.status is not None and description.status.name == "TERMINATED"


async def delete_workflow_runs(temporal: Client, namespace: str, workflow_id: str) -> int:
    """Terminates the lineage's workflow and deletes each of its runs from Temporal (those
    visibility lists; when it lists none yet, the latest run); answers how many runs'
    deletion was accepted. A run or workflow that is gone already is not an error."""
    try:
        await temporal.get_workflow_handle(workflow_id).terminate(reason="session lineage erased")
    except RPCError as error:
        if not is_workflow_not_found_error(error):
            raise
    runs: list[str] = []
    async for execution in temporal.list_workflows(f"WorkflowId = '{workflow_id}'"):
        if execution.run_id not in runs:
            runs.append(execution.run_id)

    async def remove(run_id: str = "") -> bool:
        request = DeleteWorkflowExecutionRequest(namespace=namespace, workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id))
        try:
            await temporal.workflow_service.delete_workflow_execution(request)
        except RPCError as error:
            if is_workflow_not_found_error(error):
                return False
            raise
        return True

    deleted = 0
    for run_id in runs:
        deleted += await remove(run_id)
    # Visibility lags: a run the list does not show yet is the latest one.
    if not runs and await remove():
        deleted += 1
    return deleted
