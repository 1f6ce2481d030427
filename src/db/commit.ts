/**
 * Publishing a compaction: the new head (a child, or the same session with old rows
 * archived), the carried appends, the parent ended, the lineage moved, the audit row written,
 * all in one transaction, after the gates ran on that exact head.
 */
import { and, eq, isNull, lte, sql } from 'drizzle-orm';
import { type Dialect, dialectOf, type Message } from '../compaction/dialects';
import type { GateReport } from '../compaction/gates';
import type { JsonValue } from '../compaction/json';
import { SessionNotFoundError } from '../errors';
import { childSessionId, type CompactionMode } from '../workflows/contract';
import { type AutoCompactionPolicy, DEFAULT_AUTO_COMPACTION_POLICY, settleAutoCompaction } from './auto-compaction';
import type { Database } from './database';
import type { CompactionJob } from './jobs';
import { sessionMessages } from './lineage-state';
import { compactions, lineages, messages, rowToMessage, sessions } from './schema';

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
