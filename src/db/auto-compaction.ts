/**
 * The automatic-compaction state of a lineage (the threshold policy's cooldown ladder and its
 * pending request), settled in the transaction of the job that answered it.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from './executor';
import type { CompactionJob } from '../workflows/contract';

/**
 * How appends request compactions on their own (the threshold policy). An append that leaves
 * the head at or above the lineage's threshold requests one when no request of the appends is
 * pending for the current generation (a pending one older than `resendAfterMs` counts as
 * lost) and no cooldown runs. A job that is refused, aborted, or leaves the head at or above
 * the threshold by itself (its summary and kept messages are that large) starts the next
 * cooldown of the ladder; one that brings the head under the threshold resets it.
 *
 * A commit that shrank what it summarised made progress even when the rows appended during
 * the summary leave the head at or above the threshold (a busy lineage): it starts no cooldown
 * and asks for a follow-up compaction at once, which the workflow queues, up to
 * `maxFollowUps` in a row; past that the next append asks. Whatever the ladder says, the
 * append that takes the head across the ceiling (the context window, at most twice the
 * threshold: src/db/functions/sc_ceiling_tokens.sql) requests a compaction unless one is
 * pending, so the head never passes the ceiling without a compaction requested.
 */
export interface AutoCompactionPolicy {
  cooldownsMs: number[];
  resendAfterMs: number;
  /** Follow-up compactions asked at once in a row (a commit under the threshold resets the count). */
  maxFollowUps: number;
}

export const DEFAULT_AUTO_COMPACTION_POLICY: AutoCompactionPolicy = {
  cooldownsMs: [60_000, 5 * 60_000, 15 * 60_000],
  resendAfterMs: 5 * 60_000,
  maxFollowUps: 10,
};

/**
 * Records how a job ended for the threshold policy, in the job's own transaction
 * (src/db/functions/sc_settle_auto_compaction.sql, which the
 * one-statement commit calls too). `succeeded`
 * (the head is now under the threshold) resets the cooldown ladder, whoever asked. Only a job
 * that answered the lineage's pending automatic request touches the rest: `failed` (refused,
 * aborted, or the head still at or above the threshold) climbs the ladder; `settled` only ends
 * the pending request. A manual compaction's refusal never cools automatic ones down. (A commit
 * that made progress above the threshold settles in sc_compaction_commit.sql itself.)
 */
export async function settleAutoCompaction(
  tx: Executor,
  job: Pick<CompactionJob, 'lineageId' | 'requestIds'>,
  how: 'failed' | 'succeeded' | 'settled',
  policy: AutoCompactionPolicy,
): Promise<void> {
  if (job.requestIds.length === 0) return;
  const ladder = `{${cooldownLadder(policy).join(',')}}`;
  await tx.execute(sql`select sc_settle_auto_compaction(${job.lineageId}, ${JSON.stringify(job.requestIds)}::jsonb, ${how}, ${ladder}::bigint[])`);
}

/** The ladder as the SQL function takes it: whole milliseconds, never empty (an empty policy cools down for 0 ms). */
export function cooldownLadder(policy: AutoCompactionPolicy): number[] {
  const ladder = policy.cooldownsMs.length > 0 ? policy.cooldownsMs : [0];
  return ladder.map((ms) => Math.max(0, Math.round(ms)));
}
