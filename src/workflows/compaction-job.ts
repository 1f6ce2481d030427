/**
 * One compaction job, from the workflow's side: the `compactSession` activity (its heartbeat
 * is the lease, its heartbeat timeout the TTL) and, if it fails for good, the recorded abort,
 * which may find that a lost attempt committed. Postgres decides where the head is; this
 * module only reports it. Workflow code: deterministic.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, patched, proxyActivities, proxyLocalActivities, rootCause } from '@temporalio/workflow';
import type { CompactionActivities } from '../activities/compaction';
import type { Answer, CompactionMode } from './contract';
import { readJobAnswer, type RecordedAnswer } from './job-answer';
import type { Job } from './lineage-queue';
import { PATCH_RECORD_JOINED_REQUESTS } from './patches';
import type { LineageSettings } from './settings';

/** Activity errors no retry can fix: the job fails at once and is recorded as aborted. */
const NON_RETRYABLE = ['SummariserAuthError', 'SummariserQuotaError', 'SummariserInvalidRequest', 'SessionNotFoundError'];

/** The lineage's own reads and writes (is it closed, mark it closed): retried while Postgres is away. */
export const lineageActivities = proxyLocalActivities<CompactionActivities>({ startToCloseTimeout: '30s' });

/**
 * A job's bookkeeping (record an abort, record joined requests). Bounded: a write that keeps
 * failing (the database refusing it) gives up after a few attempts instead of retrying for
 * ever and wedging the queue; the job is answered `aborted` all the same.
 */
const jobBookkeeping = proxyLocalActivities<CompactionActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 8 },
});

export interface JobContext {
  lineageId: string;
  mode: CompactionMode;
  /** The generation of the head the job compacts. */
  generation: number;
  settings: LineageSettings;
}

/**
 * Runs one job and returns the answer all its requests get; the answer names the head after
 * it. Requests that joined while the job ran are then recorded with it in Postgres, so their
 * answer outlives this run like the others' (behind a patch: histories from before replay).
 */
export async function runCompactionJob(job: Job, context: JobContext): Promise<Answer> {
  const scheduled = new Set(job.requests.map((r) => r.requestId));
  const answer = await decide(job, context);
  for (;;) {
    const joined = job.requests.filter((r) => !scheduled.has(r.requestId)).map((r) => r.requestId);
    if (joined.length === 0 || !patched(PATCH_RECORD_JOINED_REQUESTS)) return answer;
    for (const id of joined) scheduled.add(id);
    try {
      await jobBookkeeping.recordJoinedRequests({ jobId: job.jobId, lineageId: context.lineageId, requestIds: joined, outcome: answer.outcome });
    } catch (error) {
      // Bounded like every write here: the joined requests still get the job's answer from this run.
      if (isCancellation(error)) throw error;
      return answer;
    }
  }
}

/** The job's activity and, if it fails for good, the recorded abort: what Postgres decided. */
async function decide(job: Job, { lineageId, mode, generation, settings }: JobContext): Promise<Answer> {
  const base = {
    jobId: job.jobId,
    lineageId,
    parentSessionId: job.headSessionId,
    generation,
    requestIds: job.requests.map((r) => r.requestId),
    trigger: job.requests[0].trigger,
  };
  const { compactSession } = proxyActivities<CompactionActivities>({
    activityId: job.jobId,
    summary: `summarise ${job.headSessionId} (generation ${generation} -> ${generation + 1}) for ${job.requests.length} request(s)`,
    heartbeatTimeout: settings.leaseTtlMs,
    startToCloseTimeout: settings.attemptTimeoutMs,
    retry: {
      initialInterval: settings.retryInitialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: settings.retryMaximumIntervalMs,
      maximumAttempts: settings.maxAttempts,
      nonRetryableErrorTypes: NON_RETRYABLE,
    },
  });
  // Read as any release recorded it (job-answer.ts).
  let result: RecordedAnswer | undefined;
  try {
    result = await compactSession({
      ...base,
      mode,
      // Joined requests share the job: the first one's focus, forced if any asked for force.
      focusTopic: job.requests.find((r) => r.focusTopic)?.focusTopic,
      force: job.requests.some((r) => r.force === true),
    });
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const reason = `${failedPart(error)} failed: ${rootCause(error) ?? 'unknown failure'}`;
    // A lost attempt may have committed before the abort was recorded: Postgres decides.
    // (Histories recorded before this returned a value replay with `undefined`, and before
    // it returned a result with no reason or previous session: the answer is the same.)
    let settled: RecordedAnswer | undefined;
    try {
      settled = await jobBookkeeping.recordAbortedCompaction({
        ...base,
        // The requests now, joined ones included: an automatic request among them is settled.
        requestIds: job.requests.map((r) => r.requestId),
        reason,
      });
    } catch (recordError) {
      // A local activity's failure can arrive as its ApplicationFailure itself: anything but a cancellation ends here.
      if (isCancellation(recordError)) throw recordError;
      // Even the abort could not be written: answer aborted, say so, and let the queue go on.
      return {
        outcome: 'aborted',
        sessionId: job.headSessionId,
        generation,
        reason: `${reason}; recording the abort failed too: ${rootCause(recordError) ?? 'unknown'}`,
      };
    }
    if (!settled) return { outcome: 'aborted', sessionId: job.headSessionId, generation, reason };
    const previousSessionId = settled.previousSessionId ?? (mode === 'rotate' ? job.headSessionId : undefined);
    result = settled.outcome === 'compacted' ? { ...settled, previousSessionId } : { ...settled, reason };
  }
  return readJobAnswer(result);
}

/** Which part of a job failed, from the activity's failure type: the summariser, or the job's own reads and writes. */
function failedPart(error: ActivityFailure): string {
  const type = error.cause instanceof ApplicationFailure ? error.cause.type : undefined;
  if (type?.startsWith('Summariser')) return 'summariser';
  if (type === 'DatabaseError') return 'database';
  return 'compaction';
}
