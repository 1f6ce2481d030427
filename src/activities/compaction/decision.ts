/**
 * The earlier decision: what an attempt answers right after it began, before it pays for
 * anything (pure; test/unit/compaction-steps.test.ts). An attempt goes on only when its job
 * is undecided, it is the job's latest attempt, the lineage is open and the head and generation
 * are the ones the workflow sent.
 */
import type { ErasedLineage, StartedJob } from '../../db/jobs';
import type { Answer } from '../../workflows/contract';

/**
 * `answer`: give this answer and write nothing (the job was decided, or its lineage erased).
 * `superseded`: the same, and the attempt says so in the log (a later attempt owns the job).
 * `stale`: record the job stale with the answer's reason, then give the answer.
 */
export type EarlierDecision =
  { kind: 'answer'; answer: Answer } | { kind: 'superseded'; answer: Answer } | { kind: 'stale'; answer: Answer & { reason: string } };

/** Undefined when the attempt goes on to propose a compaction. */
export function earlierDecision(
  begun: StartedJob | ErasedLineage,
  sent: { headSessionId: string; generation: number },
  attempt: number,
): EarlierDecision | undefined {
  if ('erased' in begun) {
    // The lineage was erased and its id created again: nothing of this job reaches the new one.
    const reason = 'the lineage was erased and created again; the job wrote nothing';
    return { kind: 'answer', answer: { outcome: 'stale', sessionId: begun.headSessionId, generation: begun.generation, reason } };
  }
  const { job, lineage } = begun;
  const head = { sessionId: lineage.headSessionId, generation: lineage.generation };
  if (job.outcome === 'compacted') {
    // An earlier attempt committed and its answer was lost: give the commit's answer.
    return {
      kind: 'answer',
      answer: {
        outcome: 'compacted',
        sessionId: job.childSessionId ?? lineage.headSessionId,
        generation: job.generation,
        previousSessionId: job.parentSessionId,
        messagesAfter: job.messagesAfter ?? undefined,
        ...(job.followUpRequestId ? { followUpRequestId: job.followUpRequestId } : {}),
      },
    };
  }
  if (job.attempts > attempt) {
    // A later attempt started while this one stalled (its lease expired): it owns the job.
    return { kind: 'superseded', answer: { outcome: 'stale', ...head, reason: `attempt ${attempt} was superseded by attempt ${job.attempts}` } };
  }
  if (job.outcome === 'refused' || job.outcome === 'stale') {
    // An earlier attempt decided this job and its answer was lost: give the same answer.
    return { kind: 'answer', answer: { outcome: job.outcome, ...head, reason: job.reason ?? undefined, gate: job.gate ?? undefined } };
  }
  // No summary is ever paid for a closed lineage.
  if (lineage.closed) return { kind: 'stale', answer: { outcome: 'stale', ...head, reason: 'the lineage is closed' } };
  if (lineage.headSessionId !== sent.headSessionId || lineage.generation !== sent.generation) {
    const reason = `the head is ${lineage.headSessionId} (generation ${lineage.generation}); adopting it instead of compacting again`;
    return { kind: 'stale', answer: { outcome: 'stale', ...head, reason } };
  }
  return undefined;
}
