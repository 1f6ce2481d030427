/**
 * The compaction activities, built by a factory so the worker (and tests) inject the database
 * and the summariser. `compactSession` is the only one on the happy path: one attempt of a job
 * (attempt.ts, its steps one file each: decision, snapshot, rungs, summarise, commit, decide).
 * The rest record what the workflow decided: an aborted job, the requests that joined a job, a
 * lineage closed.
 */
import { abortJob, closeLineageOf, lineageState, recordJoinedRequests as recordJoinedRequestsInStore } from '../../db/session-store';
import { SessionNotFoundError } from '../../errors';
import type { Answer, CompactionJob, CompactionOutcome } from '../../workflows/contract';
import { writeJobAnswer } from '../../workflows/job-answer';
import { compactionAttempt } from './attempt';
import { defaultRungSetting } from './rung-setting';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';

export type { CompactSessionInput, CompactionActivityDeps } from './deps';

export function createCompactionActivities(given: CompactionActivityDeps) {
  // The worker's default rung setting is checked at start: an unknown name stops it.
  const deps = { ...given, rungs: defaultRungSetting(given.rungs) };
  const policy = deps.autoCompaction;

  async function compactSession(input: CompactSessionInput): Promise<Answer> {
    // A failure is made fit for history, logs and spans by the worker (activities/failures.ts).
    return writeJobAnswer(await compactionAttempt(input, deps));
  }

  /**
   * Records a compaction the workflow gave up on (summariser failed for good) and returns
   * what Postgres holds, which the workflow adopts.
   */
  async function recordAbortedCompaction(input: CompactionJob & { reason: string }): Promise<Answer> {
    const { reason, ...job } = input;
    const settled = await abortJob(deps.db, job, deps.summariser.model, reason, policy);
    if (settled.outcome === 'aborted') return writeJobAnswer({ ...settled, reason });
    // A lost attempt committed this job: its answer is the commit's.
    return writeJobAnswer({ ...settled, previousSessionId: settled.sessionId !== job.parentSessionId ? job.parentSessionId : undefined });
  }

  /** Records the requests that joined a job while it ran (see recordJoinedRequests). */
  async function recordJoinedRequests(input: Pick<CompactionJob, 'jobId' | 'lineageId' | 'requestIds'> & { outcome: CompactionOutcome }): Promise<void> {
    const { outcome, ...job } = input;
    await recordJoinedRequestsInStore(deps.db, job, outcome, policy);
  }

  /** Closed, or erased (no row left: a run started for an erased lineage ends at once); a new workflow run checks first. */
  async function isLineageClosed(lineageId: string): Promise<boolean> {
    try {
      return (await lineageState(deps.db, lineageId)).closed;
    } catch (error) {
      if (error instanceof SessionNotFoundError) return true;
      throw error;
    }
  }

  /** Marks the lineage closed in Postgres once the workflow has drained its queue. */
  async function markLineageClosed(lineageId: string): Promise<void> {
    try {
      await closeLineageOf(deps.db, lineageId);
    } catch (error) {
      // Erased meanwhile: nothing is left to close.
      if (!(error instanceof SessionNotFoundError)) throw error;
    }
  }

  return { compactSession, recordAbortedCompaction, recordJoinedRequests, markLineageClosed, isLineageClosed };
}

export type CompactionActivities = ReturnType<typeof createCompactionActivities>;
