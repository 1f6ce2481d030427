/**
 * The compaction activities, built by a factory so the worker (and tests) inject the
 * database and the summariser. `compactSession` is the only one on the happy path: it
 * snapshots the head, summarises while heartbeating (the heartbeat is the lease refresh,
 * the heartbeat timeout the lease TTL), judges the candidate and publishes it in one
 * transaction. Every step is idempotent by job id, so a retried attempt, or a late result
 * of a lost one, never commits a second child.
 */
import { Context, log } from '@temporalio/activity';
import type { JsonValue } from '../compaction/json';
import { dialectOf, type Message } from '../compaction/dialects';
import { runGates } from '../compaction/gates';
import { maskingTarget } from '../compaction/masking';
import { emptyLedger, ledgerBudget, ledgerFrom, renderLedger } from '../compaction/ledger';
import { LEDGER_HEADING, withoutReservedText } from '../compaction/summary-structure';
import { estimateTextTokens } from '../compaction/tokens';
import { maskingProposal, type Proposal, summaryProposal } from '../compaction/proposal';
import { planCompaction, type PlanOptions } from '../compaction/plan';
import { tokenCounterFor } from '../compaction/token-counter';
import { latestUserRequestText, prefixLayout } from '../compaction/summary-prompt';
import { rowToMessage } from '../db/schema';
import type { Database } from '../db/database';
import {
  abortJob,
  type AutoCompactionPolicy,
  beginJob,
  closeLineage,
  commitCompaction,
  type CompactedMessage,
  finishJob,
  lineageOf,
  recordJoinedRequests as recordJoinedRequestsInStore,
} from '../db/session-store';
import { SessionNotFoundError } from '../errors';
import { withSpan } from '../tracing';
import type { Answer, CompactionJob, CompactionMode, CompactionOutcome } from '../workflows/contract';
import { writeJobAnswer } from '../workflows/job-answer';
import { summariseInChunks, type Summariser, type SummaryProgress } from './summariser';

export interface CompactSessionInput extends CompactionJob {
  mode: CompactionMode;
  focusTopic?: string;
  force: boolean;
}

/** What the activity reports in its heartbeats: the Web UI, `state` and the inspector show it. */
export interface HeartbeatDetails {
  phase: 'snapshot' | 'summarising' | 'gates' | 'committing' | 'committed';
  chunk?: number;
  chunks?: number;
  streamedChars?: number;
  /** On `committed`: an earlier attempt had committed this job already, and this one wrote nothing. */
  alreadyCommitted?: boolean;
  /** The lineage incarnation the job began on (after the snapshot): a retried attempt begins only on it. */
  incarnation?: string;
  elapsedMs: number;
}

/** The incarnation a previous attempt of this job reported in its last heartbeat, if any. */
function incarnationOfPreviousAttempt(): string | undefined {
  const details: unknown = Context.current().info.heartbeatDetails;
  const incarnation = details && typeof details === 'object' ? (details as { incarnation?: unknown }).incarnation : undefined;
  return typeof incarnation === 'string' ? incarnation : undefined;
}

export interface CompactionActivityDeps {
  db: Database;
  summariser: Summariser;
  plan: Omit<PlanOptions, 'force'>;
  /** Tokens of middle one summariser request may hold; a larger middle is summarised in chunks. */
  summaryInputTokens: number;
  /** The ledger's bound: `percent` of the context window (when known), at most `maxTokens`; requests verbatim up to `requestChars`. */
  ledger: { percent: number; maxTokens: number; requestChars: number };
  /** The masking rung, tried before a summary: on when given (its target, a percentage of the threshold or of the context window). */
  masking?: { targetPercent: number };
  /** How summary requests are laid out (COMPACTION_SUMMARY_LAYOUT); 'rendered' when absent. */
  summaryLayout?: 'prefix' | 'rendered';
  /** The threshold policy's cooldown ladder (see AutoCompactionPolicy). */
  autoCompaction: AutoCompactionPolicy;
  /** How often the activity heartbeats while it works (the SDK throttles further). */
  heartbeatIntervalMs: number;
  /** Seam for tests: a heartbeat that a test can silence to simulate a partitioned worker. */
  heartbeat?: (details: unknown) => void;
}

/** Inclusive lineage sequence range of the appended messages among `rows`. */
function lineageRange(rows: ReadonlyArray<{ lineageSeq: number | null }>): { fromSeq: number; toSeq: number } | undefined {
  const seqs = rows.map((r) => r.lineageSeq).filter((n): n is number => n !== null);
  return seqs.length > 0 ? { fromSeq: Math.min(...seqs), toSeq: Math.max(...seqs) } : undefined;
}

export function createCompactionActivities(deps: CompactionActivityDeps) {
  const heartbeat = deps.heartbeat ?? ((details: unknown) => Context.current().heartbeat(details));
  const policy = deps.autoCompaction;

  async function compactSession(input: CompactSessionInput): Promise<Answer> {
    // A failure is made fit for history, logs and spans by the worker (activities/failures.ts).
    return writeJobAnswer(await compactSessionOnce(input));
  }

  async function compactSessionOnce(input: CompactSessionInput): Promise<Answer> {
    const { db } = deps;
    const started = Date.now();
    let progress: HeartbeatDetails = { phase: 'snapshot', elapsedMs: 0 };
    const beat = (next: Omit<HeartbeatDetails, 'elapsedMs'> = progress) => {
      progress = { incarnation: progress.incarnation, ...next, elapsedMs: Date.now() - started };
      heartbeat(progress);
    };
    beat(); // before any I/O: the lease starts with the attempt
    const attempt = Context.current().info.attempt;
    // One statement: the audit row opened with this attempt, the lineage, its ledger, the snapshot.
    // A retried attempt begins only on the incarnation its predecessor began on.
    const begun = await beginJob(db, { ...input, incarnation: input.incarnation ?? incarnationOfPreviousAttempt() }, deps.summariser.model, attempt);
    if ('erased' in begun) {
      // The lineage was erased and its id created again: nothing of this job reaches the new one.
      return {
        outcome: 'stale',
        sessionId: begun.headSessionId,
        generation: begun.generation,
        reason: 'the lineage was erased and created again; the job wrote nothing',
      };
    }
    const { job: record, lineage, ledger: storedLedger, rows } = begun;
    // From here on every heartbeat names the incarnation, and the commit carries it.
    const job = { ...input, incarnation: lineage.incarnation };
    progress = { ...progress, incarnation: lineage.incarnation };
    if (record.outcome === 'compacted') {
      return {
        outcome: 'compacted',
        sessionId: record.childSessionId ?? lineage.headSessionId,
        generation: record.generation,
        previousSessionId: record.parentSessionId,
        messagesAfter: record.messagesAfter ?? undefined,
        ...(record.followUpRequestId ? { followUpRequestId: record.followUpRequestId } : {}),
      };
    }
    if (record.attempts > attempt) {
      // A later attempt started while this one stalled (its lease expired): it owns the job.
      log.warn('attempt superseded before its first write; it writes nothing', { jobId: input.jobId, attempt, latest: record.attempts });
      return {
        outcome: 'stale',
        sessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: `attempt ${attempt} was superseded by attempt ${record.attempts}`,
      };
    }
    if (record.outcome === 'refused' || record.outcome === 'stale') {
      // An earlier attempt decided this job and its answer was lost: give the same answer.
      return {
        outcome: record.outcome,
        sessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason: record.reason ?? undefined,
        gate: record.gate ?? undefined,
      };
    }
    if (lineage.closed) {
      // No summary is ever paid for a closed lineage.
      const reason = 'the lineage is closed';
      await finishJob(db, input, attempt, 'stale', { reason }, policy);
      return { outcome: 'stale', sessionId: lineage.headSessionId, generation: lineage.generation, reason };
    }
    if (lineage.headSessionId !== input.parentSessionId || lineage.generation !== input.generation) {
      const reason = `the head is ${lineage.headSessionId} (generation ${lineage.generation}); adopting it instead of compacting again`;
      await finishJob(db, input, attempt, 'stale', { reason }, policy);
      return { outcome: 'stale', sessionId: lineage.headSessionId, generation: lineage.generation, reason };
    }

    const watermarkSeq = rows.length > 0 ? rows[rows.length - 1].seq : 0;
    const dialect = dialectOf(lineage.dialect);
    const snapshot = rows.map(rowToMessage);
    const tokens = rows.map((r) => r.tokenEstimate);
    const tokensBefore = tokens.reduce((a, b) => a + b, 0);
    const messagesBefore = snapshot.length;
    const refuse = async (
      reason: string,
      fields: {
        gate?: string;
        gateResults?: Record<string, string>;
        tokensAfter?: number;
        promptTokens?: number;
        completionTokens?: number;
        cachedPromptTokens?: number;
        held?: boolean;
      } = {},
    ): Promise<Answer> => {
      await finishJob(db, input, attempt, 'refused', { reason, messagesBefore, tokensBefore, ...fields }, policy);
      if (fields.gate) {
        Context.current()
          .metricMeter.createCounter('session_compaction_gate_refusals', 'jobs', 'Compactions a gate refused, by gate')
          .add(1, { gate: fields.gate });
      }
      return {
        outcome: 'refused',
        sessionId: lineage.headSessionId,
        generation: lineage.generation,
        reason,
        gate: fields.gate,
        messagesBefore,
        tokensBefore,
        tokensAfter: fields.tokensAfter,
      };
    };

    const held = dialect.holdReason(snapshot);
    if (held) return refuse(held, { held: true });
    const plan = planCompaction(snapshot, { ...deps.plan, force: input.force, dialect }, tokens);
    if (plan.middle.length === 0) {
      return refuse(`nothing to summarise: all ${snapshot.length} messages fit in the kept head and tail`);
    }

    // The stored ledger is the head's only while the head still holds the summary that renders it
    // (a caller may have taken the summary back): otherwise the ledger starts again.
    const previousLedger = snapshot.some((m) => dialect.isSummary(m) && dialect.textOf(m).includes(LEDGER_HEADING)) ? ledgerFrom(storedLedger) : emptyLedger();
    const counter = tokenCounterFor(lineage.model, dialect);
    /** The gates on the head a proposal would commit, followed by `carried` (the appends read at commit). */
    const gatesOf = (p: Proposal, carried: Array<{ message: Message; tokens: number }>) => {
      const carriedTokens = carried.reduce((sum, m) => sum + m.tokens, 0);
      const candidateTokens = p.candidate.reduce((sum, e) => sum + (e.from === undefined ? counter.count(e.message) : tokens[e.from]), 0);
      return runGates({
        before: [...snapshot, ...carried.map((c) => c.message)],
        after: [...p.candidate.map((c) => c.message), ...carried.map((c) => c.message)],
        tokensBefore: tokensBefore + carriedTokens,
        tokensAfter: candidateTokens + carriedTokens,
        targetTokens: lineage.contextWindow ?? undefined,
        summaryIndices: p.summaryIndices,
        requireSummary: p.rung === 'summary',
        facts: p.demand,
        dialect,
      });
    };
    const target = deps.masking && !input.force && !input.focusTopic ? maskingTarget(lineage, deps.masking.targetPercent) : undefined;
    // The cheap rung first: no summariser call when masking old tool outputs is enough.
    let proposal =
      target !== undefined
        ? maskingProposal(
            snapshot,
            rows.map((r) => r.lineageSeq),
            plan,
            dialect,
            tokens,
            (m) => counter.count(m),
            target,
            previousLedger,
            deps.ledger.requestChars,
          )
        : undefined;
    // A masked head the gates would refuse is not worth committing: the summary rung runs instead.
    if (proposal && gatesOf(proposal, []).failed) proposal = undefined;
    let usage: { promptTokens?: number; completionTokens?: number; cachedPromptTokens?: number } = {};
    let chunks: number | undefined;
    if (!proposal) {
      beat({ phase: 'summarising' });
      const ticker = setInterval(() => beat(), deps.heartbeatIntervalMs);
      let summary;
      const summariseStarted = Date.now();
      try {
        summary = await summariseInChunks(
          deps.summariser,
          {
            middle: plan.middle.map((i) => snapshot[i]),
            previousSummary: plan.previousSummary,
            // A focus sent by signal skips the clients' and the Update validator's check: what of a summary's structure it holds is removed.
            focusTopic: input.focusTopic === undefined ? undefined : withoutReservedText(input.focusTopic),
            force: input.force,
            latestUserRequest: latestUserRequestText(snapshot, dialect),
            dialect,
            // The session's own model, on an API that takes its messages: ask with the head as the
            // agent sent it, so the provider's prompt cache serves it.
            prefix:
              deps.summaryLayout === 'prefix' && lineage.model === deps.summariser.model && deps.summariser.speaks?.(dialect.name)
                ? prefixLayout(snapshot, plan, dialect, tokensBefore, deps.summaryInputTokens)
                : undefined,
          },
          {
            inputBudgetTokens: deps.summaryInputTokens,
            signal: Context.current().cancellationSignal,
            onProgress: (p: SummaryProgress) => {
              progress = { phase: 'summarising', incarnation: lineage.incarnation, ...p, elapsedMs: Date.now() - started };
            },
          },
        );
      } finally {
        clearInterval(ticker);
      }
      usage = { promptTokens: summary.promptTokens, completionTokens: summary.completionTokens, cachedPromptTokens: summary.cachedPromptTokens };
      chunks = summary.chunks;
      const meter = Context.current().metricMeter.withTags({ model: summary.model });
      meter.createHistogram('session_summariser_latency', 'int', 'ms', 'Time the summariser took').record(Date.now() - summariseStarted);
      meter.createCounter('session_summariser_prompt_tokens', 'tokens', 'Prompt tokens the summariser reported').add(summary.promptTokens ?? 0);
      meter.createCounter('session_summariser_completion_tokens', 'tokens', 'Completion tokens the summariser reported').add(summary.completionTokens ?? 0);
      if (summary.text.trim() === '') return refuse('the summariser returned an empty summary', usage);
      proposal = summaryProposal(
        snapshot,
        rows.map((r) => r.lineageSeq),
        plan,
        dialect,
        summary.text,
        previousLedger,
        {
          requestChars: deps.ledger.requestChars,
          budgetTokens: ledgerBudget(
            lineage.contextWindow,
            deps.ledger,
            storedLedger === null ? 0 : estimateTextTokens(renderLedger(previousLedger)),
            plan.middle.reduce((sum, i) => sum + tokens[i], 0),
          ),
        },
      );
    }
    const { candidate, rung } = proposal;

    beat({ phase: 'gates', chunks });
    const compacted: CompactedMessage[] = candidate.map((entry) =>
      entry.from === undefined
        ? { message: entry.message, tokens: counter.count(entry.message) }
        : {
            message: entry.message,
            tokens: tokens[entry.from],
            lineageSeq: rows[entry.from].lineageSeq,
            originMessageId: rows[entry.from].originMessageId ?? rows[entry.from].id,
            sourceRowId: rows[entry.from].id,
          },
    );
    const verify = (carried: Array<{ message: Message; tokens: number }>) => gatesOf(proposal, carried);

    beat({ phase: 'committing', chunks });
    const committed = await withSpan('db.commit', { 'compaction.job_id': input.jobId, 'compaction.mode': input.mode }, () =>
      commitCompaction(db, {
        job,
        attempt,
        mode: input.mode,
        dialect,
        watermarkSeq,
        snapshotRows: rows.length,
        compacted,
        summarised: lineageRange(proposal.replaced.map((i) => rows[i])),
        verify,
        stats: { tokensBefore, messagesBefore, ...usage },
        rung,
        note: rung === 'masking' ? `masking rung: ${proposal.replaced.length} old tool output(s) replaced by placeholders, no summariser call` : undefined,
        ledger: proposal.ledger as unknown as JsonValue,
        policy,
      }),
    );
    if (committed.outcome === 'refused') {
      return refuse(committed.reason, { gate: committed.gate, gateResults: committed.gateResults, tokensAfter: committed.tokensAfter, ...usage });
    }
    if (committed.outcome === 'stale') {
      await finishJob(db, input, attempt, 'stale', { reason: committed.reason }, policy);
      return { outcome: 'stale', sessionId: committed.sessionId, generation: committed.generation, reason: committed.reason };
    }
    beat({ phase: 'committed', chunks, alreadyCommitted: committed.alreadyCommitted });
    Context.current()
      .metricMeter.createHistogram('session_compaction_carried_messages', 'int', 'messages', 'Messages appended during a summary and carried into the new head')
      .record(committed.carried);
    if (committed.alreadyCommitted) log.info('compaction already committed by an earlier attempt', { jobId: input.jobId });
    return {
      outcome: 'compacted',
      sessionId: committed.sessionId,
      generation: committed.generation,
      previousSessionId: input.mode === 'rotate' ? input.parentSessionId : undefined,
      reason: committed.reason,
      tokensBefore,
      tokensAfter: committed.tokensAfter,
      messagesBefore,
      messagesAfter: committed.messagesAfter,
      ...(committed.followUpRequestId ? { followUpRequestId: committed.followUpRequestId } : {}),
    };
  }

  /**
   * Records a compaction the workflow gave up on (summariser failed for good) and returns
   * what Postgres holds, which the workflow adopts.
   */
  async function recordAbortedCompaction(input: CompactionJob & { reason: string }): Promise<Answer> {
    const { reason, ...job } = input;
    const settled = await abortJob(deps.db, job, deps.summariser.model, reason, policy);
    if (settled.outcome === 'aborted') return writeJobAnswer({ ...settled, reason });
    // A lost attempt committed this job: its answer is the commit's.
    return writeJobAnswer({ ...settled, previousSessionId: settled.sessionId !== job.parentSessionId ? job.parentSessionId : undefined });
  }

  /** Records the requests that joined a job while it ran (see recordJoinedRequests). */
  async function recordJoinedRequests(input: Pick<CompactionJob, 'jobId' | 'lineageId' | 'requestIds'> & { outcome: CompactionOutcome }): Promise<void> {
    const { outcome, ...job } = input;
    await recordJoinedRequestsInStore(deps.db, job, outcome, policy);
  }

  /** Whether the lineage was closed in Postgres (a new workflow run checks first). */
  /** Closed, or erased (no row left: a run started for an erased lineage ends at once). */
  async function isLineageClosed(lineageId: string): Promise<boolean> {
    try {
      return (await lineageOf(deps.db, lineageId)).closed;
    } catch (error) {
      if (error instanceof SessionNotFoundError) return true;
      throw error;
    }
  }

  /** Marks the lineage closed in Postgres once the workflow has drained its queue. */
  async function markLineageClosed(lineageId: string): Promise<void> {
    await closeLineage(deps.db, lineageId);
  }

  return { compactSession, recordAbortedCompaction, recordJoinedRequests, markLineageClosed, isLineageClosed };
}

export type CompactionActivities = ReturnType<typeof createCompactionActivities>;
