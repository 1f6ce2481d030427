/**
 * Deciding a job that does not commit: the audit row records it (only the job's latest attempt
 * may, see beginJob) and the attempt answers it. A refusal a gate made is counted by gate.
 */
import { Context } from '@temporalio/activity';
import { finishJob, type JobFields } from '../../db/session-store';
import type { Answer } from '../../workflows/contract';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Snapshot } from './snapshot';

export interface Decider {
  refuse(reason: string, fields?: Omit<JobFields, 'reason' | 'messagesBefore' | 'tokensBefore'>): Promise<Answer>;
  stale(answer: Answer & { reason: string }): Promise<Answer>;
}

/** `snapshot` is undefined before the attempt took one (then a refusal reports no sizes). */
export function decider(
  deps: CompactionActivityDeps,
  input: CompactSessionInput,
  attempt: number,
  head: { sessionId: string; generation: number },
  s?: Snapshot,
): Decider {
  return {
    async refuse(reason, fields = {}) {
      const sizes = s ? { messagesBefore: s.messagesBefore, tokensBefore: s.tokensBefore } : {};
      await finishJob(deps.db, input, attempt, 'refused', { reason, ...sizes, ...fields }, deps.autoCompaction);
      if (fields.gate) {
        Context.current()
          .metricMeter.createCounter('session_compaction_gate_refusals', 'jobs', 'Compactions a gate refused, by gate')
          .add(1, { gate: fields.gate });
      }
      return { outcome: 'refused', ...head, reason, gate: fields.gate, ...sizes, tokensAfter: fields.tokensAfter };
    },
    async stale(answer) {
      await finishJob(deps.db, input, attempt, 'stale', { reason: answer.reason }, deps.autoCompaction);
      return answer;
    },
  };
}
