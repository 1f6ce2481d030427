/**
 * The data plane's SQL functions (docs/wire-contract.md), called from TypeScript: create,
 * append, take back, read the head, the lineage, a recorded answer and the ledger, erase.
 * Every statement is one call of a function every client language shares; their errors
 * (SQLSTATE SC400..SC412) come back as the typed errors of src/errors.ts.
 */
import { sql } from 'drizzle-orm';
import type { DialectName, Message } from '../compaction/dialects';
import type { JsonValue } from '../compaction/json';
import type { CompactionMode, CompactResult } from '../workflows/contract';
import { type AutoCompactionPolicy, DEFAULT_AUTO_COMPACTION_POLICY } from './auto-compaction';
import type { Database } from './database';
import type { Executor } from './executor';
import type { LineageInfo } from './lineage-state';
import { dataPlaneError } from './postgres-errors';

/** Calls one data-plane SQL function and returns its jsonb answer, with typed errors. */
export async function callFunction<T>(db: Executor, query: ReturnType<typeof sql>): Promise<T> {
  try {
    const { rows } = await db.execute(query);
    return (rows[0] as { result: T }).result;
  } catch (error) {
    throw dataPlaneError(error);
  }
}

/** A list of names as a SQL text[] (null when absent), sent as one jsonb parameter. */
const rungsArray = (names: readonly string[] | undefined) => {
  const json = names === undefined ? null : JSON.stringify(names);
  return sql`CASE WHEN ${json}::jsonb IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(${json}::jsonb)) END`;
};

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
    /** The rungs the lineage may use; absent: the worker's default. */
    rungs?: readonly string[];
  },
): Promise<LineageInfo> {
  const created = await callFunction<LineageInfo & { created: boolean }>(
    db,
    sql`select session_create(${input.sessionId}, ${input.source ?? null}, ${input.mode}, ${input.compactAtTokens ?? null}::integer, ${input.model ?? null}::text, ${input.contextWindow ?? null}::integer, ${input.dialect ?? 'openai-chat'}::text, ${rungsArray(input.rungs)}) as result`,
  );
  const { created: _created, ...lineage } = created;
  return lineage;
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
 * first append and writes nothing. With an `incarnation` (LineageInfo.incarnation, learnt at
 * create or first use), an append to a lineage erased since, even one whose id was created
 * again, is a LineageErasedError and writes nothing.
 */
export async function appendMessages(
  db: Executor,
  sessionId: string,
  batch: readonly Message[],
  tokens?: readonly number[],
  policy: AutoCompactionPolicy = DEFAULT_AUTO_COMPACTION_POLICY,
  options: { appendKey?: string; incarnation?: string } = {},
): Promise<AppendResult> {
  const counts = tokens ? sql`${`{${tokens.join(',')}}`}::bigint[]` : sql`null::bigint[]`;
  return callFunction<AppendResult>(
    db,
    sql`select session_append(${sessionId}, ${JSON.stringify(batch)}::jsonb, ${options.appendKey ?? null}::text, ${counts}, ${Math.round(policy.resendAfterMs)}::bigint, ${options.incarnation ?? null}::text) as result`,
  );
}

/**
 * The batch stored under `appendKey` in the lineage of `sessionId` (any of its session ids),
 * its messages in order exactly as appended, wherever they are now (the head, a session a
 * compaction ended, archived), copies a compaction made left out; null when the key stored
 * nothing. Read only (SQL `session_appended_under`): how a retried step learns what its first attempt stored.
 */
export async function messagesUnderAppendKey(db: Executor, sessionId: string, appendKey: string): Promise<Message[] | null> {
  return callFunction<Message[] | null>(db, sql`select session_appended_under(${sessionId}, ${appendKey}) as result`);
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
  /** The lineage's incarnation the caller holds (as appendMessages'): an erased one is a LineageErasedError. */
  incarnation?: string;
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
  const counts = change.tokens ? sql`${`{${change.tokens.join(',')}}`}::bigint[]` : sql`null::bigint[]`;
  return callFunction<ReplaceTailResult>(
    db,
    sql`select session_replace_tail(${sessionId}, ${count}::integer, ${expected}::jsonb, ${JSON.stringify(change.replacement ?? [])}::jsonb, ${change.key ?? null}::text, ${counts}, ${change.incarnation ?? null}::text) as result`,
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
 * The lineage of any session id, with its current head (SQL `session_lineage_state`):
 * SessionNotFoundError for an unknown id. What a client reads; the worker reads the row itself
 * (lineageOf, src/db/lineage-state.ts).
 */
export async function lineageState(db: Executor, sessionId: string): Promise<LineageInfo & { sessionId: string }> {
  const { rungs: _rungs, ...lineage } = await callFunction<LineageInfo & { sessionId?: string }>(db, sql`select session_lineage_state(${sessionId}) as result`);
  // The session's stored name (with tenants, `<tenant>:<id>`); a database before it answered none.
  return { ...lineage, sessionId: lineage.sessionId ?? sessionId };
}

/** The live messages of exactly this session, in order, as appended (SQL `session_messages`); [] for an unknown id. */
export async function sessionMessageBodies(db: Executor, sessionId: string): Promise<Message[]> {
  return callFunction<Message[]>(db, sql`select session_messages(${sessionId}) as result`);
}

/** Marks the lineage of any of its session ids closed (SQL `session_close`): it takes no more appends or compactions. Idempotent. */
export async function closeLineageOf(db: Executor, sessionId: string): Promise<void> {
  await callFunction(db, sql`select session_close(${sessionId}) as result`);
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

/** What session_erase deleted: the lineage's rows, by kind. */
export interface ErasedRows {
  lineageId: string;
  messages: number;
  sessions: number;
  compactions: number;
  appendKeys: number;
}

/**
 * Deletes every row of a lineage, reached from any of its session ids, in one transaction (SQL
 * `session_erase`). A lineage still open is refused (InvalidInputError, field `close`) unless
 * `close` closes it in the same call.
 */
export async function eraseLineageRows(db: Database, sessionId: string, options: { close?: boolean } = {}): Promise<ErasedRows> {
  return callFunction(db, sql`select session_erase(${sessionId}, ${options.close ?? false}) as result`);
}

export interface PruneResult {
  messages: number;
  compactions: number;
  appendKeys: number;
  prunedRanges: number;
  /** A kind filled its batch: run again. */
  more: boolean;
}

/**
 * The answer a decided job gave a request id, from its audit row: answers outlive workflow
 * runs (idle completion, continue-as-new, restarts), so a request id answered once is
 * answered the same way again. Undefined while no decided job holds the id.
 */
export async function recordedAnswer(db: Database, lineageId: string, requestId: string): Promise<CompactResult | undefined> {
  return (await callFunction<CompactResult | null>(db, sql`select session_recorded_answer(${lineageId}, ${requestId}) as result`)) ?? undefined;
}

/** The ledger of the head of a session's lineage, by any session id of it (SQL session_ledger, its wire name; null before its first compaction with a ledger). */
export async function headLedger(db: Executor, sessionId: string): Promise<JsonValue | null> {
  return callFunction<JsonValue | null>(db, sql`select session_ledger(${sessionId}) as result`);
}
