/**
 * Read-only queries for operators: the list of lineages, a lineage's compaction history, one
 * compaction with the transcripts around it. Each is one call of a data-plane read function
 * (session_list_lineages, session_history, session_compaction_detail: docs/wire-contract.md), so
 * a login with EXECUTE on them and no table privilege (sc_app, sc_reader) can run them; they read
 * Postgres only (they work while Temporal is down) and every value reaches SQL as a bound parameter.
 *
 * Compaction rows come as `to_jsonb(c)`, so every column (the summarised range, the gate
 * results, any a migration adds) shows up here without a change: the reader is tolerant of the schema.
 */
import { sql } from 'drizzle-orm';
import { dialectOf, type DialectName, type Message } from '../compaction/dialects';
import { canonicalJson } from '../compaction/json';
import type { GainFigures, RungCost } from '../compaction/gain';
import { isMaskedOutput } from '../compaction/masking';
import { CompactionNotFoundError, InvalidInputError } from '../errors';
import { callFunction } from './data-plane';
import type { Database } from './database';

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

const iso = (value: unknown) => (value == null ? null : new Date(value as string).toISOString());

/** One page of lineages in id order, filtered; fast on many lineages (keyset paging on the primary key). */
export async function listLineages(db: Database, options: ListLineagesOptions = {}): Promise<LineagePage> {
  const { limit } = checkListOptions(options);
  const answer = await callFunction<{ lineages: Array<Record<string, unknown>>; next: string | null }>(
    db,
    sql`select session_list_lineages(${options.search ?? null}::text, ${options.source ?? null}::text, ${options.status ?? null}::text, ${options.lastOutcome ?? null}::text, ${options.after ?? null}::text, ${limit}::integer) as result`,
  );
  const page = answer.lineages.map((r): LineageListItem => ({
    lineageId: String(r.lineageId),
    headSessionId: String(r.headSessionId),
    source: (r.source as string | null) ?? null,
    mode: String(r.mode),
    dialect: r.dialect as DialectName,
    generation: Number(r.generation),
    headTokens: Number(r.headTokens),
    closed: r.closed === true,
    createdAt: iso(r.createdAt)!,
    lastOutcome: (r.lastOutcome as string | null) ?? null,
    lastReason: (r.lastReason as string | null) ?? null,
    lastCompactionAt: iso(r.lastCompactionAt),
  }));
  return { lineages: page, next: answer.next };
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

/** The lineage of a session: its row (every column), the chain root to head, every compaction oldest first. */
export async function lineageDetail(db: Database, sessionOrLineageId: string): Promise<LineageDetail> {
  const answer = await callFunction<{
    lineage: Record<string, unknown>;
    sessions: Array<Record<string, unknown>>;
    compactions: Array<Record<string, unknown>>;
  }>(db, sql`select session_history(${sessionOrLineageId}) as result`);
  const raw = answer.lineage;
  const lineage = Object.fromEntries(Object.entries(raw).map(([k, v]) => [camel(k), v])) as LineageDetail['lineage'];
  lineage.lineageId = String(raw.id);
  lineage.closed = raw.closed_at != null;
  return {
    lineage,
    sessions: answer.sessions.map((r) => ({
      sessionId: String(r.sessionId),
      parentSessionId: (r.parentSessionId as string | null) ?? null,
      generation: Number(r.generation),
      startedAt: iso(r.startedAt)!,
      endedAt: iso(r.endedAt),
      endReason: (r.endReason as string | null) ?? null,
      messageCount: Number(r.messageCount),
    })),
    compactions: answer.compactions.map(compactionView),
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

/** A message row as session_compaction_detail answers it, in TranscriptRow's key order. */
function transcriptRow(r: Record<string, unknown>): TranscriptRow {
  return {
    id: Number(r.id),
    seq: Number(r.seq),
    lineageSeq: r.lineageSeq == null ? null : Number(r.lineageSeq),
    role: String(r.role),
    message: r.message as Message,
    tokenEstimate: Number(r.tokenEstimate),
    originMessageId: r.originMessageId == null ? null : Number(r.originMessageId),
    writtenByCompaction: (r.writtenByCompaction as string | null) ?? null,
    archivedAt: iso(r.archivedAt),
    archivedByCompaction: (r.archivedByCompaction as string | null) ?? null,
  };
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
  const found = await callFunction<{
    compaction: Record<string, unknown>;
    dialect: string | null;
    parentRows: Array<Record<string, unknown>>;
    writtenRows: Array<Record<string, unknown>>;
  } | null>(db, sql`select session_compaction_detail(${compactionId}) as result`);
  if (!found) throw new CompactionNotFoundError(compactionId);
  const raw = found.compaction;
  const compaction = compactionView(raw);
  const dialect = dialectOf(found.dialect);
  const inPlace = compaction.childSessionId === compaction.parentSessionId;
  const parentAll = found.parentRows.map(transcriptRow);
  const written = found.writtenRows.map(transcriptRow);
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
