/**
 * One compaction job, from the workflow's side: the `compactSession` activity (its heartbeat
 * is the lease, its heartbeat timeout the TTL) and, if it fails for good, the recorded abort,
 * which may find that a lost attempt committed. Postgres decides where the head is; this
 * module only reports it. Workflow code: deterministic.
 */
import { ActivityFailure, proxyActivities, proxyLocalActivities, rootCause } from '@temporalio/workflow';
import type { CompactionActivities, CompactSessionResult } from '../activities/compaction';
import type { CompactionMode } from './contract';
import type { Answer, Job } from './lineage-queue';
import type { LineageSettings } from './settings';

/** Activity errors no retry can fix: the job fails at once and is recorded as aborted. */
const NON_RETRYABLE = ['SummariserAuthError', 'SummariserQuotaError', 'SummariserInvalidRequest', 'SessionNotFoundError'];

export const lineageActivities = proxyLocalActivities<CompactionActivities>({ startToCloseTimeout: '30s' });

export interface JobContext {
  lineageId: string;
  mode: CompactionMode;
  /** The generation of the head the job compacts. */
  generation: number;
  settings: LineageSettings;
}

/** The job's answer, where the head now is, and whether this job committed a compaction. */
export interface JobReport {
  answer: Answer;
  head?: { sessionId: string; generation: number };
  committed: boolean;
}

export async function runCompactionJob(job: Job, { lineageId, mode, generation, settings }: JobContext): Promise<JobReport> {
  const base = {
    jobId: job.jobId,
    lineageId,
    parentSessionId: job.sessionId,
    generation,
    requestIds: job.requests.map((r) => r.requestId),
    trigger: job.requests[0].trigger,
  };
  const { compactSession } = proxyActivities<CompactionActivities>({
    activityId: job.jobId,
    summary: `summarise ${job.sessionId} (generation ${generation} -> ${generation + 1}) for ${job.requests.length} request(s)`,
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
  let result: CompactSessionResult;
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
    const reason = `summariser failed: ${rootCause(error) ?? 'unknown failure'}`;
    const settled = await lineageActivities.recordAbortedCompaction({ ...base, reason });
    // A lost attempt may have committed before the abort was recorded: Postgres decides.
    // (Histories recorded before this returned a value replay with `settled` undefined.)
    if (!settled) return { answer: { outcome: 'aborted', sessionId: job.sessionId, generation, reason }, committed: false };
    const head = { sessionId: settled.headSessionId, generation: settled.generation };
    if (settled.outcome === 'compacted') {
      const previousSessionId = mode === 'rotate' ? job.sessionId : undefined;
      return { answer: { outcome: 'compacted', sessionId: head.sessionId, previousSessionId, generation: head.generation }, head, committed: true };
    }
    return { answer: { outcome: 'aborted', sessionId: head.sessionId, generation: head.generation, reason }, head, committed: false };
  }
  return {
    answer: {
      outcome: result.outcome,
      sessionId: result.headSessionId,
      previousSessionId: result.previousSessionId,
      generation: result.generation,
      reason: result.reason,
      ...(result.gate ? { gate: result.gate } : {}),
      tokensBefore: result.tokensBefore,
      tokensAfter: result.tokensAfter,
      messagesBefore: result.messagesBefore,
      messagesAfter: result.messagesAfter,
    },
    head: { sessionId: result.headSessionId, generation: result.generation },
    committed: result.outcome === 'compacted',
  };
}
