/**
 * A compaction job's audit row: opened (and reopened) per attempt with the fencing token, the
 * requests that joined it, and its decision when it does not commit (refused, stale,
 * aborted). The commit itself is src/db/commit.ts. Opening a job is one SQL function
 * (sc_compaction_begin.sql: the audit row, the lineage, its ledger and the snapshot in one
 * round trip, on every attempt's critical path); the bookkeeping after it is drizzle.
 */
import { asc, eq, sql } from 'drizzle-orm';
import { SessionNotFoundError } from '../errors';
import type { Message } from '../compaction/dialects';
import type { GainFigures, RungCost } from '../compaction/gain';
import type { JsonValue } from '../compaction/json';
import type { Answer, CompactionJob, CompactionOutcome } from '../workflows/contract';
import { type AutoCompactionPolicy, DEFAULT_AUTO_COMPACTION_POLICY, settleAutoCompaction } from './auto-compaction';
import type { Database } from './database';
import type { LineageInfo } from './lineage-state';
import { compactions } from './schema';

export type JobRecord = typeof compactions.$inferSelect;

/** The audit row's fields that describe the job itself. */
/** The audit row of a job the workflow gave up on, as sc_job_abort takes it. */
function abortedJob(job: CompactionJob, model: string, reason: string) {
  return {
    jobId: job.jobId,
    lineageId: job.lineageId,
    parentSessionId: job.parentSessionId,
    generation: job.generation + 1,
    requestIds: job.requestIds,
    trigger: job.trigger,
    model,
    reason,
  };
}

/** The audit row's fields an attempt decides by when it starts. */
interface JobState {
  outcome: JobRecord['outcome'];
  attempts: number;
  generation: number;
  parentSessionId: string;
  childSessionId: string | null;
  messagesAfter: number | null;
  reason: string | null;
  gate: string | null;
  /** The follow-up a committed job asked for (sc_compaction_commit.sql), so a retried attempt answers it too. */
  followUpRequestId?: string | null;
}

/** A stored message row as a compaction reads it. */
export interface SnapshotRow {
  id: number;
  seq: number;
  body: Message;
  tokenEstimate: number;
  lineageSeq: number | null;
  originMessageId: number | null;
}

/** What an attempt starts from: its audit row, the lineage, the head's ledger and the parent's live rows. */
export interface StartedJob {
  job: JobState;
  lineage: LineageInfo;
  ledger: JsonValue | null;
  rows: SnapshotRow[];
}

/**
 * Opens (or, on a retried attempt, reopens) the audit row of a job and reads what the attempt
 * summarises, in one statement (src/db/functions/sc_compaction_begin.sql). `attempt` is Temporal's
 * attempt number of the activity: the row keeps the greatest one seen, and only that attempt
 * may decide or commit the job (the fencing token). An attempt that finds a greater one
 * recorded was superseded while it stalled, and must write nothing.
 */
export async function beginJob(db: Database, job: CompactionJob, model: string, attempt: number): Promise<StartedJob | ErasedLineage> {
  const input = { ...job, model, attempt };
  const { rows } = await db.execute<{ started: StartedJob | { missing: true } | ErasedLineage }>(
    sql`select sc_compaction_begin(${JSON.stringify(input)}::jsonb) as started`,
  );
  const started = rows[0].started;
  if ('missing' in started) throw new SessionNotFoundError(job.lineageId);
  return started;
}

/** What beginJob answers when the job's lineage was erased and its id created again (job.incarnation differs): nothing was written. */
export interface ErasedLineage {
  erased: true;
  headSessionId: string;
  generation: number;
}

/**
 * Adds the requests that joined a job while it ran to its audit row, so that their answer
 * outlives the workflow run as well (`recordedAnswer`), and settles an automatic request among
 * them as the job ended (a refused or aborted job climbs the ladder; otherwise it is no longer
 * pending). Idempotent: an id already in the row is not added again.
 */
export async function recordJoinedRequests(
  db: Database,
  job: Pick<CompactionJob, 'jobId' | 'lineageId' | 'requestIds'>,
  outcome: CompactionOutcome,
  policy: AutoCompactionPolicy = DEFAULT_AUTO_COMPACTION_POLICY,
): Promise<void> {
  await db.transaction(async (tx) => {
    // sc_job_record_joined.sql: false when no row is left (the lineage was erased; the id may be a
    // new lineage's now), and nothing of this job may touch it.
    const { rows } = await tx.execute<{ recorded: boolean }>(
      sql`select sc_job_record_joined(${job.jobId}, ${JSON.stringify(job.requestIds)}::jsonb) as recorded`,
    );
    if (!rows[0].recorded) return;
    await settleAutoCompaction(tx, job, outcome === 'refused' || outcome === 'aborted' ? 'failed' : 'settled', policy);
  });
}

/**
 * Records a job the workflow gave up on. Under the lineage lock, so that it is ordered with
 * any commit of the same job: a job that committed stays committed, and the answer says so,
 * with the head Postgres holds.
 */
export async function abortJob(
  db: Database,
  job: CompactionJob,
  model: string,
  reason: string,
  policy: AutoCompactionPolicy = DEFAULT_AUTO_COMPACTION_POLICY,
): Promise<Pick<Answer, 'sessionId' | 'generation'> & { outcome: 'compacted' | 'aborted' }> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.execute<{ answer: { missing?: true; aborted: boolean; headSessionId: string; generation: number } }>(
      sql`select sc_job_abort(${JSON.stringify(abortedJob(job, model, reason))}::jsonb) as answer`,
    );
    const answer = rows[0].answer;
    if (answer.missing) throw new SessionNotFoundError(job.lineageId);
    if (answer.aborted) await settleAutoCompaction(tx, job, 'failed', policy);
    return { outcome: answer.aborted ? 'aborted' : 'compacted', sessionId: answer.headSessionId, generation: answer.generation };
  });
}

export interface JobFields {
  reason?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  messagesBefore?: number;
  messagesAfter?: number;
  promptTokens?: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
  gate?: string;
  gateResults?: Record<string, string>;
  /** Why each rung that passed did, by rung name (src/activities/compaction/rungs.ts). */
  passedRungs?: Record<string, string>;
  /**
   * The job was held (its dialect's holdReason: a tool loop open with thinking on), not
   * refused on its merits: an automatic request it answered is settled without climbing the
   * cooldown ladder, so the next append at or above the threshold asks again.
   */
  held?: boolean;
  /**
   * The minimum-gain guard declined the job (src/compaction/gain.ts): it would not repay its cost.
   * As for a held job, an automatic request it answered is settled without climbing the cooldown ladder.
   */
  declined?: boolean;
  /** What each rung that ran was billed, by rung name. */
  costs?: Record<string, RungCost>;
  /** The minimum-gain guard's figures. */
  gain?: GainFigures;
}

/**
 * Decides a job that did not commit. Only the greatest attempt seen may decide it (see
 * beginJob), and a job that committed stays committed. A refused job climbs the
 * auto-compaction cooldown ladder; a stale one only ends the pending auto request.
 */
export async function finishJob(
  db: Database,
  job: Pick<CompactionJob, 'jobId' | 'lineageId' | 'requestIds'>,
  attempt: number,
  outcome: 'stale' | 'refused',
  fields: JobFields,
  policy: AutoCompactionPolicy = DEFAULT_AUTO_COMPACTION_POLICY,
): Promise<void> {
  // sc_job_finish.sql; a field left undefined is absent from the JSON and keeps the row's value.
  const decision = {
    jobId: job.jobId,
    attempt,
    outcome,
    reason: fields.reason ?? null,
    tokensBefore: fields.tokensBefore,
    tokensAfter: fields.tokensAfter,
    messagesBefore: fields.messagesBefore,
    messagesAfter: fields.messagesAfter,
    promptTokens: fields.promptTokens,
    completionTokens: fields.completionTokens,
    cachedPromptTokens: fields.cachedPromptTokens,
    gate: fields.gate ?? null,
    gateResults: fields.gateResults ?? null,
    passedRungs: fields.passedRungs && Object.keys(fields.passedRungs).length > 0 ? fields.passedRungs : null,
    costs: fields.costs && Object.keys(fields.costs).length > 0 ? fields.costs : null,
    gain: fields.gain ?? null,
  };
  await db.transaction(async (tx) => {
    const { rows } = await tx.execute<{ decided: boolean }>(sql`select sc_job_finish(${JSON.stringify(decision)}::jsonb) as decided`);
    if (rows[0].decided) await settleAutoCompaction(tx, job, outcome === 'refused' && !fields.held && !fields.declined ? 'failed' : 'settled', policy);
  });
}

/** The audit rows of a lineage, oldest first: the tests' and operators' reads (as a login that may read the table). */
export async function auditRows(db: Database, lineageId: string): Promise<JobRecord[]> {
  return db.select().from(compactions).where(eq(compactions.lineageId, lineageId)).orderBy(asc(compactions.startedAt));
}
