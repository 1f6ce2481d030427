/**
 * What SessionsClient does to Temporal besides sending compaction requests: its connection
 * (lazy, with the SDK's retries except for the in-flight Update limit's refusal), reading a
 * lineage workflow's compaction progress from its description, and deleting a lineage
 * workflow's runs when the lineage is erased.
 */
import { type Client, Connection, defaultGrpcRetryOptions, type GrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import type { Config } from '../config';
import { clientConnectionOptions } from '../temporal-connection';
import { type CompactionProgress, progressFromPendingActivity } from './progress';
import { isUpdateRefusalStatus, isWorkflowNotFoundError } from './rpc-errors';

/**
 * The client's connection, made on its first call to Temporal. The server refuses an 11th
 * concurrent Update on one workflow with RESOURCE_EXHAUSTED; compact() handles that itself
 * (by signal), at once, so the SDK's gRPC retry is off for that refusal only.
 */
export function lazyClientConnection(temporal: Config['temporal']): Connection {
  const retry = defaultGrpcRetryOptions();
  return Connection.lazy({
    ...clientConnectionOptions(temporal),
    interceptors: [
      makeGrpcRetryInterceptor({
        ...retry,
        retryableDecider: (...[attempt, status]: Parameters<GrpcRetryOptions['retryableDecider']>) =>
          !isUpdateRefusalStatus(status) && retry.retryableDecider(attempt, status),
      }),
    ],
  });
}

/**
 * The progress of the workflow's running compaction, or undefined when none runs: the pending
 * compactSession activity's last heartbeat details, decoded with the client's data converter
 * (so encrypted details decode too).
 */
export async function progressOfWorkflow(temporal: Client, workflowId: string): Promise<CompactionProgress | undefined> {
  const { raw } = await temporal.workflow.getHandle(workflowId).describe();
  const converter = temporal.options.loadedDataConverter;
  for (const activity of raw.pendingActivities ?? []) {
    let details: unknown;
    try {
      details = activity.heartbeatDetails?.payloads?.length ? await decodeFromPayloadsAtIndex(converter, 0, activity.heartbeatDetails.payloads) : undefined;
    } catch {
      details = undefined; // Undecodable (a key this client lacks): show the phase as unknown.
    }
    const progress = progressFromPendingActivity(
      {
        activityId: activity.activityId,
        activityType: activity.activityType?.name,
        details,
        attempt: activity.attempt,
        maximumAttempts: activity.maximumAttempts,
        lastStartedTime: optionalTsToDate(activity.lastStartedTime),
        lastHeartbeatTime: optionalTsToDate(activity.lastHeartbeatTime),
        lastFailure: activity.lastFailure?.message,
      },
      Date.now(),
    );
    if (progress) return progress;
  }
  return undefined;
}

/** Terminates a lineage's workflow and deletes each of its runs from Temporal; answers how many runs were deleted. */
export async function deleteWorkflowRuns(temporal: Client, namespace: string, workflowId: string): Promise<number> {
  await temporal.workflow
    .getHandle(workflowId)
    .terminate('session lineage erased')
    .catch((error: unknown) => {
      if (!isWorkflowNotFoundError(error)) throw error;
    });
  const runs = new Set<string>();
  for await (const run of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.add(run.runId);
  const remove = (runId?: string) =>
    temporal.workflowService.deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, ...(runId ? { runId } : {}) } }).then(
      () => true,
      (error: unknown) => {
        if (isWorkflowNotFoundError(error)) return false;
        throw error;
      },
    );
  let deleted = 0;
  for (const runId of runs) if (await remove(runId)) deleted++;
  // Visibility lags: a run the list does not show yet is the latest one.
  if (runs.size === 0 && (await remove())) deleted++;
  return deleted;
}
