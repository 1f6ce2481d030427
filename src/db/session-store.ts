/**
 * The data plane: sessions, messages and lineage in Postgres. Appends, transcripts and
 * lineage reads go straight here (never through workflow history); the compaction activity
 * reads snapshots and publishes results here, in single transactions.
 */
import { and, asc, eq, gt, inArray, isNull, lte, sql } from 'drizzle-orm';
import { type Dialect, dialectOf, type DialectName, type Message } from '../compaction/dialects';
import type { GateReport } from '../compaction/gates';
import { HistoryMismatchError, InvalidInputError, LineageClosedError, SessionConflictError, SessionNotFoundError } from '../errors';
import { childSessionId, type CompactionMode, type CompactionOutcome, type CompactResult } from '../workflows/contract';
import type { Database } from './database';
import type { JsonValue } from '../compaction/json';
import { compactions, lineages, messages, rowToMessage, sessions } from './schema';

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];
type Executor = Database | Tx;

export interface LineageInfo {
  lineageId: string;
  headSessionId: string;
  generation: number;
  mode: CompactionMode;
  dialect: DialectName;
  source: string | null;
  compactAtTokens: number | null;
  model: string | null;
  contextWindow: number | null;
  closed: boolean;
}

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
 * A row to insert. A copy of a stored message (`copyOf`, the row it copies) takes its body from
 * that row inside Postgres: the body never passes through JavaScript, whose numbers would
 * round a 64-bit id or an exact decimal another client stored.
 */
function messageRow(
  dialect: Dialect,
  sessionId: string,
  seq: number,
  m: Message,
  tokens: number,
  extra: { lineageSeq?: number | null; originMessageId?: number | null; writtenByCompaction?: string; copyOf?: number } = {},
) {
  return {
    sessionId,
    seq,
    role: dialect.roleOf(m),
    body: extra.copyOf !== undefined ? sql`(select m.body from messages m where m.id = ${extra.copyOf})` : m,
    tokenEstimate: tokens,
    lineageSeq: extra.lineageSeq ?? null,
    originMessageId: extra.originMessageId ?? null,
    writtenByCompaction: extra.writtenByCompaction ?? null,
  };
}

/**
 * Errors raised by the data-plane SQL functions (SQLSTATE SC400..SC412, DETAIL a JSON object
 * naming the type), mapped to the typed errors every other layer uses.
 */
function dataPlaneError(error: unknown): unknown {
  let e: unknown = error;
  while (e && !(typeof (e as { code?: unknown }).code === 'string' && /^SC\d{3}$/.test((e as { code: string }).code))) e = (e as { cause?: unknown }).cause;
  if (!e) return error;
  let detail: Record<string, string>;
  try {
    detail = JSON.parse(String((e as { detail?: string }).detail ?? '{}'));
  } catch {
    return error;
  }
  switch (detail.type) {
    case 'InvalidInputError':
      return new InvalidInputError(detail.field, detail.detail);
    case 'SessionNotFoundError':
      return new SessionNotFoundError(detail.sessionId);
    case 'SessionConflictError':
      return new SessionConflictError(detail.sessionId, detail.detail);
    case 'LineageClosedError':
      return new LineageClosedError(detail.lineageId);
    case 'HistoryMismatchError':
      return new HistoryMismatchError(detail.sessionId, detail.detail);
    default:
      return error;
  }
}

/** Calls one data-plane SQL function and returns its jsonb answer, with typed errors. */
async function callFunction<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T> {
  try {
    const { rows } = await db.execute(query);
    return (rows[0] as { result: T }).result;
  } catch (error) {
    throw dataPlaneError(error);
  }
}

/** Creates a lineage with its root session (SQL `session_create`). Idempotent for the same parameters. */
export async function createSession(
  db: Database,
  input: {
    sessionId: string;
    source?: string;
    mode: CompactionMode;
    dialect?: DialectName;
    compactAtTokens?: number;
    model?: string;
    contextWindow?: number;
  },
): Promise<LineageInfo> {
  const created = await callFunction<LineageInfo & { created: boolean }>(
    db,
    sql`select session_create(${input.sessionId}, ${input.source ?? null}, ${input.mode}, ${input.compactAtTokens ?? null}::integer, ${input.model ?? null}::text, ${input.contextWindow ?? null}::integer, ${input.dialect ?? 'openai-chat'}::text) as result`,
  );
  const { created: _created, ...lineage } = created;
  return lineage;
}

type LineageRow = typeof lineages.$inferSelect;

/** The lineage row of any session id, in one query; locked when `forUpdate`. */
async function lineageRowOf(db: Executor, sessionId: string, options: { forUpdate?: boolean } = {}): Promise<LineageRow> {
  const query = db.select({ lineage: lineages }).from(sessions).innerJoin(lineages, eq(lineages.id, sessions.lineageId)).where(eq(sessions.id, sessionId));
  const [row] = options.forUpdate ? await query.for('update', { of: lineages }) : await query;
  if (!row) throw new SessionNotFoundError(sessionId);
  return row.lineage;
}

function lineageInfo(row: LineageRow): LineageInfo {
  return {
    lineageId: row.id,
    headSessionId: row.headSessionId,
    generation: row.generation,
    mode: row.mode,
    dialect: row.dialect,
    source: row.source,
    compactAtTokens: row.compactAtTokens,
    model: row.model,
    contextWindow: row.contextWindow,
    closed: row.closedAt !== null,
  };
}

/** The lineage any session id belongs to, with its current head. */
export async function lineageOf(db: Executor, sessionId: string, options: { forUpdate?: boolean } = {}): Promise<LineageInfo> {
  return lineageInfo(await lineageRowOf(db, sessionId, options));
}

export interface AppendResult {
  /** The head the messages landed in. */
  sessionId: string;
  lineageId: string;
  firstSeq: number;
  lastSeq: number;
  count: number;
  /** Tokens of the head after the append (the caller's counts, or the SQL estimate). */
  headTokens: number;
  /** The lineage sequence numbers of the first and last message appended. */
  firstLineageSeq: number;
  lastLineageSeq: number;
  /** Set when this append requested an automatic compaction: the request id to send it under. */
  autoCompactionRequestId?: string;
  /** True when this answer is the first append's, for a batch resent with its append key. */
  replayed: boolean;
}

/**
 * Appends to the lineage's head, whichever session id of the lineage is given, with the SQL
 * function `session_append` (one round trip; see docs/wire-contract.md). It locks the
 * lineage row for the few milliseconds of the insert, which orders appends against a
 * compaction's commit: an append lands either before the commit (and is carried into the new
 * head) or after it (in the new head). The function validates the batch's structure (callers
 * check their size limits), stores `tokens[i]` as message i's count (the SQL estimate when
 * absent) and decides, under the same lock, whether this append requests an automatic
 * compaction (see AutoCompactionPolicy). With an `appendKey`, a resent batch answers the
 * first append and writes nothing.
 */
export async function appendMessages(
  db: Executor,
  sessionId: string,
  batch: readonly Message[],
  tokens?: readonly number[],
  policy: AutoCompactionPolicy = DEFAULT_AUTO_COMPACTION_POLICY,
  options: { appendKey?: string } = {},
): Promise<AppendResult> {
  const counts = tokens ? sql`${`{${tokens.join(',')}}`}::integer[]` : sql`null::integer[]`;
  return callFunction<AppendResult>(
    db,
    sql`select session_append(${sessionId}, ${JSON.stringify(batch)}::jsonb, ${options.appendKey ?? null}::text, ${counts}, ${Math.round(policy.resendAfterMs)}::bigint) as result`,
  );
}

/** What session_replace_tail answers: the messages taken back, and the append that followed them, if any. */
export interface ReplaceTailResult {
  sessionId: string;
  lineageId: string;
  /** The messages taken back, oldest first, exactly as they were appended. */
  removed: Message[];
  appended: AppendResult | null;
  replayed: boolean;
}

export interface ReplaceTail {
  /** How many of the head's last live messages to take back; undefined: all of them. Ignored with `expected`. */
  count?: number;
  /** The messages expected at the end of the head: taken back only if JSON-equal (else HistoryMismatchError, nothing changed). */
  expected?: readonly Message[];
  /** Appended after the messages taken back (checked like any append). */
  replacement?: readonly Message[];
  tokens?: readonly number[];
  /** Stores the operation once per lineage (the append keys' namespace). */
  key?: string;
}

/**
 * Takes back the last messages of a lineage's head and appends others in their place, in one
 * transaction under the lineage lock (SQL `session_replace_tail`): the agent frameworks' pop,
 * clear and "replace this exact suffix". A compaction whose summary read a message taken back
 * does not commit (see commitCompaction).
 */
export async function replaceTail(db: Executor, sessionId: string, change: ReplaceTail): Promise<ReplaceTailResult> {
  const count = change.expected ? change.expected.length : (change.count ?? null);
  const expected = change.expected ? JSON.stringify(change.expected) : null;
  const counts = change.tokens ? sql`${`{${change.tokens.join(',')}}`}::integer[]` : sql`null::integer[]`;
  return callFunction<ReplaceTailResult>(
    db,
    sql`select session_replace_tail(${sessionId}, ${count}::integer, ${expected}::jsonb, ${JSON.stringify(change.replacement ?? [])}::jsonb, ${change.key ?? null}::text, ${counts}) as result`,
  );
}

/**
 * Forgets an automatic compaction request whose signal could not be sent, so that the next
 * append requests it again.
 */
export async function releaseAutoCompaction(db: Database, lineageId: string, requestId: string): Promise<void> {
  await callFunction(db, sql`select session_release_auto_compaction(${lineageId}, ${requestId}) as result`);
}

/**
 * Records how a job ended for the threshold policy, in the job's own transaction. `succeeded`
 * (the head is now under the threshold) resets the cooldown ladder, whoever asked. Only a job
 * that answered the lineage's pending automatic request touches the rest: `failed` (refused,
 * aborted, or the head still at or above the threshold) climbs the ladder; `settled` only ends
 * the pending request. A manual compaction's refusal never cools automatic ones down.
 */
async function settleAutoCompaction(
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

/** The live (not archived) messages of one session, in order. */
export async function sessionMessages(db: Executor, sessionId: string, options: { afterSeq?: number; includeArchived?: boolean } = {}) {
  const conditions = [eq(messages.sessionId, sessionId)];
  if (!options.includeArchived) conditions.push(isNull(messages.archivedAt));
  if (options.afterSeq !== undefined) conditions.push(gt(messages.seq, options.afterSeq));
  return db
    .select()
    .from(messages)
    .where(and(...conditions))
    .orderBy(asc(messages.seq));
}

/** A head's messages exactly as appended, in its dialect, with their positions in the head. */
export interface Transcript {
  sessionId: string;
  dialect: DialectName;
  messages: Message[];
  /** `seqs[i]` is the position of `messages[i]` in the head. */
  seqs: number[];
}

/** A row an in-place compaction replaced (kept for the audit). */
export interface ArchivedMessage {
  seq: number;
  archivedAt: string;
  message: Message;
}

/** The transcript of the lineage head reached from any session id of the lineage (SQL `session_transcript`). */
export async function headTranscript(
  db: Database,
  sessionId: string,
  options: { includeArchived?: boolean } = {},
): Promise<Transcript & { archived?: ArchivedMessage[] }> {
  return callFunction(db, sql`select session_transcript(${sessionId}, ${options.includeArchived ?? false}) as result`);
}

export interface LineageSession {
  sessionId: string;
  parentSessionId: string | null;
  endedAt: string | null;
  endReason: string | null;
  messageCount: number;
}

/** Root to head: each session of the lineage with its live message count (SQL `session_lineage`). */
export async function lineageSessions(db: Database, sessionId: string): Promise<{ lineageId: string; headSessionId: string; sessions: LineageSession[] }> {
  const lineage = await callFunction<{ lineageId: string; headSessionId: string; sessions: LineageSession[] }>(
    db,
    sql`select session_lineage(${sessionId}) as result`,
  );
  return { lineageId: lineage.lineageId, headSessionId: lineage.headSessionId, sessions: lineage.sessions };
}

/** Marks a lineage closed: it takes no more appends or compactions. Idempotent. */
export async function closeLineage(db: Database, lineageId: string): Promise<void> {
  await db
    .update(lineages)
    .set({ closedAt: new Date() })
    .where(and(eq(lineages.id, lineageId), isNull(lineages.closedAt)));
}

/** What session_erase deleted: the lineage's rows, by kind. */
export interface ErasedRows {
  lineageId: string;
  messages: number;
  sessions: number;
  compactions: number;
  appendKeys: number;
}

/** Deletes every row of a lineage, reached from any of its session ids, in one transaction (SQL `session_erase`). */
export async function eraseLineageRows(db: Database, sessionId: string): Promise<ErasedRows> {
  return callFunction(db, sql`select session_erase(${sessionId}) as result`);
}

export interface PruneResult {
  messages: number;
  compactions: number;
  appendKeys: number;
  prunedRanges: number;
  /** A kind filled its batch: run again. */
  more: boolean;
}

export interface AuditReport {
  sessions: number;
  lineages: number;
  compactions: number;
  /** Parents with more than one compaction child. */
  forks: number;
  /** Live sessions that are not their lineage's head. */
  orphans: number;
  /** Messages inserted into a session after it ended. */
  writesAfterEnd: number;
  /**
   * Appended messages that are neither live in their lineage's head nor inside the range a
   * committed compaction summarised (its summarised lineage sequence range; for compactions
   * recorded before ranges existed, at or below its watermark). A message a compaction kept
   * verbatim has its latest copy in the compaction's head, so losing that copy counts.
   */
  lostMessages: number;
  /** Appended messages present more than once among a session's live rows. */
  duplicatedMessages: number;
  /** Numbers missing from a lineage's append sequence (rows that vanished). */
  sequenceGaps: number;
  /** Rows beyond the batch an append key stored: a keyed batch stored more than once. */
  duplicatedByKey: number;
  details: { forkedParents: string[]; orphanSessions: string[]; lostMessageIds: number[] };
}

/**
 * Integrity over the whole database, or over one lineage. Every count but the totals must be 0.
 * Ranges a retention run pruned (pruned_messages) are pruned, not missing; an erased lineage
 * has no rows left to count.
 */
export async function audit(db: Database, lineageId?: string): Promise<AuditReport> {
  const count = async (query: ReturnType<typeof sql>) => Number(((await db.execute(query)).rows[0] as { n: string | number }).n);
  const ids = async (query: ReturnType<typeof sql>) => (await db.execute(query)).rows.map((r) => (r as { id: string | number }).id);
  const of = (column: string) => (lineageId === undefined ? sql`true` : sql`${sql.raw(column)} = ${lineageId}`);
  const forkedParents = (
    await ids(sql`select parent_session_id as id from sessions s where ${of('s.lineage_id')} and parent_session_id is not null group by 1 having count(*) > 1`)
  ).map(String);
  const orphanSessions = (
    await ids(sql`select s.id from sessions s join lineages l on l.id = s.lineage_id where ${of('l.id')} and s.ended_at is null and s.id <> l.head_session_id`)
  ).map(String);
  // The latest row of each appended message: live in the head, taken back by the caller, or
  // inside the range a committed compaction of its session summarised (a message a
  // compaction kept verbatim has its latest copy in that compaction's head, so losing that
  // copy counts). Compactions recorded before ranges existed cover up to their watermark.
  const lostMessageIds = (
    await ids(sql`
      with latest as (
        select distinct on (s.lineage_id, m.lineage_seq) m.id, m.session_id, m.seq, m.lineage_seq, m.archived_at, m.archived_by_compaction, m.retracted_by, s.lineage_id
        from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.lineage_seq is not null
        order by s.lineage_id, m.lineage_seq, m.id desc
      )
      select l.id from latest l join lineages g on g.id = l.lineage_id
      where not (l.session_id = g.head_session_id and l.archived_at is null)
        and l.retracted_by is null
        and not exists (
          select 1 from compactions c
          where c.outcome = 'compacted' and c.parent_session_id = l.session_id
            and case when c.summarised_from_seq is not null then l.lineage_seq between c.summarised_from_seq and c.summarised_to_seq
                     else l.seq <= c.watermark_seq end
            and (c.child_session_id <> c.parent_session_id or l.archived_by_compaction = c.id)
        )
      order by l.id`)
  ).map(Number);
  return {
    sessions: await count(sql`select count(*) as n from sessions s where ${of('s.lineage_id')}`),
    lineages: await count(sql`select count(*) as n from lineages g where ${of('g.id')}`),
    compactions: await count(sql`select count(*) as n from compactions c where ${of('c.lineage_id')} and outcome = 'compacted'`),
    forks: forkedParents.length,
    orphans: orphanSessions.length,
    writesAfterEnd: await count(
      sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where ${of('s.lineage_id')} and s.ended_at is not null and m.created_at > s.ended_at`,
    ),
    lostMessages: lostMessageIds.length,
    duplicatedMessages: await count(sql`
      select coalesce(sum(n - 1), 0) as n from (
        select count(*) as n from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.lineage_seq is not null and m.archived_at is null group by m.session_id, m.lineage_seq having count(*) > 1
      ) d`),
    duplicatedByKey: await count(sql`
      select coalesce(sum(greatest(0, stored.n - (k.result->>'count')::int)), 0) as n from append_keys k
      join (
        select s.lineage_id, m.append_key, count(*) as n from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.append_key is not null and m.written_by_compaction is null group by 1, 2
      ) stored on stored.lineage_id = k.lineage_id and stored.append_key = k.append_key`),
    sequenceGaps: await count(sql`
      select coalesce(sum(g.appended_count - coalesce(present.n, 0)), 0) as n from lineages g
      left join (
        select lineage_id, count(distinct seq) as n from (
          select s.lineage_id, m.lineage_seq as seq from messages m join sessions s on s.id = m.session_id where m.lineage_seq is not null
          union all
          select p.lineage_id, generate_series(p.from_seq, p.to_seq) from pruned_messages p
        ) known group by lineage_id
      ) present on present.lineage_id = g.id
      where ${of('g.id')}`),
    details: { forkedParents, orphanSessions, lostMessageIds },
  };
}

// ---------------------------------------------------------------------------------------
// Compaction: snapshot, audit row, commit.

export interface CompactionJob {
  jobId: string;
  lineageId: string;
  /** The head the workflow believes current, and its generation. */
  parentSessionId: string;
  generation: number;
  requestIds: string[];
  trigger: string;
}

export type JobRecord = typeof compactions.$inferSelect;

/** The audit row's fields that describe the job itself. */
function jobRow(job: CompactionJob, model: string) {
  return {
    id: job.jobId,
    lineageId: job.lineageId,
    parentSessionId: job.parentSessionId,
    generation: job.generation + 1,
    requestIds: job.requestIds,
    trigger: job.trigger,
    model,
  };
}

/**
 * Opens (or, on a retried attempt, reopens) the audit row of a job. `attempt` is Temporal's
 * attempt number of the activity: the row keeps the greatest one seen, and only that attempt
 * may decide or commit the job (the fencing token). An attempt that finds a greater one
 * recorded was superseded while it stalled, and must write nothing.
 */
export async function beginJob(db: Database, job: CompactionJob, model: string, attempt: number): Promise<JobRecord> {
  const [row] = await db
    .insert(compactions)
    .values({ ...jobRow(job, model), outcome: 'running', attempts: attempt })
    .onConflictDoUpdate({ target: compactions.id, set: { attempts: sql`greatest(${compactions.attempts}, excluded.attempts)` } })
    .returning();
  return row;
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
    const joined = JSON.stringify(job.requestIds);
    await tx
      .update(compactions)
      .set({
        requestIds: sql`${compactions.requestIds} || coalesce((select jsonb_agg(j.id) from jsonb_array_elements(${joined}::jsonb) as j(id) where not ${compactions.requestIds} @> jsonb_build_array(j.id)), '[]'::jsonb)`,
      })
      .where(eq(compactions.id, job.jobId));
    await settleAutoCompaction(tx, job, outcome === 'refused' || outcome === 'aborted' ? 'failed' : 'settled', policy);
  });
}

export interface SettledJob {
  outcome: 'compacted' | 'aborted';
  headSessionId: string;
  generation: number;
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
): Promise<SettledJob> {
  return db.transaction(async (tx) => {
    const [lineage] = await tx.select().from(lineages).where(eq(lineages.id, job.lineageId)).for('update');
    if (!lineage) throw new SessionNotFoundError(job.lineageId);
    const [row] = await tx
      .insert(compactions)
      .values({ ...jobRow(job, model), outcome: 'aborted', reason, finishedAt: new Date() })
      .onConflictDoUpdate({
        target: compactions.id,
        set: { outcome: 'aborted', reason, finishedAt: new Date() },
        setWhere: sql`${compactions.outcome} <> 'compacted'`,
      })
      .returning({ outcome: compactions.outcome });
    if (row) await settleAutoCompaction(tx, job, 'failed', policy);
    return { outcome: row ? 'aborted' : 'compacted', headSessionId: lineage.headSessionId, generation: lineage.generation };
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
  gate?: string;
  gateResults?: Record<string, string>;
  /**
   * The job was held (its dialect's holdReason: a tool loop open with thinking on), not
   * refused on its merits: an automatic request it answered is settled without climbing the
   * cooldown ladder, so the next append at or above the threshold asks again.
   */
  held?: boolean;
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
  await db.transaction(async (tx) => {
    const decided = await tx
      .update(compactions)
      .set({
        outcome,
        reason: fields.reason ?? null,
        tokensBefore: fields.tokensBefore,
        tokensAfter: fields.tokensAfter,
        messagesBefore: fields.messagesBefore,
        messagesAfter: fields.messagesAfter,
        summariserPromptTokens: fields.promptTokens,
        summariserCompletionTokens: fields.completionTokens,
        gate: fields.gate ?? null,
        gateResults: fields.gateResults ?? null,
        finishedAt: new Date(),
      })
      .where(and(eq(compactions.id, job.jobId), eq(compactions.attempts, attempt), sql`${compactions.outcome} <> 'compacted'`))
      .returning({ id: compactions.id });
    if (decided.length > 0) await settleAutoCompaction(tx, job, outcome === 'refused' && !fields.held ? 'failed' : 'settled', policy);
  });
}

/** A message of the compacted head, with where it came from. */
export interface CompactedMessage {
  message: Message;
  tokens: number;
  /** For a message kept verbatim: the lineage sequence number and appended row it copies. */
  lineageSeq?: number | null;
  originMessageId?: number | null;
  /** For a message kept verbatim: the snapshot row whose stored body the new row copies. */
  sourceRowId?: number;
}

export interface CommitInput {
  job: CompactionJob;
  /** Temporal's attempt number (see beginJob): a superseded attempt may not commit. */
  attempt?: number;
  mode: CompactionMode;
  watermarkSeq: number;
  /** How many live rows of the parent, up to the watermark, the snapshot read (all of them). */
  snapshotRows: number;
  compacted: CompactedMessage[];
  /** Lineage sequence numbers (inclusive) of the appended messages the summary covers. */
  summarised?: { fromSeq: number; toSeq: number };
  /**
   * The gates, run on the exact head about to be committed: the compacted messages followed
   * by `carried`, the messages appended after the watermark, read under the lineage lock.
   */
  verify?: (carried: Array<{ message: Message; tokens: number }>) => GateReport;
  stats: { tokensBefore: number; messagesBefore: number; promptTokens?: number; completionTokens?: number };
  /** How the head was shrunk: a summary, or the masking rung. */
  rung?: 'summary' | 'masking';
  /** A note for the audit row's reason (what the rung did). */
  note?: string;
  /** The new head's ledger: stored on the lineage (the next compaction merges it) and in the audit row. */
  ledger?: JsonValue;
  policy?: AutoCompactionPolicy;
}

export type CommitResult =
  | {
      outcome: 'compacted';
      headSessionId: string;
      generation: number;
      carried: number;
      tokensAfter: number;
      messagesAfter: number;
      alreadyCommitted: boolean;
      reason?: string;
      gateResults?: Record<string, string>;
    }
  | { outcome: 'stale'; headSessionId: string; generation: number; reason: string }
  | { outcome: 'refused'; headSessionId: string; generation: number; reason: string; gate: string; gateResults: Record<string, string>; tokensAfter: number };

/**
 * Publishes a compaction in one transaction: the new head (a child, or the same session
 * with old rows archived) gets the compacted messages followed by every message appended
 * after the snapshot's watermark; the parent ends with exactly one row changed; the lineage
 * moves to the new head and generation. The gates run on that exact head first: a failing
 * gate writes nothing. A retried commit of the same job is answered from the audit row and
 * writes nothing; a commit against a lineage that moved on writes nothing.
 */
export async function commitCompaction(db: Database, input: CommitInput): Promise<CommitResult> {
  const { job } = input;
  const policy = input.policy ?? DEFAULT_AUTO_COMPACTION_POLICY;
  return db.transaction(async (tx) => {
    const [lineage] = await tx.select().from(lineages).where(eq(lineages.id, job.lineageId)).for('update');
    if (!lineage) throw new SessionNotFoundError(job.lineageId);
    // A statement of its own after the lineage lock, so it reads the job's latest state.
    const [record] = await tx.select().from(compactions).where(eq(compactions.id, job.jobId)).for('update');
    if (record?.outcome === 'compacted') {
      return {
        outcome: 'compacted',
        headSessionId: record.childSessionId ?? lineage.headSessionId,
        generation: record.generation,
        carried: 0,
        tokensAfter: record.tokensAfter ?? 0,
        messagesAfter: record.messagesAfter ?? 0,
        alreadyCommitted: true,
      };
    }
    if (record && input.attempt !== undefined && record.attempts !== input.attempt) {
      return {
        outcome: 'stale',
        headSessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `attempt ${input.attempt} was superseded by attempt ${record.attempts}`,
      };
    }
    if (record && record.outcome !== 'running') {
      // The job was already decided (refused, stale or aborted): a late attempt may not commit it.
      return {
        outcome: 'stale',
        headSessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `the compaction already ended as ${record.outcome}`,
      };
    }
    if (lineage.closedAt) return { outcome: 'stale', headSessionId: lineage.headSessionId, generation: lineage.generation, reason: 'the lineage was closed' };
    if (lineage.headSessionId !== job.parentSessionId || lineage.generation !== job.generation) {
      return {
        outcome: 'stale',
        headSessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `the lineage moved on to ${lineage.headSessionId} (generation ${lineage.generation}) while summarising`,
      };
    }

    // Lock the parent's row before reading what to carry: a writer that bypasses the lineage
    // lock holds it FOR SHARE from its insert (the ended-session trigger) to its commit, so it
    // either commits first and is carried, or waits and then finds the parent ended.
    await tx.select({ id: sessions.id }).from(sessions).where(eq(sessions.id, job.parentSessionId)).for('update');
    // A message the summary read may have been taken back since (session_replace_tail): the
    // head this job built would bring it back, so it does not commit.
    const [{ stillLive }] = await tx
      .select({ stillLive: sql<number>`count(*)::int` })
      .from(messages)
      .where(and(eq(messages.sessionId, job.parentSessionId), isNull(messages.archivedAt), lte(messages.seq, input.watermarkSeq)));
    if (stillLive !== input.snapshotRows) {
      return {
        outcome: 'stale',
        headSessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `${input.snapshotRows - stillLive} message(s) the summary read were taken back while summarising`,
      };
    }
    const carried = await sessionMessages(tx, job.parentSessionId, { afterSeq: input.watermarkSeq });
    const tokensAfter = [...input.compacted, ...carried.map((r) => ({ tokens: r.tokenEstimate }))].reduce((sum, m) => sum + m.tokens, 0);
    const report = input.verify?.(carried.map((r) => ({ message: rowToMessage(r), tokens: r.tokenEstimate })));
    if (report?.failed) {
      return {
        outcome: 'refused',
        headSessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `gate ${report.failed.gate}: ${report.failed.reason}`,
        gate: report.failed.gate,
        gateResults: report.results,
        tokensAfter,
      };
    }

    const generation = job.generation + 1;
    const dialect = dialectOf(lineage.dialect);
    let head = job.parentSessionId;
    let firstSeq = 1;
    if (input.mode === 'rotate') {
      head = childSessionId(job.lineageId, generation);
      await tx.insert(sessions).values({ id: head, lineageId: job.lineageId, parentSessionId: job.parentSessionId, generation, source: lineage.source });
    } else {
      const [{ maxSeq }] = await tx
        .select({ maxSeq: sql<number>`coalesce(max(${messages.seq}), 0)::int` })
        .from(messages)
        .where(eq(messages.sessionId, head));
      firstSeq = maxSeq + 1;
      await tx
        .update(messages)
        .set({ archivedAt: new Date(), archivedByCompaction: job.jobId })
        .where(and(eq(messages.sessionId, head), isNull(messages.archivedAt)));
      await tx.update(sessions).set({ generation }).where(eq(sessions.id, head));
    }
    const rows = [
      ...input.compacted.map((m, i) =>
        messageRow(dialect, head, firstSeq + i, m.message, m.tokens, {
          lineageSeq: m.lineageSeq,
          originMessageId: m.originMessageId,
          writtenByCompaction: job.jobId,
          copyOf: m.sourceRowId,
        }),
      ),
      ...carried.map((r, i) =>
        messageRow(dialect, head, firstSeq + input.compacted.length + i, rowToMessage(r), r.tokenEstimate, {
          lineageSeq: r.lineageSeq,
          originMessageId: r.originMessageId ?? r.id,
          writtenByCompaction: job.jobId,
          copyOf: r.id,
        }),
      ),
    ];
    if (rows.length > 0) await tx.insert(messages).values(rows);
    if (input.mode === 'rotate') {
      const ended = await tx
        .update(sessions)
        .set({ endedAt: sql`clock_timestamp()`, endReason: 'compression' })
        .where(and(eq(sessions.id, job.parentSessionId), isNull(sessions.endedAt)))
        .returning({ id: sessions.id });
      if (ended.length !== 1) throw new Error(`parent ${job.parentSessionId} was not live at commit; rolling back`);
    }
    await tx
      .update(lineages)
      .set({ headSessionId: head, generation, headTokens: tokensAfter, ledger: input.ledger ?? null })
      .where(eq(lineages.id, job.lineageId));
    const notes: string[] = input.note ? [input.note] : [];
    if (carried.length > 0) notes.push(`carried ${carried.length} message(s) appended during the summary`);
    const stillAbove = lineage.compactAtTokens !== null && tokensAfter >= lineage.compactAtTokens;
    if (stillAbove) notes.push(`the compacted head still holds ${tokensAfter} tokens, at or above the threshold of ${lineage.compactAtTokens}`);
    await settleAutoCompaction(tx, job, stillAbove ? 'failed' : 'succeeded', policy);
    const reason = notes.length > 0 ? notes.join('; ') : undefined;
    const values = {
      outcome: 'compacted' as const,
      childSessionId: head,
      generation,
      tokensBefore: input.stats.tokensBefore,
      tokensAfter,
      messagesBefore: input.stats.messagesBefore,
      messagesAfter: rows.length,
      summariserPromptTokens: input.stats.promptTokens,
      summariserCompletionTokens: input.stats.completionTokens,
      watermarkSeq: input.watermarkSeq,
      summarisedFromSeq: input.summarised?.fromSeq ?? null,
      summarisedToSeq: input.summarised?.toSeq ?? null,
      gateResults: report?.results ?? null,
      reason: reason ?? null,
      rung: input.rung ?? 'summary',
      ledger: input.ledger ?? null,
      finishedAt: new Date(),
    };
    await tx
      .insert(compactions)
      .values({ id: job.jobId, lineageId: job.lineageId, parentSessionId: job.parentSessionId, requestIds: job.requestIds, trigger: job.trigger, ...values })
      .onConflictDoUpdate({ target: compactions.id, set: values });
    return {
      outcome: 'compacted',
      headSessionId: head,
      generation,
      carried: carried.length,
      tokensAfter,
      messagesAfter: rows.length,
      alreadyCommitted: false,
      reason,
      gateResults: report?.results,
    };
  });
}

/**
 * The answer a decided job gave a request id, from its audit row: answers outlive workflow
 * runs (idle completion, continue-as-new, restarts), so a request id answered once is
 * answered the same way again. Undefined while no decided job holds the id.
 */
export async function recordedAnswer(db: Database, lineageId: string, requestId: string): Promise<CompactResult | undefined> {
  return (await callFunction<CompactResult | null>(db, sql`select session_recorded_answer(${lineageId}, ${requestId}) as result`)) ?? undefined;
}

/** The ledger of a session's lineage head, by any session id of it (SQL session_ledger; null before its first compaction with a ledger). */
export async function sessionLedger(db: Executor, sessionId: string): Promise<JsonValue | null> {
  return callFunction<JsonValue | null>(db, sql`select session_ledger(${sessionId}) as result`);
}

/** The ledger of the lineage's current head (null before its first compaction with a ledger). */
export async function headLedger(db: Executor, lineageId: string): Promise<JsonValue | null> {
  const [row] = await db.select({ ledger: lineages.ledger }).from(lineages).where(eq(lineages.id, lineageId));
  return (row?.ledger as JsonValue | undefined) ?? null;
}

export async function auditRows(db: Database, lineageId: string): Promise<JobRecord[]> {
  return db.select().from(compactions).where(eq(compactions.lineageId, lineageId)).orderBy(asc(compactions.startedAt));
}
