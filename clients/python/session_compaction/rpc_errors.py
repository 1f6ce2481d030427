"""What the error of a Temporal call means to SessionsClient, as src/client/rpc-errors.ts:
the server's in-flight Update limit (go by signal), a run that ended before it answered
(send the same request id again), a server it cannot reach (resend), a workflow that is not
there. Each walks the error's cause chain, since the SDK wraps the gRPC status.
contract/vectors/rpc-errors.json holds the cases both clients agree on."""

from __future__ import annotations

import re
from collections.abc import Iterator

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

_IN_FLIGHT_UPDATE = re.compile(r"in-flight update|inflight update", re.IGNORECASE)
_RUN_ENDED = re.compile(r"workflow execution already completed|completed before the update completed|continued as new|continuedasnew", re.IGNORECASE)
_TASK_FAILED = re.compile(r"workflow task in failed state", re.IGNORECASE)


def _cause_chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and each of its causes, outermost first (a cycle ends the walk)."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = getattr(e, "cause", None) or e.__cause__


def _text(e: BaseException) -> str:
    return f"{e} {getattr(e, 'message', '')}"


def is_update_limit_error(error: BaseException) -> bool:
    """The server's refusal of an Update beyond the per-workflow in-flight limit, and nothing
    else (not other rate limits): RESOURCE_EXHAUSTED with the in-flight Update message."""
    return any(
        isinstance(e, RPCError) and e.status == RPCStatusCode.RESOURCE_EXHAUSTED and _IN_FLIGHT_UPDATE.search(_text(e)) for e in _cause_chain(error)
    )


def is_run_ended_error(error: BaseException) -> bool:
    """The workflow run an Update was sent to ended (completed, continued as new, or gone)
    before it answered. The TypeScript SDK's WorkflowNotFoundError is RPCError NOT_FOUND here."""
    for e in _cause_chain(error):
        if isinstance(e, ApplicationError) and e.type == "AcceptedUpdateCompletedWorkflow":
            return True
        if isinstance(e, RPCError) and e.status == RPCStatusCode.NOT_FOUND:
            return True
        if _RUN_ENDED.search(_text(e)):
            return True
    return False


def is_transient_connection_error(error: BaseException) -> bool:
    """The server could not be reached (it restarts, the network blips), or the workflow's
    task is being retried: safe to resend, since every request carries its id."""
    for e in _cause_chain(error):
        if isinstance(e, RPCError) and e.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
            return True
        if isinstance(e, WorkflowUpdateRPCTimeoutOrCancelledError):
            return True
        # The server will not take an Update while the workflow's last task failed or timed
        # out (its worker froze or died); the task is retried on another worker, so resend.
        if _TASK_FAILED.search(_text(e)):
            return True
    return False


def is_workflow_not_found_error(error: BaseException) -> bool:
    """The call's workflow (or run) is not there: never started, or deleted already. Not its
    causes: a wrapped NOT_FOUND is another call's."""
    return isinstance(error, RPCError) and error.status == RPCStatusCode.NOT_FOUND
