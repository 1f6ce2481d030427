/**
 * Read-only queries for operators: the list of lineages, a lineage's compaction history, one
 * compaction with the transcripts around it, and the integrity audit of one lineage. They
 * read Postgres only (they work while Temporal is down) and every value reaches SQL as a
 * bound parameter (drizzle's `sql` template), never spliced into the text.
 *
 * Compaction rows are read with `to_jsonb(c)`, so every column (the summarised range, the gate
 * results, any a migration adds) shows up here without a change: the reader is tolerant of the schema.
 */
import { sql, type SQL } from 'drizzle-orm';
import { dialectOf, type DialectName, type Message } from '../compaction/dialects';
import { canonicalJson } from '../compaction/json';
import type { GainFigures, RungCost } from '../compaction/gain';
import { isMaskedOutput } from '../compaction/masking';
import { CompactionNotFoundError, InvalidInputError, SessionNotFoundError } from '../errors';
import type { Database } from './database';
import { audit, type AuditReport } from './session-store';

const LIST_PAGE_MAX = 200;
export const LINEAGE_STATUSES = ['live', 'closed'] as const;
export const OUTCOMES = ['running', 'compacted', 'stale', 'refused', 'aborted', 'none'] as const;

export interface ListLineagesOptions {
  /** Substring of the lineage id or of any of its session ids (case-insensitive). */
  search?: string;
  source?: string;
  status?: (typeof LINEAGE_STATUSES)[number];
  /** The outcome of the lineage's latest compaction; `none` for a lineage never compacted. */
  lastOutcome?: (typeof OUTCOMES)[number];
  /** Keyset paging: lineages with an id after this one. */
  after?: string;
  limit?: number;
}

interface LineageListItem {
  lineageId: string;
  headSessionId: string;
  source: string | null;
  mode: string;
  /** The provider API format of the lineage's messages. */
  dialect: DialectName;
  generation: number;
  headTokens: number;
  closed: boolean;
  createdAt: string;
  lastOutcome: string | null;
  lastReason: string | null;
  lastCompactionAt: string | null;
}

export interface LineagePage {
  lineages: LineageListItem[];
  /** The `after` of the next page, or null on the last page. */
  next: string | null;
}

function checkListOptions(options: ListLineagesOptions): Required<Pick<ListLineagesOptions, 'limit'>> {
  const limit = options.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_PAGE_MAX) throw new InvalidInputError('limit', `must be a whole number from 1 to ${LIST_PAGE_MAX}`);
  for (const [field, value] of [
    ['search', options.search],
    ['source', options.source],
    ['after', options.after],
  ] as const) {
    if (value !== undefined && (typeof value !== 'string' || value.length > 200))
      throw new InvalidInputError(field, 'must be a string of at most 200 characters');
  }
  if (options.status !== undefined && !LINEAGE_STATUSES.includes(options.status))
    throw new InvalidInputError('status', `must be one of ${LINEAGE_STATUSES.join(', ')}`);
  if (options.lastOutcome !== undefined && !OUTCOMES.includes(options.lastOutcome))
    throw new InvalidInputError('lastOutcome', `must be one of ${OUTCOMES.join(', ')}`);
  return { limit };
}

const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const iso = (value: unknown) => (value == null ? null : new Date(value as string).toISOString());

/** One page of lineages in id order, filtered; fast on many lineages (keyset paging on the primary key). */
export async function listLineages(db: Database, options: ListLineagesOptions = {}): Promise<LineagePage> {
  const { limit } = checkListOptions(options);
  const where: SQL[] = [sql`true`];
  if (options.after) where.push(sql`l.id > ${options.after}`);
  if (options.source) where.push(sql`l.source = ${options.source}`);
  if (options.status === 'live') where.push(sql`l.closed_at is null`);
  if (options.status === 'closed') where.push(sql`l.closed_at is not null`);
  if (options.search) {
    const pattern = likePattern(options.search);
    // One scan of sessions (every lineage's root and children), not a subquery per lineage.
    where.push(sql`l.id in (select s.lineage_id from sessions s where s.id ilike ${pattern})`);
  }
  if (options.lastOutcome === 'none') where.push(sql`last.outcome is null`);
  else if (options.lastOutcome) where.push(sql`last.outcome = ${options.lastOutcome}`);
  const result = await db.execute(sql`
    select l.id, l.head_session_id, l.source, l.mode, l.dialect, l.generation, l.head_tokens, l.closed_at, l.created_at,
           last.outcome, last.reason, last.started_at as last_at
    from lineages l
    left join lateral (
      select c.outcome, c.reason, c.started_at from compactions c where c.lineage_id = l.id order by c.started_at desc limit 1
    ) last on true
    where ${sql.join(where, sql` and `)}
    order by l.id
    limit ${limit + 1}`);
  const rows = result.rows as Array<Record<string, unknown>>;
  const page = rows.slice(0, limit).map((r): LineageListItem => ({
    lineageId: String(r.id),
    headSessionId: String(r.head_session_id),
    source: (r.source as string | null) ?? null,
    mode: String(r.mode),
    dialect: r.dialect as DialectName,
    generation: Number(r.generation),
    headTokens: Number(r.head_tokens),
    closed: r.closed_at != null,
    createdAt: iso(r.created_at)!,
    lastOutcome: (r.outcome as string | null) ?? null,
    lastReason: (r.reason as string | null) ?? null,
    lastCompactionAt: iso(r.last_at),
  }));
  return { lineages: page, next: rows.length > limit ? page[page.length - 1].lineageId : null };
}

/** A compaction row as the operator sees it: every column, camelCased, plus its duration. */
export interface CompactionView {
  id: string;
  lineageId: string;
  parentSessionId: string;
  childSessionId: string | null;
  generation: number;
  requestIds: string[];
  trigger: string;
  model: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  messagesBefore: number | null;
  messagesAfter: number | null;
  attempts: number;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  outcome: string;
  reason: string | null;
  /** Present once the schema has them (the valid-head change). */
  summarisedFromSeq?: number | null;
  summarisedToSeq?: number | null;
  gate?: string | null;
  gateResults?: Record<string, unknown> | null;
  /** How a committed compaction shrank the head: 'summary', 'masking', 'native' or 'trim'. */
  rung?: 'summary' | 'masking' | 'native' | 'trim' | null;
  /** Why each rung before the one that answered passed, by rung name. */
  passedRungs?: Record<string, string> | null;
  /** What each rung that ran was billed, by rung name (src/compaction/gain.ts RungCost). */
  costs?: Record<string, RungCost> | null;
  /** The minimum-gain guard's figures, when it judged the job. */
  gain?: GainFigures | null;
  /** The ledger it committed (src/compaction/ledger.ts). */
  ledger?: unknown;
  [column: string]: unknown;
}

const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function compactionView(raw: Record<string, unknown>): CompactionView {
  const view = Object.fromEntries(Object.entries(raw).map(([k, v]) => [camel(k), v])) as CompactionView;
  view.startedAt = iso(raw.started_at)!;
  view.finishedAt = iso(raw.finished_at);
  view.durationMs = view.finishedAt ? Date.parse(view.finishedAt) - Date.parse(view.startedAt) : null;
  return view;
}

export interface LineageDetail {
  lineage: Record<string, unknown> & { lineageId: string; headSessionId: string; closed: boolean };
  sessions: Array<{
    sessionId: string;
    parentSessionId: string | null;
    generation: number;
    startedAt: string;
    endedAt: string | null;
    endReason: string | null;
    messageCount: number;
  }>;
  compactions: CompactionView[];
}

/** Resolves any session id (or lineage id) to its lineage id, or throws SessionNotFoundError. */
async function lineageIdOf(db: Database, id: string): Promise<string> {
  const result = await db.execute(sql`select lineage_id from sessions where id = ${id}`);
  const row = result.rows[0] as { lineage_id: string } | undefined;
  if (!row) throw new SessionNotFoundError(id);
  return row.lineage_id;
}

/** The lineage of a session: its row (every column), the chain root to head, every compaction oldest first. */
export async function lineageDetail(db: Database, sessionOrLineageId: string): Promise<LineageDetail> {
  const lineageId = await lineageIdOf(db, sessionOrLineageId);
  const [lineageRows, sessionRows, compactionRows] = await Promise.all([
    db.execute(sql`select to_jsonb(l) as row from lineages l where l.id = ${lineageId}`),
    db.execute(sql`
      select s.id, s.parent_session_id, s.generation, s.started_at, s.ended_at, s.end_reason,
             (select count(*) from messages m where m.session_id = s.id and m.archived_at is null)::int as message_count
      from sessions s where s.lineage_id = ${lineageId} order by s.generation, s.started_at`),
    db.execute(sql`select to_jsonb(c) as row from compactions c where c.lineage_id = ${lineageId} order by c.started_at, c.id`),
  ]);
  const raw = (lineageRows.rows[0] as { row: Record<string, unknown> }).row;
  const lineage = Object.fromEntries(Object.entries(raw).map(([k, v]) => [camel(k), v])) as LineageDetail['lineage'];
  lineage.lineageId = String(raw.id);
  lineage.closed = raw.closed_at != null;
  return {
    lineage,
    sessions: (sessionRows.rows as Array<Record<string, unknown>>).map((r) => ({
      sessionId: String(r.id),
      parentSessionId: (r.parent_session_id as string | null) ?? null,
      generation: Number(r.generation),
      startedAt: iso(r.started_at)!,
      endedAt: iso(r.ended_at),
      endReason: (r.end_reason as string | null) ?? null,
      messageCount: Number(r.message_count),
    })),
    compactions: (compactionRows.rows as Array<{ row: Record<string, unknown> }>).map((r) => compactionView(r.row)),
  };
}

export interface TranscriptRow {
  id: number;
  seq: number;
  lineageSeq: number | null;
  /** The role the message is filed under (its dialect's roleOf). */
  role: string;
  /** The message exactly as appended (the row's body), in the lineage's dialect. */
  message: Message;
  tokenEstimate: number;
  originMessageId: number | null;
  writtenByCompaction: string | null;
  archivedAt: string | null;
  archivedByCompaction: string | null;
}

async function sessionRows(db: Database, sessionId: string): Promise<TranscriptRow[]> {
  const result = await db.execute(sql`
    select id, seq, lineage_seq, role, body, token_estimate, origin_message_id,
           written_by_compaction, archived_at, archived_by_compaction
    from messages where session_id = ${sessionId} order by seq`);
  return (result.rows as Array<Record<string, unknown>>).map((r) => ({
    id: Number(r.id),
    seq: Number(r.seq),
    lineageSeq: r.lineage_seq == null ? null : Number(r.lineage_seq),
    role: String(r.role),
    message: r.body as Message,
    tokenEstimate: Number(r.token_estimate),
    originMessageId: r.origin_message_id == null ? null : Number(r.origin_message_id),
    writtenByCompaction: (r.written_by_compaction as string | null) ?? null,
    archivedAt: iso(r.archived_at),
    archivedByCompaction: (r.archived_by_compaction as string | null) ?? null,
  }));
}

/** Where a row of the result came from, relative to the parent transcript. */
type RowKind = 'summary' | 'kept' | 'masked' | 'carried' | 'appended';
/** Where a parent row went: into the summary, kept verbatim, replaced by a masking placeholder, or appended after the snapshot. */
type RowFate = 'summarised' | 'kept' | 'masked' | 'after-watermark' | 'unknown';

export interface CompactionDetail {
  compaction: CompactionView;
  /** The lineage's dialect: how to read each row's `message` (src/compaction/dialects). */
  dialect: DialectName;
  /** The transcript the compaction read: the parent's rows (in place: the rows it archived and kept). */
  parent: Array<TranscriptRow & { fate: RowFate }>;
  /** The rows the compaction wrote into the new head, with where each came from. */
  result: Array<TranscriptRow & { kind: RowKind }>;
  /** The summary text (of the first row the compaction wrote as its summary). */
  summary: string | null;
  /** Lineage sequence range of the summarised middle: from the row when the schema has it, else inferred. */
  summarised: { fromSeq: number | null; toSeq: number | null; inferred: boolean };
}

/**
 * One compaction: its row, the parent transcript and the rows it produced, each row marked
 * with where it went. Kept and carried rows are matched by content (the kept head and tail)
 * or by origin id (carried copies); the summary is the row that copies nothing; a masking
 * placeholder is a row that copies nothing and holds a masked tool output, and in a masking
 * compaction the parent rows it did not keep are the ones it masked (it summarises nothing).
 */
export async function compactionDetail(db: Database, compactionId: string): Promise<CompactionDetail> {
  const found = await db.execute(sql`select to_jsonb(c) as row from compactions c where c.id = ${compactionId}`);
  const raw = (found.rows[0] as { row: Record<string, unknown> } | undefined)?.row;
  if (!raw) throw new CompactionNotFoundError(compactionId);
  const compaction = compactionView(raw);
  const lineage = await db.execute(sql`select dialect from lineages where id = ${compaction.lineageId}`);
  const dialect = dialectOf((lineage.rows[0] as { dialect: string } | undefined)?.dialect);
  const inPlace = compaction.childSessionId === compaction.parentSessionId;
  const parentAll = await sessionRows(db, compaction.parentSessionId);
  const written = compaction.childSessionId ? (await sessionRows(db, compaction.childSessionId)).filter((r) => r.writtenByCompaction === compaction.id) : [];
  // In place, the parent's rows before the compaction are the ones it archived.
  const parentRows = inPlace ? parentAll.filter((r) => r.archivedByCompaction === compaction.id) : parentAll;
  const watermark = typeof raw.watermark_seq === 'number' ? raw.watermark_seq : null;
  const keyOf = (r: TranscriptRow) => canonicalJson(r.message);
  // A row's origin: the appended row it copies (itself when it is the appended row).
  const originOf = (r: TranscriptRow) => r.originMessageId ?? r.id;
  const parentByOrigin = new Map(parentRows.map((r) => [originOf(r), r]));
  const afterWatermark = (r: TranscriptRow) => watermark !== null && r.seq > watermark;
  // The new summary: the rows the dialect reads as a summary (and its acknowledgement) that copy no parent row.
  const parentKeys = new Set(parentRows.map(keyOf));
  const summaryRows = new Set(written.filter((r) => r.originMessageId == null && dialect.isSummary(r.message) && !parentKeys.has(keyOf(r))));
  const summaryRow = written.find((r) => summaryRows.has(r));
  const result = written.map((r) => {
    let kind: RowKind = 'kept';
    if (summaryRows.has(r)) kind = 'summary';
    else if (r.originMessageId != null) {
      const source = parentByOrigin.get(r.originMessageId);
      // Rows appended after the snapshot's watermark were carried in at commit.
      if (!source || afterWatermark(source)) kind = 'carried';
    } else if (isMaskedOutput(dialect, r.message, r.lineageSeq === null)) kind = 'masked';
    return { ...r, kind };
  });
  const keptOrigins = new Set(result.filter((r) => r.kind === 'kept' && r.originMessageId != null).map((r) => r.originMessageId!));
  // Rows written before kept rows recorded their origin are matched by content.
  const keptByContent = new Map<string, number>();
  for (const r of result) if (r.kind === 'kept' && r.originMessageId == null) keptByContent.set(keyOf(r), (keptByContent.get(keyOf(r)) ?? 0) + 1);
  const parent = parentRows.map((r) => {
    let fate: RowFate = 'unknown';
    if (afterWatermark(r)) fate = 'after-watermark';
    else if (keptOrigins.has(originOf(r))) fate = 'kept';
    else if ((keptByContent.get(keyOf(r)) ?? 0) > 0) {
      fate = 'kept';
      keptByContent.set(keyOf(r), keptByContent.get(keyOf(r))! - 1);
    } else if (compaction.outcome === 'compacted') fate = compaction.rung === 'masking' ? 'masked' : 'summarised';
    return { ...r, fate };
  });
  const fromRow = typeof raw.summarised_from_seq === 'number' ? raw.summarised_from_seq : null;
  const toRow = typeof raw.summarised_to_seq === 'number' ? raw.summarised_to_seq : null;
  const summarisedSeqs = parent.filter((r) => r.fate === 'summarised' && r.lineageSeq != null).map((r) => r.lineageSeq!);
  const summarised =
    fromRow !== null || toRow !== null
      ? { fromSeq: fromRow, toSeq: toRow, inferred: false }
      : {
          fromSeq: summarisedSeqs.length ? Math.min(...summarisedSeqs) : null,
          toSeq: summarisedSeqs.length ? Math.max(...summarisedSeqs) : null,
          inferred: true,
        };
  return { compaction, dialect: dialect.name, parent, result, summary: summaryRow ? dialect.textOf(summaryRow.message) : null, summarised };
}

/** The audit of one lineage, reached from any of its session ids: src/db/audit.ts's `audit`, restricted to it. */
export async function auditLineage(db: Database, sessionOrLineageId: string): Promise<AuditReport & { lineageId: string }> {
  const lineageId = await lineageIdOf(db, sessionOrLineageId);
  return { lineageId, ...(await audit(db, lineageId)) };
}
