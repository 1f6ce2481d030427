"""Retention from the client's side (src/client/retention.ts): run it once, or have Temporal
run it on a schedule (the Temporal Schedule ``session-compaction-retention`` starting the
worker's ``retentionWorkflow``). Off until scheduled; see README, "Your data"."""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowExecutionStatus,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from .errors import InvalidInputError, RetentionRunningError

#: The one retention schedule of a namespace (RETENTION_SCHEDULE_ID, src/client/retention.ts).
RETENTION_SCHEDULE_ID = "session-compaction-retention"
RETENTION_WORKFLOW_TYPE = "retentionWorkflow"
RETENTION_POLICY_FIELDS = ("endedSessionDays", "archivedDays", "auditDays", "appendKeyDays")


def manual_retention_workflow_id(task_queue: str) -> str:
    """The workflow id of a manual retention run on ``task_queue`` (manualRetentionWorkflowId,
    src/client/retention.ts): one id, so Temporal refuses a second manual run while one runs."""
    return f"{RETENTION_SCHEDULE_ID}-run-{task_queue}"


_DURATION = re.compile(
    r"^(\d*\.?\d+) *(milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w|years?|yrs?|y)?$", re.IGNORECASE
)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000, "y": 31_557_600_000}


def check_retention_policy(policy: object) -> dict[str, float]:
    """Mirrors checkRetentionPolicy of src/client/retention.ts: an object whose keys are among
    endedSessionDays, archivedDays, auditDays and appendKeyDays, each a number of days, 0 or
    more (fractions allowed), or None (kept for ever); at least one of them given."""
    if not isinstance(policy, Mapping):
        raise InvalidInputError("policy", "must be an object")
    checked: dict[str, float] = {}
    for key, value in policy.items():
        if key not in RETENTION_POLICY_FIELDS:
            raise InvalidInputError(f"policy.{key}", f"is not one of {', '.join(RETENTION_POLICY_FIELDS)}")
        if value is None:
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            raise InvalidInputError(f"policy.{key}", "must be a number of days, 0 or more")
        checked[key] = value
    if not checked:
        raise InvalidInputError("policy", "prunes nothing: give at least one of " + ", ".join(RETENTION_POLICY_FIELDS))
    return checked


def retention_input(policy: object, batch: object) -> dict[str, Any]:
    """The retention workflow's input (RetentionInput, src/workflows/retention.ts), checked."""
    checked_batch = batch if isinstance(batch, int) and not isinstance(batch, bool) else None
    if isinstance(batch, float) and batch.is_integer():
        checked_batch = int(batch)
    if checked_batch is None or not 1 <= checked_batch <= 100_000:
        raise InvalidInputError("batch", "must be a whole number from 1 to 100000")
    return {"policy": check_retention_policy(policy), "batch": checked_batch}


def schedule_interval(every: object) -> timedelta:
    """A schedule's interval: a ``timedelta``, or a duration string as the TypeScript client
    takes it (the ``ms`` package's: ``'24h'``, ``'1 day'``, ``'90m'``; a bare number is
    milliseconds). At least one second, as Temporal's intervals."""
    interval: timedelta | None = None
    if isinstance(every, timedelta):
        interval = every
    elif isinstance(every, str):
        match = _DURATION.fullmatch(every.strip())
        if match:
            unit = (match.group(2) or "ms").lower()
            key = "ms" if unit.startswith(("ms", "msec", "milli")) else unit[0]
            interval = timedelta(milliseconds=float(match.group(1)) * _DURATION_MS[key])
    if interval is None or interval < timedelta(seconds=1):
        raise InvalidInputError("every", "must be a duration such as '24h' (or a timedelta), at least one second")
    return interval


async def run_retention(
    temporal: Client,
    task_queue: str,
    policy: Mapping[str, Any],
    batch: int = 1000,
    running_scheduled: Callable[[], Awaitable[str | None]] | None = None,
) -> dict[str, Any]:
    """Runs retention once, now, and waits for it (runRetention, src/client/retention.ts): the
    workflow ``retentionWorkflow`` on ``task_queue``; see OperatorClient.run_retention.
    ``running_scheduled`` finds a scheduled run still running (default:
    running_scheduled_retention)."""
    checked = retention_input(policy, batch)
    scheduled = await (running_scheduled() if running_scheduled is not None else running_scheduled_retention(temporal, task_queue))
    if scheduled is not None:
        raise RetentionRunningError(scheduled)
    workflow_id = manual_retention_workflow_id(task_queue)
    try:
        handle = await temporal.start_workflow(
            RETENTION_WORKFLOW_TYPE,
            checked,
            id=workflow_id,
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:
        raise RetentionRunningError(workflow_id) from None
    result: dict[str, Any] = await handle.result()
    return result


async def running_scheduled_retention(temporal: Client, task_queue: str) -> str | None:
    """A run the retention schedule started on ``task_queue`` that is still running
    (runningScheduledRun, src/client/retention.ts): each run the schedule lists is
    described, which is consistent, unlike visibility."""
    try:
        description = await temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    action = description.schedule.action
    if not isinstance(action, ScheduleActionStartWorkflow) or action.task_queue != task_queue:
        return None
    started = [getattr(execution, "workflow_id", None) for execution in description.info.running_actions]
    started += [getattr(result.action, "workflow_id", None) for result in description.info.recent_actions]
    for workflow_id in dict.fromkeys(w for w in started if w):
        if (await temporal.get_workflow_handle(workflow_id).describe()).status == WorkflowExecutionStatus.RUNNING:
            return workflow_id
    return None


async def schedule_retention(temporal: Client, task_queue: str, policy: Mapping[str, Any], every: str | timedelta, batch: int = 1000) -> dict[str, Any]:
    """Has Temporal run retention every ``every`` on ``task_queue`` (scheduleRetention,
    src/client/retention.ts): the Schedule created, or updated with the new policy and
    interval; see OperatorClient.schedule_retention. Answers ``{scheduleId, created}``."""
    checked = retention_input(policy, batch)
    interval = schedule_interval(every)
    action = ScheduleActionStartWorkflow(RETENTION_WORKFLOW_TYPE, checked, id=f"{RETENTION_SCHEDULE_ID}-workflow", task_queue=task_queue)
    spec = ScheduleSpec(intervals=[ScheduleIntervalSpec(every=interval)])

    def replace(previous: ScheduleUpdateInput) -> ScheduleUpdate:
        schedule = previous.description.schedule
        schedule.spec = spec
        schedule.action = action
        return ScheduleUpdate(schedule=schedule)

    try:
        await temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).update(replace)
        return {"scheduleId": RETENTION_SCHEDULE_ID, "created": False}
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
    await temporal.create_schedule(RETENTION_SCHEDULE_ID, Schedule(action=action, spec=spec, policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP)))
    return {"scheduleId": RETENTION_SCHEDULE_ID, "created": True}


async def unschedule_retention(temporal: Client) -> bool:
    """Stops scheduled retention (deletes the Schedule); False when none was scheduled."""
    try:
        await temporal.get_schedule_handle(RETENTION_SCHEDULE_ID).delete()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
