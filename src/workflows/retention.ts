/**
 * Retention, run by Temporal itself: a Schedule (src/client/retention.ts) starts this
 * workflow, which prunes in bounded batches, one activity (one Postgres transaction) each,
 * until nothing is left to prune, continuing as new after `maxBatchesPerRun` batches so its
 * history stays small. The policy travels in the input, so a run replays as it ran. What each
 * batch pruned is in its activity result (the workflow's history) and, for messages, in
 * `pruned_messages`, which the audit reads.
 */
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import type { RetentionActivities } from '../activities/retention';

/** How long each kind of row is kept, in days (null or absent: for ever). */
export interface RetentionPolicy {
  /** Messages of sessions that ended (rotation parents) this long ago. */
  endedSessionDays?: number | null;
  /** Rows an in-place compaction archived, or a caller took back, this long ago. */
  archivedDays?: number | null;
  /** Audit rows (compactions) this old, once no remaining message needs them. */
  auditDays?: number | null;
  /** Append keys this old: a resend after that is stored again. */
  appendKeyDays?: number | null;
}

export interface RetentionInput {
  policy: RetentionPolicy;
  /** Rows of each kind per batch (one transaction). */
  batch: number;
  maxBatchesPerRun?: number;
  /** Carried over continue-as-new. */
  totals?: RetentionTotals;
}

export interface RetentionTotals {
  batches: number;
  messages: number;
  compactions: number;
  appendKeys: number;
  prunedRanges: number;
  exported: number;
}

const { pruneRetentionBatch } = proxyActivities<RetentionActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', maximumAttempts: 20, nonRetryableErrorTypes: ['InvalidInputError'] },
});

export async function retentionWorkflow(input: RetentionInput): Promise<RetentionTotals> {
  const totals: RetentionTotals = { batches: 0, messages: 0, compactions: 0, appendKeys: 0, prunedRanges: 0, exported: 0, ...input.totals };
  const maxBatches = input.maxBatchesPerRun ?? 200;
  for (let run = 0; run < maxBatches; run++) {
    const pruned = await pruneRetentionBatch(input.policy, input.batch);
    totals.batches++;
    totals.messages += pruned.messages;
    totals.compactions += pruned.compactions;
    totals.appendKeys += pruned.appendKeys;
    totals.prunedRanges += pruned.prunedRanges;
    totals.exported += pruned.exported;
    if (!pruned.more) return totals;
  }
  return continueAsNew<typeof retentionWorkflow>({ ...input, totals });
}
