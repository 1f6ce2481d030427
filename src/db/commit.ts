/**
 * Publishing a compaction: the new head (a child, or the same session with old rows
 * archived), the carried appends, the parent ended, the lineage moved, the audit row written,
 * in one statement, after the gates ran on that exact head.
 */
import { sql } from 'drizzle-orm';
import type { Dialect, Message } from '../compaction/dialects';
import type { GainFigures, RungCost } from '../compaction/gain';
import type { GateReport } from '../compaction/gates';
import type { JsonValue } from '../compaction/json';
import { SessionNotFoundError } from '../errors';
import { childSessionId, type CompactionMode } from '../workflows/contract';
import { type AutoCompactionPolicy, cooldownLadder, DEFAULT_AUTO_COMPACTION_POLICY } from './auto-compaction';
import type { Database } from './database';
import type { CompactionJob } from '../workflows/contract';
import type { SnapshotRow } from './jobs';
import type { Executor } from './executor';

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
  /** The lineage's dialect: the stored role of each compacted message. */
  dialect: Dialect;
  watermarkSeq: number;
  /** How many live rows of the parent, up to the watermark, the snapshot read (all of them). */
  snapshotRows: number;
  compacted: CompactedMessage[];
  /** Lineage sequence numbers (inclusive) of the appended messages the summary covers. */
  summarised?: { fromSeq: number; toSeq: number };
  /** The rows after the watermark the caller has already seen (none when the snapshot read every row). */
  carried?: SnapshotRow[];
  /**
   * The gates, run on the exact head about to be committed: the compacted messages followed
   * by `carried`, the messages appended after the watermark (as the commit found them).
   */
  verify?: (carried: Array<{ message: Message; tokens: number }>) => GateReport;
  stats: { tokensBefore: number; messagesBefore: number; promptTokens?: number; completionTokens?: number; cachedPromptTokens?: number };
  /** How the head was shrunk: a summary, the masking rung, or the trim rung. */
  rung?: 'summary' | 'masking' | 'native' | 'trim';
  /** A note for the audit row's reason (what the rung did). */
  note?: string;
  /** Why each rung before the one that answered passed, by rung name. */
  passedRungs?: Record<string, string>;
  /** What each rung that ran was billed, by rung name (the audit row's `costs`). */
  costs?: Record<string, RungCost>;
  /** The minimum-gain guard's figures, when it judged the job (the audit row's `gain`). */
  gain?: GainFigures;
  /** The new head's ledger: stored on the lineage (the next compaction merges it) and in the audit row. */
  ledger?: JsonValue;
  policy?: AutoCompactionPolicy;
}

/** What a commit answers the job activity: its head is `sessionId`, as in every answer (`Answer`). */
export type CommitResult =
  | {
      outcome: 'compacted';
      sessionId: string;
      generation: number;
      carried: number;
      tokensAfter: number;
      messagesAfter: number;
      alreadyCommitted: boolean;
      reason?: string;
      gateResults?: Record<string, string>;
      /** How many times the commit found rows the gates had not seen and gated again. */
      commitRetries?: number;
      /** The follow-up compaction the commit asked for: it shrank the head, still at or above the threshold. */
      followUpRequestId?: string;
    }
  | { outcome: 'stale'; sessionId: string; generation: number; reason: string }
  | { outcome: 'refused'; reason: string; gate: string; gateResults: Record<string, string>; tokensAfter: number };

/**
 * How many statements a commit sends without the lineage lock before it takes the lock: each
 * one that finds rows the gates had not seen writes nothing, and the gates run again with them.
 */
const OPTIMISTIC_COMMITS = 3;

/** How many commits of a contended lineage lock first before one tries the optimistic path again. */
const LOCK_FIRST_COMMITS = 8;
/** How many lineages a process remembers as contended (the oldest is forgotten first). */
const REMEMBERED_LINEAGES = 10_000;

/**
 * Which path a lineage's next commit takes, from what its recent commits in this process did.
 * A commit whose optimistic statements all found rows the gates had not seen (appends landing
 * faster than a round trip) marks its lineage contended: its next LOCK_FIRST_COMMITS commits
 * take the locks first and send one statement, instead of wasting OPTIMISTIC_COMMITS round
 * trips; then one tries the optimistic path again, and a lineage whose commit goes through
 * without exhausting it is forgotten. Both paths run the same gates on the same head and the
 * same statement, so the path changes the time a commit takes, never what it writes.
 *
 * Kept in the process's memory, not in the lineage row: it costs no write on the commit path
 * and no schema change, and losing it (a restart, a job on another worker) costs one commit
 * the optimistic way, as before; the audit row's commit_retries already tells an operator
 * which lineages are contended.
 */
export class CommitPaths {
  private readonly lockFirstLeft = new Map<string, number>();
  /** False: every commit tries the optimistic path first (the benchmark's "before"). */
  adaptive = true;

  /** True when the lineage's next commit should take the locks first. */
  lockFirst(lineageId: string): boolean {
    return this.adaptive && (this.lockFirstLeft.get(lineageId) ?? 0) > 0;
  }

  /** Records how a commit went: `lockedFirst`, or the optimistic path and whether it ran out of tries. */
  record(lineageId: string, how: 'lockedFirst' | 'optimistic' | 'exhausted'): void {
    if (how === 'optimistic') {
      this.lockFirstLeft.delete(lineageId);
      return;
    }
    const left = how === 'exhausted' ? LOCK_FIRST_COMMITS : (this.lockFirstLeft.get(lineageId) ?? 1) - 1;
    this.lockFirstLeft.delete(lineageId); // re-inserted last: the map's order is least recently used first
    this.lockFirstLeft.set(lineageId, left);
    if (this.lockFirstLeft.size > REMEMBERED_LINEAGES) this.lockFirstLeft.delete(this.lockFirstLeft.keys().next().value!);
  }
}

/** The process's memory of contended lineages, which commitCompaction uses unless given another. */
export const commitPaths = new CommitPaths();

/** A commit's answer, or the rows appended after the snapshot (when the statement wrote nothing). */
type StatementAnswer = CommitResult | { outcome: 'appended'; rows: SnapshotRow[] };

/**
 * What the statement returns (it never refuses: a head the gates refused is `checked`). Its
 * head is `headSessionId`, as in the lineage row; the SQL functions keep that name, since an
 * older worker puts its own definitions back (docs/wire-contract.md).
 */
type StatementResult =
  | (Omit<Extract<CommitResult, { outcome: 'compacted' }>, 'sessionId'> & { headSessionId: string })
  | (Omit<Extract<CommitResult, { outcome: 'stale' }>, 'sessionId'> & { headSessionId: string })
  | { outcome: 'appended'; rows: SnapshotRow[] }
  | { outcome: 'missing' }
  | { outcome: 'checked' };

/**
 * Publishes a compaction in one statement (src/db/functions/sc_compaction_commit.sql): the new
 * head (a child, or the same session with old rows archived) gets the compacted messages
 * followed by every message appended after the snapshot's watermark; the parent ends with
 * exactly one row changed; the lineage moves to the new head and generation.
 *
 * The gates run here, on that exact head, before the statement: it names the appended rows
 * they saw, and writes only if those are still the live rows after the watermark. When more
 * were appended it writes nothing and returns them, and the gates run again with them. After
 * OPTIMISTIC_COMMITS such statements (appends landing faster than a round trip), the last try
 * takes the lineage lock and the parent's row lock first, so no append can land between the
 * gates and the statement: a commit always ends. A lineage whose commit ran out of optimistic
 * tries takes that locked path first for its next commits (`paths`, CommitPaths). A failing gate writes nothing. A retried
 * commit of the same job is answered from the audit row and writes nothing; a commit against
 * a lineage that moved on writes nothing.
 */
export async function commitCompaction(db: Database, input: CommitInput, paths: CommitPaths = commitPaths): Promise<CommitResult> {
  const { job, dialect } = input;
  const policy = input.policy ?? DEFAULT_AUTO_COMPACTION_POLICY;
  const head = input.compacted.map((m) => ({
    role: dialect.roleOf(m.message),
    tokens: m.tokens,
    lineageSeq: m.lineageSeq ?? null,
    originMessageId: m.originMessageId ?? null,
    ...(m.sourceRowId !== undefined ? { copyOf: m.sourceRowId } : { body: m.message }),
  }));
  const compactedTokens = input.compacted.reduce((sum, m) => sum + m.tokens, 0);

  /**
   * Gates the head with `carried`, then sends the one statement. A head the gates refuse is
   * refused only once the statement, asked to check and write nothing (`checkOnly`), finds
   * it is the lineage's real head: a job that went stale meanwhile answers stale, and rows
   * appended meanwhile are gated too.
   */
  const gateAndCommit = async (executor: Executor, carried: SnapshotRow[], retries: number): Promise<StatementAnswer> => {
    const report = input.verify?.(carried.map((r) => ({ message: r.body, tokens: r.tokenEstimate })));
    const statement = {
      jobId: job.jobId,
      lineageId: job.lineageId,
      parentSessionId: job.parentSessionId,
      generation: job.generation,
      requestIds: job.requestIds,
      trigger: job.trigger,
      attempt: input.attempt ?? null,
      incarnation: job.incarnation ?? null,
      mode: input.mode,
      childSessionId: childSessionId(job.lineageId, job.generation + 1),
      watermarkSeq: input.watermarkSeq,
      snapshotRows: input.snapshotRows,
      carriedIds: carried.map((r) => r.id),
      head,
      tokensBefore: input.stats.tokensBefore,
      messagesBefore: input.stats.messagesBefore,
      promptTokens: input.stats.promptTokens ?? null,
      completionTokens: input.stats.completionTokens ?? null,
      cachedPromptTokens: input.stats.cachedPromptTokens ?? null,
      summarisedFromSeq: input.summarised?.fromSeq ?? null,
      summarisedToSeq: input.summarised?.toSeq ?? null,
      gateResults: report?.results ?? null,
      rung: input.rung ?? 'summary',
      note: input.note ?? null,
      passedRungs: input.passedRungs && Object.keys(input.passedRungs).length > 0 ? input.passedRungs : null,
      ledger: input.ledger ?? null,
      costs: input.costs && Object.keys(input.costs).length > 0 ? input.costs : null,
      gain: input.gain ?? null,
      commitRetries: retries,
      cooldownsMs: cooldownLadder(policy),
      maxFollowUps: Math.max(0, Math.round(policy.maxFollowUps)),
      checkOnly: Boolean(report?.failed),
    };
    const { rows } = await executor.execute<{ answer: StatementResult }>(sql`select sc_compaction_commit(${JSON.stringify(statement)}::jsonb) as answer`);
    const answer = rows[0].answer;
    if (answer.outcome === 'missing') throw new SessionNotFoundError(job.lineageId);
    if (answer.outcome === 'checked') {
      if (!report?.failed) throw new Error('the commit statement only checked a head the gates passed');
      return {
        outcome: 'refused',
        reason: `gate ${report.failed.gate}: ${report.failed.reason}`,
        gate: report.failed.gate,
        gateResults: report.results,
        tokensAfter: compactedTokens + carried.reduce((sum, r) => sum + r.tokenEstimate, 0),
      };
    }
    if (answer.outcome === 'appended') return answer;
    const { headSessionId, ...rest } = answer;
    if (rest.outcome === 'stale' || rest.alreadyCommitted) return { ...rest, sessionId: headSessionId };
    return { ...rest, sessionId: headSessionId, gateResults: report?.results, commitRetries: retries };
  };

  // Hold the locks every writer waits on (appends the lineage's, writers that bypass it the
  // parent's), read the rows after the watermark, gate, commit: no append can land between.
  const locked = (retries: number) =>
    db.transaction(async (tx) => {
      const { rows: locked } = await tx.execute<{ rows: SnapshotRow[] }>(
        sql`select sc_compaction_lock(${job.lineageId}, ${job.parentSessionId}, ${input.watermarkSeq}::integer) as rows`,
      );
      const rows = locked[0].rows;
      const answer = await gateAndCommit(tx, rows, retries);
      if (answer.outcome === 'appended') throw new Error(`rows were appended to ${job.parentSessionId} under its locks; rolling back`);
      return answer;
    });
  if (paths.lockFirst(job.lineageId)) {
    const answer = await locked(0);
    paths.record(job.lineageId, 'lockedFirst');
    return answer;
  }
  let carried: SnapshotRow[] = input.carried ?? [];
  for (let retries = 0; retries < OPTIMISTIC_COMMITS; retries++) {
    const answer = await gateAndCommit(db, carried, retries);
    if (answer.outcome !== 'appended') {
      paths.record(job.lineageId, 'optimistic');
      return answer;
    }
    carried = answer.rows;
  }
  // Appends keep landing between the gates and the statement.
  const answer = await locked(OPTIMISTIC_COMMITS);
  paths.record(job.lineageId, 'exhausted');
  return answer;
}
