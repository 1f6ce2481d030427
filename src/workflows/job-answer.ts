/**
 * A job activity's result as histories hold it. `compactSession` and `recordAbortedCompaction`
 * return the job's `Answer`; the workflow reads it back from the history, recorded by any
 * release. Earlier releases named the head `headSessionId`, and histories of open lineages
 * still hold such results, so both names are read. Workers of those releases may take a
 * workflow task while a newer worker ran the activity (a rolling deploy), so the activities
 * write the head under both names until no such worker runs (docs/development.md, "Changing workflow
 * code"). Pure: the workflow and the activities use it, test/unit/job-answer.test.ts proves it.
 */
import type { Answer } from './contract';

/** An activity result as a history may hold it: the head under either name. */
export type RecordedAnswer = Omit<Answer, 'sessionId'> & { sessionId?: string; headSessionId?: string };

/** The answer a recorded activity result gives, with only the answer's fields. */
export function readJobAnswer(recorded: RecordedAnswer): Answer {
  const sessionId = recorded.sessionId ?? recorded.headSessionId;
  // No release wrote a result without a head; a job answered with none would lose the lineage's head.
  if (sessionId === undefined) throw new TypeError(`a job's result names no head: ${JSON.stringify(recorded)}`);
  return {
    outcome: recorded.outcome,
    sessionId,
    previousSessionId: recorded.previousSessionId,
    generation: recorded.generation,
    reason: recorded.reason,
    ...(recorded.gate ? { gate: recorded.gate } : {}),
    tokensBefore: recorded.tokensBefore,
    tokensAfter: recorded.tokensAfter,
    messagesBefore: recorded.messagesBefore,
    messagesAfter: recorded.messagesAfter,
    ...(recorded.followUpRequestId ? { followUpRequestId: recorded.followUpRequestId } : {}),
  };
}

/** What a job activity returns for `answer`: the answer, and its head under the earlier name too. */
export function writeJobAnswer(answer: Answer): Answer & { headSessionId: string } {
  return { ...answer, headSessionId: answer.sessionId };
}
