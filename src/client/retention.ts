/**
 * Retention from the client's side: run it once, or have Temporal run it on a schedule (a
 * Temporal Schedule starting src/workflows/retention.ts). Off until scheduled; see docs/data.md.
 */
import { type Client, ScheduleNotFoundError, ScheduleOverlapPolicy, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { InvalidInputError, RetentionRunningError } from '../errors';
import type { RetentionInput, RetentionPolicy, RetentionTotals, retentionWorkflow } from '../workflows/retention';

/** The one retention schedule of a namespace and task queue. */
const RETENTION_SCHEDULE_ID = 'session-compaction-retention';
const POLICY_FIELDS = ['endedSessionDays', 'archivedDays', 'auditDays', 'appendKeyDays'] as const;

export interface RetentionOptions {
  /** Rows of each kind per batch (one transaction each); default 1,000. */
  batch?: number;
}

/** The policy with every field checked: a number of days, 0 or more, or null/absent (kept for ever). */
function checkRetentionPolicy(policy: unknown): RetentionPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) throw new InvalidInputError('policy', 'must be an object');
  const checked: RetentionPolicy = {};
  for (const [key, value] of Object.entries(policy)) {
    if (!(POLICY_FIELDS as readonly string[]).includes(key)) throw new InvalidInputError(`policy.${key}`, `is not one of ${POLICY_FIELDS.join(', ')}`);
    if (value === null || value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidInputError(`policy.${key}`, 'must be a number of days, 0 or more');
    checked[key as (typeof POLICY_FIELDS)[number]] = value;
  }
  if (Object.keys(checked).length === 0) throw new InvalidInputError('policy', 'prunes nothing: give at least one of ' + POLICY_FIELDS.join(', '));
  return checked;
}

function inputOf(policy: unknown, options: RetentionOptions): RetentionInput {
  const batch = options.batch ?? 1000;
  if (!Number.isInteger(batch) || batch < 1 || batch > 100_000) throw new InvalidInputError('batch', 'must be a whole number from 1 to 100000');
  return { policy: checkRetentionPolicy(policy), batch };
}

/**
 * The workflow id of a manual run on `taskQueue`: one id, so Temporal itself refuses a second
 * manual run while one is running (a run outlives a caller that went away).
 */
export const manualRetentionWorkflowId = (taskQueue: string) => `${RETENTION_SCHEDULE_ID}-run-${taskQueue}`;

/**
 * A run the retention schedule started on `taskQueue` that is still running, if any: each run the schedule
 * lists (its running and its recent actions; the dev server lists a running one only among the
 * recent) is described, which is consistent, unlike visibility.
 */
async function runningScheduledRun(temporal: Client, taskQueue: string): Promise<string | undefined> {
  let schedule;
  try {
    schedule = await temporal.schedule.getHandle(RETENTION_SCHEDULE_ID).describe();
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return undefined;
    throw error;
  }
  // The schedule is one per namespace: runs on another task queue are another deployment's.
  if (schedule.action.type !== 'startWorkflow' || schedule.action.taskQueue !== taskQueue) return undefined;
  const { info } = schedule;
  const started = new Set<string>();
  for (const { workflow } of info.runningActions) started.add(workflow.workflowId);
  for (const { action } of info.recentActions) started.add(action.workflow.workflowId);
  for (const workflowId of started) {
    const { status } = await temporal.workflow.getHandle(workflowId).describe();
    if (status.name === 'RUNNING') return workflowId;
  }
  return undefined;
}

/**
 * Runs retention once, now, and waits for it: what it pruned. Refuses, starting nothing, with
 * RetentionRunningError while another manual run (the workflow manualRetentionWorkflowId) or a
 * scheduled run is still running. A scheduled run that starts after this check runs beside it:
 * their batches still take turns (the retention lock of `retention_prune`), so neither loses
 * track of what it pruned.
 */
export async function runRetention(temporal: Client, taskQueue: string, policy: unknown, options: RetentionOptions = {}): Promise<RetentionTotals> {
  const input = inputOf(policy, options);
  const scheduled = await runningScheduledRun(temporal, taskQueue);
  if (scheduled) throw new RetentionRunningError(scheduled);
  const workflowId = manualRetentionWorkflowId(taskQueue);
  let handle;
  try {
    handle = await temporal.workflow.start<typeof retentionWorkflow>('retentionWorkflow', {
      taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) throw new RetentionRunningError(workflowId);
    throw error;
  }
  return handle.result();
}

/**
 * Has Temporal run retention every `every` (a duration such as '24h' or '1 day'), creating the
 * schedule or replacing its policy. A run still going when the next is due is not doubled.
 */
export async function scheduleRetention(
  temporal: Client,
  taskQueue: string,
  policy: unknown,
  options: RetentionOptions & { every: string },
): Promise<{ scheduleId: string; created: boolean }> {
  const input = inputOf(policy, options);
  if (typeof options.every !== 'string' || options.every.trim() === '') throw new InvalidInputError('every', "must be a duration such as '24h'");
  const action = { type: 'startWorkflow' as const, workflowType: 'retentionWorkflow', taskQueue, args: [input] };
  const spec = { intervals: [{ every: options.every as `${number}h` }] };
  const handle = temporal.schedule.getHandle(RETENTION_SCHEDULE_ID);
  try {
    await handle.update((previous) => ({ ...previous, spec, action }));
    return { scheduleId: RETENTION_SCHEDULE_ID, created: false };
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
  }
  await temporal.schedule.create({ scheduleId: RETENTION_SCHEDULE_ID, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
  return { scheduleId: RETENTION_SCHEDULE_ID, created: true };
}

/** Stops scheduled retention; false when none was scheduled. */
export async function unscheduleRetention(temporal: Client): Promise<boolean> {
  try {
    await temporal.schedule.getHandle(RETENTION_SCHEDULE_ID).delete();
    return true;
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return false;
    throw error;
  }
}
