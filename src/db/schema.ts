/**
 * Postgres schema: lineages, sessions, messages and the compaction audit log.
 * The constraints here hold even for a writer that bypasses the workflow:
 * - a parent has at most one compaction child (unique parent_session_id);
 * - an ended session has an end reason, and no message can be inserted into it (trigger,
 *   see migrations/0001_live_sessions_only.sql);
 * - a lineage commits at most one compaction per generation (partial unique index).
 */
import { sql } from 'drizzle-orm';
import { type AnyPgColumn, bigserial, bigint, check, customType, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { DIALECT_NAMES, type DialectName, type Message } from '../compaction/dialects/types';
import type { GainFigures, RungCost } from '../compaction/gain';
import type { JsonValue } from '../compaction/json';

/**
 * A jsonb column read back exactly as stored. The node driver already parses jsonb; drizzle's
 * own jsonb type parses a value that arrives as a string a second time, so a JSON text such as
 * "42" or "{\"ok\":true}" (what tools return) would come back as a number or an object. This
 * type never parses twice: what is written is what is read.
 */
const jsonb = <T = JsonValue>(name: string) =>
  customType<{ data: T; driverData: unknown }>({
    dataType: () => 'jsonb',
    toDriver: (value) => JSON.stringify(value),
    fromDriver: (value) => value as T,
  })(name);

/**
 * The known dialects, one row per entry of src/compaction/dialects/registry.ts (seeded by
 * migration 0019): session_create and sc_check_batch read them, and a lineage's dialect refers to one.
 */
export const dialects = pgTable(
  'dialects',
  {
    name: text('name').primaryKey(),
    /** The order the names are listed in (the registry's). */
    position: integer('position').notNull().unique(),
    /** The SQL function that checks one message of the dialect at append: sc_<dialect>_problem. */
    problemFunction: text('problem_function').notNull().unique(),
    /** The message field a forged summary marker is reported at. */
    summaryMarkerField: text('summary_marker_field', { enum: ['content', 'parts'] }).notNull(),
    /** A message name reserved for the summaries this service writes, when the dialect has one. */
    reservedName: text('reserved_name'),
  },
  (t) => [check('dialects_summary_marker_field_known', sql`${t.summaryMarkerField} in ('content', 'parts')`)],
);

export const lineages = pgTable(
  'lineages',
  {
    /** The root (first) session id of the lineage. */
    id: text('id').primaryKey(),
    headSessionId: text('head_session_id').notNull(),
    /** Number of committed compactions. */
    generation: integer('generation').notNull().default(0),
    mode: text('mode', { enum: ['rotate', 'in_place'] }).notNull(),
    /** The provider API format of the lineage's messages (src/compaction/dialects), chosen at create. */
    dialect: text('dialect', { enum: DIALECT_NAMES as unknown as [DialectName, ...DialectName[]] })
      .notNull()
      .default('openai-chat')
      .references(() => dialects.name),
    source: text('source'),
    /** Messages ever appended to the lineage: the last per-lineage append sequence number. */
    appendedCount: integer('appended_count').notNull().default(0),
    /** Estimated tokens of the head's live messages, kept up to date by appends and commits. */
    headTokens: bigint('head_tokens', { mode: 'number' }).notNull().default(0),
    /** Auto-compaction threshold: an append that leaves headTokens at or above it requests a compaction. */
    compactAtTokens: integer('compact_at_tokens'),
    /** The model the agent talks to: chooses the tokenizer for token counts (null: estimates). */
    model: text('model'),
    /** The model's context window in tokens, when known: no compacted head may exceed it. */
    contextWindow: integer('context_window'),
    /** The auto-compaction request the appends sent for the current head, while it is pending. */
    autoRequestId: text('auto_request_id'),
    /** The generation that request was for: a commit moves on, which ends it as pending. */
    autoRequestGeneration: integer('auto_request_generation'),
    autoRequestedAt: timestamp('auto_requested_at', { withTimezone: true }),
    /** Consecutive jobs that were refused, aborted, or left the head above the threshold by themselves: the cooldown ladder's step. */
    autoFailures: integer('auto_failures').notNull().default(0),
    /**
     * Follow-up compactions asked in a row by commits that shrank the head but left it at or
     * above the threshold with the rows appended meanwhile (src/db/functions/sc_compaction_commit.sql):
     * past AutoCompactionPolicy.maxFollowUps none is asked at once. A commit under the threshold resets it.
     */
    autoFollowUps: integer('auto_follow_ups').notNull().default(0),
    /** No auto-compaction is requested before this time. */
    autoCooldownUntil: timestamp('auto_cooldown_until', { withTimezone: true }),
    /** The ledger of the current head (src/compaction/ledger.ts): the next compaction merges it into its own. */
    ledger: jsonb('ledger'),
    /** The rungs the lineage may use (set at create, names of RUNGS in their order); null: the worker's default (COMPACTION_RUNGS). */
    rungs: text('rungs').array(),
    closedAt: timestamp('closed_at', { withTimezone: true }),
    /**
     * Set at create (a random id): erasing the lineage and creating the same id again gives a new
     * one, so a job or a writer that holds the old one is refused instead of landing in the new lineage.
     */
    incarnation: text('incarnation')
      .notNull()
      .default(sql`gen_random_uuid()::text`),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('lineages_mode_known', sql`${t.mode} in ('rotate', 'in_place')`)],
);

export const sessions = pgTable(
  'sessions',
  {
    id: text('id').primaryKey(),
    lineageId: text('lineage_id')
      .notNull()
      .references(() => lineages.id),
    parentSessionId: text('parent_session_id').references((): AnyPgColumn => sessions.id),
    generation: integer('generation').notNull().default(0),
    source: text('source'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
    endReason: text('end_reason'),
  },
  (t) => [
    // The fork guard: a parent session has at most one child.
    uniqueIndex('sessions_one_child_per_parent').on(t.parentSessionId),
    index('sessions_lineage').on(t.lineageId),
    check('sessions_end_has_reason', sql`(${t.endedAt} is null) = (${t.endReason} is null)`),
  ],
);

export const messages = pgTable(
  'messages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    sessionId: text('session_id')
      .notNull()
      .references(() => sessions.id),
    /** Position in the session, from 1. */
    seq: integer('seq').notNull(),
    /** The role the message is filed under (its dialect's roleOf), for listings and the inspector. */
    role: text('role', { enum: ['system', 'developer', 'user', 'assistant', 'tool'] }).notNull(),
    /** The message exactly as appended (JSON-equal): every field, known or not. */
    body: jsonb<Message>('body').notNull(),
    tokenEstimate: integer('token_estimate').notNull(),
    /**
     * The append's place in its lineage (1, 2, 3, ... across all sessions of the lineage), on
     * appended rows and on the copies a compaction carries forward; null on rows a compaction
     * wrote itself (the summary, the kept head and tail). The audit finds lost and duplicated
     * messages by it.
     */
    lineageSeq: integer('lineage_seq'),
    /** For a row carried into a new head by a compaction: the appended row it copies. */
    originMessageId: bigint('origin_message_id', { mode: 'number' }),
    /** The compaction that wrote this row (summary, kept head/tail, carried copy), or null for an append. */
    writtenByCompaction: text('written_by_compaction'),
    /** The append key of the batch that appended this row, when the caller gave one (the audit counts duplicates by key). */
    appendKey: text('append_key'),
    /** Set when an in-place compaction replaced the row; archived rows stay for audit. */
    archivedAt: timestamp('archived_at', { withTimezone: true }),
    archivedByCompaction: text('archived_by_compaction'),
    /** Set (with archivedAt) when the caller took the row back (session_replace_tail): the operation's key, or 'unkeyed'. */
    retractedBy: text('retracted_by'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('messages_session_seq').on(t.sessionId, t.seq)],
);

export const compactions = pgTable(
  'compactions',
  {
    /** The workflow's job id: one row per compaction attempt of the queue. */
    id: text('id').primaryKey(),
    lineageId: text('lineage_id')
      .notNull()
      .references(() => lineages.id),
    parentSessionId: text('parent_session_id').notNull(),
    childSessionId: text('child_session_id'),
    /** The generation this compaction would produce. */
    generation: integer('generation').notNull(),
    requestIds: jsonb<string[]>('request_ids').notNull(),
    trigger: text('trigger').notNull(),
    model: text('model'),
    tokensBefore: bigint('tokens_before', { mode: 'number' }),
    tokensAfter: bigint('tokens_after', { mode: 'number' }),
    messagesBefore: integer('messages_before'),
    messagesAfter: integer('messages_after'),
    summariserPromptTokens: integer('summariser_prompt_tokens'),
    summariserCompletionTokens: integer('summariser_completion_tokens'),
    /** Prompt tokens the provider served from its prompt cache, where it reports them. */
    summariserCachedPromptTokens: integer('summariser_cached_prompt_tokens'),
    /** The last parent seq the summariser saw; later rows were carried over at commit. */
    watermarkSeq: integer('watermark_seq'),
    /** Lineage sequence numbers (inclusive) of the first and last appended message the summary covers. */
    summarisedFromSeq: integer('summarised_from_seq'),
    summarisedToSeq: integer('summarised_to_seq'),
    /** The gate that refused the job (see src/compaction/gates.ts), or null. */
    gate: text('gate'),
    /** Each gate's verdict on the head the job would have committed: 'pass' or the reason it failed. */
    gateResults: jsonb<Record<string, string>>('gate_results'),
    attempts: integer('attempts').notNull().default(0),
    /** How many times the commit found rows appended that the gates had not seen, and gated again. */
    commitRetries: integer('commit_retries'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    outcome: text('outcome', { enum: ['running', 'compacted', 'stale', 'refused', 'aborted'] }).notNull(),
    reason: text('reason'),
    /**
     * How a committed compaction shrank the head: 'summary', 'masking' (old tool outputs replaced, no summariser call),
     * or 'trim' (the oldest groups dropped, the ledger kept: no summary could bring the head under its target).
     */
    rung: text('rung', { enum: ['summary', 'masking', 'native', 'trim'] }),
    /** Why each rung before the one that answered passed, by rung name (`{ "summary": "the summariser refused its input as too long ..." }`); null when none did. */
    passedRungs: jsonb<Record<string, string>>('passed_rungs'),
    /** The ledger the compaction committed (src/compaction/ledger.ts). */
    ledger: jsonb('ledger'),
    /** Tokens billed per rung that ran, by rung name (RungCost, src/compaction/gain.ts); null when no rung ran. */
    costs: jsonb<Record<string, RungCost>>('costs'),
    /** The minimum-gain guard's figures (GainFigures, src/compaction/gain.ts), for an automatic compaction it judged. */
    gain: jsonb<GainFigures>('gain'),
    /** The follow-up compaction this commit asked for at once: it shrank the head, which is still at or above the threshold. */
    followUpRequestId: text('follow_up_request_id'),
  },
  (t) => [
    check('compactions_rung_known', sql`${t.rung} is null or ${t.rung} in ('summary', 'masking', 'native', 'trim')`),
    uniqueIndex('compactions_one_commit_per_generation')
      .on(t.lineageId, t.generation)
      .where(sql`${t.outcome} = 'compacted'`),
    index('compactions_lineage').on(t.lineageId),
  ],
);

/**
 * Append keys: an append sent with a key is stored once per lineage; a resend with the same
 * key (a retry after a lost answer) gets the first answer and writes nothing. Written by the
 * session_append SQL function (functions/session_append.sql).
 */
export const appendKeys = pgTable(
  'append_keys',
  {
    lineageId: text('lineage_id')
      .notNull()
      .references(() => lineages.id),
    appendKey: text('append_key').notNull(),
    /** md5 of the batch as sent: a key reused for another batch is refused, not answered. */
    batchHash: text('batch_hash').notNull(),
    result: jsonb<unknown>('result').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.lineageId, t.appendKey] })],
);

/**
 * Appended messages a retention run deleted with no other copy left in their lineage, as
 * ranges of lineage sequence numbers (functions/retention_prune.sql): the audit
 * counts them as pruned, not lost. `lineage_id` names a lineage without a foreign key, so
 * that retention never takes a lineage's lock (migration 0018); session_erase deletes the
 * ranges with the lineage.
 */
export const prunedMessages = pgTable(
  'pruned_messages',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    lineageId: text('lineage_id').notNull(),
    fromSeq: integer('from_seq').notNull(),
    toSeq: integer('to_seq').notNull(),
    rows: integer('rows').notNull(),
    prunedAt: timestamp('pruned_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('pruned_messages_range', sql`${t.fromSeq} <= ${t.toSeq}`), index('pruned_messages_lineage').on(t.lineageId)],
);

/**
 * The compaction event log (migration 0024): one row per change of a job's status, appended by
 * the trigger compactions_event_log from the audit rows (functions/sc_log_compaction_event.sql)
 * and read only through session_compaction_events (the clients' compactionEvents). `tx` is the
 * writing transaction's id, which orders the log for readers; `reason` is set on an event the
 * log derived. An event goes with its audit row (ON DELETE CASCADE).
 */
export const compactionEvents = pgTable(
  'compaction_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    lineageId: text('lineage_id').notNull(),
    compactionId: text('compaction_id')
      .notNull()
      .references(() => compactions.id, { onDelete: 'cascade' }),
    status: text('status', { enum: ['in_progress', 'completed', 'failed', 'cancelled'] }).notNull(),
    reason: text('reason'),
    tx: customType<{ data: string }>({ dataType: () => 'xid8' })('tx')
      .notNull()
      .default(sql`pg_current_xact_id()`),
    recordedAt: timestamp('recorded_at', { withTimezone: true })
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [
    check('compaction_events_status_known', sql`${t.status} in ('in_progress', 'completed', 'failed', 'cancelled')`),
    index('compaction_events_lineage').on(t.lineageId, t.tx, t.id),
    index('compaction_events_compaction').on(t.compactionId),
  ],
);

export type MessageRow = typeof messages.$inferSelect;

/** The message a row holds, exactly as it was appended. */
export const rowToMessage = (row: Pick<MessageRow, 'body'>): Message => row.body;
