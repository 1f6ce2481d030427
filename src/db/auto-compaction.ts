/**
 * The automatic-compaction state of a lineage (the threshold policy's cooldown ladder and its
 * pending request), settled in the transaction of the job that answered it.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from './executor';
import type { CompactionJob } from './jobs';
import { lineages } from './schema';

/**
 * How appends request compactions on their own (the threshold policy). An append that leaves
 * the head at or above the lineage's threshold requests one when no request of the appends is
 * pending for the current generation (a pending one older than `resendAfterMs` counts as
 * lost) and no cooldown runs. A job that is refused, aborted or leaves the head above the
 * threshold starts the next cooldown of the ladder; one that brings it under resets it.
 */
export interface AutoCompactionPolicy {
  cooldownsMs: number[];
  resendAfterMs: number;
}

export const DEFAULT_AUTO_COMPACTION_POLICY: AutoCompactionPolicy = {
  cooldownsMs: [60_000, 5 * 60_000, 15 * 60_000],
  resendAfterMs: 5 * 60_000,
};

/**
 * Records how a job ended for the threshold policy, in the job's own transaction. `succeeded`
 * (the head is now under the threshold) resets the cooldown ladder, whoever asked. Only a job
 * that answered the lineage's pending automatic request touches the rest: `failed` (refused,
 * aborted, or the head still at or above the threshold) climbs the ladder; `settled` only ends
 * the pending request. A manual compaction's refusal never cools automatic ones down.
 */
export async function settleAutoCompaction(
  tx: Executor,
  job: Pick<CompactionJob, 'lineageId' | 'requestIds'>,
  how: 'failed' | 'succeeded' | 'settled',
  policy: AutoCompactionPolicy,
): Promise<void> {
  if (job.requestIds.length === 0) return;
  const answeredAuto = and(eq(lineages.id, job.lineageId), inArray(lineages.autoRequestId, job.requestIds));
  if (how === 'settled') {
    await tx.update(lineages).set({ autoRequestId: null }).where(answeredAuto);
    return;
  }
  if (how === 'succeeded') {
    // Whoever asked, the head is now under the threshold: the ladder starts again.
    await tx.update(lineages).set({ autoRequestId: null, autoFailures: 0, autoCooldownUntil: null }).where(eq(lineages.id, job.lineageId));
    return;
  }
  const ladder = policy.cooldownsMs.length > 0 ? policy.cooldownsMs : [0];
  const steps = sql.raw(`ARRAY[${ladder.map((ms) => Math.max(0, Math.round(ms))).join(',')}]::bigint[]`);
  await tx
    .update(lineages)
    .set({
      autoRequestId: null,
      autoFailures: sql`${lineages.autoFailures} + 1`,
      autoCooldownUntil: sql`now() + make_interval(secs => (${steps})[least(${lineages.autoFailures} + 1, ${ladder.length})] / 1000.0)`,
    })
    .where(answeredAuto);
}
