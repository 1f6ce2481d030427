/**
 * The lineage row and a session's rows, read and closed with drizzle: what a lineage is now
 * (its head, generation, settings) and the live messages of a session.
 */
import { and, asc, eq, gt, isNull } from 'drizzle-orm';
import type { DialectName } from '../compaction/dialects';
import { SessionNotFoundError } from '../errors';
import type { CompactionMode } from '../workflows/contract';
import type { Database } from './database';
import type { Executor } from './executor';
import { lineages, messages, sessions } from './schema';

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
  /** Set at create: erasing the lineage and creating its id again gives a new one (see session_append's p_incarnation). */
  incarnation: string;
  /** The rungs the lineage may use, when set at create (null or absent: the worker's default, COMPACTION_RUNGS). */
  rungs?: string[] | null;
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
    incarnation: row.incarnation,
  };
}

/** The lineage any session id belongs to, with its current head. */
export async function lineageOf(db: Executor, sessionId: string, options: { forUpdate?: boolean } = {}): Promise<LineageInfo> {
  return lineageInfo(await lineageRowOf(db, sessionId, options));
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

/** Marks a lineage closed: it takes no more appends or compactions. Idempotent. */
export async function closeLineage(db: Database, lineageId: string): Promise<void> {
  await db
    .update(lineages)
    .set({ closedAt: new Date() })
    .where(and(eq(lineages.id, lineageId), isNull(lineages.closedAt)));
}
