/**
 * The integrity audit, over the whole database or one lineage: forks, orphans, writes after
 * end, lost and duplicated messages, sequence gaps, keyed batches stored twice. One call of the
 * read function session_audit (src/db/functions/session_audit.sql): plain SQL over the tables,
 * so it never trusts the code it checks, and a login with no table privilege can run it.
 */
import { sql } from 'drizzle-orm';
import { callFunction } from './data-plane';
import type { Database } from './database';

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

type AuditAnswer = Omit<AuditReport, 'details'> & { lineageId: string | null; details: AuditReport['details'] };

/** The report in its documented key order (jsonb orders keys by length). */
async function auditOf(db: Database, sessionId: string | null): Promise<AuditAnswer> {
  const a = await callFunction<AuditAnswer>(db, sql`select session_audit(${sessionId}::text) as result`);
  const { forkedParents, orphanSessions, lostMessageIds } = a.details;
  return {
    lineageId: a.lineageId,
    sessions: a.sessions,
    lineages: a.lineages,
    compactions: a.compactions,
    forks: a.forks,
    orphans: a.orphans,
    writesAfterEnd: a.writesAfterEnd,
    lostMessages: a.lostMessages,
    duplicatedMessages: a.duplicatedMessages,
    duplicatedByKey: a.duplicatedByKey,
    sequenceGaps: a.sequenceGaps,
    details: { forkedParents, orphanSessions, lostMessageIds },
  };
}

/**
 * Integrity over the whole database (SQL `session_audit`). Every count but the totals must be 0.
 * Ranges a retention run pruned (pruned_messages) are pruned, not missing; an erased lineage
 * has no rows left to count.
 */
export async function audit(db: Database): Promise<AuditReport> {
  const { lineageId: _all, ...report } = await auditOf(db, null);
  return report;
}

/** The audit of one lineage, reached from any of its session ids (SessionNotFoundError when none has it). */
export async function auditLineage(db: Database, sessionOrLineageId: string): Promise<AuditReport & { lineageId: string }> {
  const { lineageId, ...report } = await auditOf(db, sessionOrLineageId);
  return { lineageId: lineageId!, ...report };
}
