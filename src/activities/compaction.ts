/**
 * The compaction activities, built by a factory so the worker (and tests) inject the
 * database and the summariser. `compactSession` is the only one on the happy path: it
 * snapshots the head, summarises while heartbeating (the heartbeat is the lease refresh,
 * the heartbeat timeout the lease TTL), judges the candidate and publishes it in one
 * transaction. Every step is idempotent by job id, so a retried attempt, or a late result
 * of a lost one, never commits a second child.
 */
import { Context, log } from '@temporalio/activity';
import { buildCandidate, judgeCandidate } from '../compaction/candidate';
import { planCompaction, type PlanOptions } from '../compaction/plan';
import { rowToMessage } from '../db/schema';
import type { Database } from '../db/database';
import { abortJob, beginJob, closeLineage, commitCompaction, finishJob, lineageOf, sessionMessages, type CompactionJob, type SettledJob } from '../db/session-store';
import { withSpan } from '../tracing';
import type { CompactionMode } from '../workflows/contract';
import type { Summariser } from './summariser';

export interface CompactSessionInput extends CompactionJob {
  mode: CompactionMode;
  focusTopic?: string;
  force: boolean;
}

export interface CompactSessionResult {
  outcome: 'compacted' | 'stale' | 'refused';
  headSessionId: string;
  generation: number;
  previousSessionId?: string;
  reason?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  messagesBefore?: number;
  messagesAfter?: number;
}

export interface CompactionActivityDeps {
  db: Database;
  summariser: Summariser;
  plan: Omit<PlanOptions, 'force'>;
  /** How often the activity heartbeats while it works (the SDK throttles further). */
  heartbeatIntervalMs: number;
  /** Seam for tests: a heartbeat that a test can silence to simulate a partitioned worker. */
  heartbeat?: (details: unknown) => void;
}

export function createCompactionActivities(deps: CompactionActivityDeps) {
  const heartbeat = deps.heartbeat ?? ((details: unknown) => Context.current().heartbeat(details));

  async function compactSession(input: CompactSessionInput): Promise<CompactSessionResult> {
    const { db } = deps;
    // Three independent reads at once: the audit row, the lineage's head, the snapshot.
    const [record, lineage, rows] = await Promise.all([
      beginJob(db, input, deps.summariser.model),
      lineageOf(db, input.lineageId),
      sessionMessages(db, input.parentSessionId),
    ]);
    if (record.outcome === 'compacted') {
      return { outcome: 'compacted', headSessionId: record.childSessionId!, generation: record.generation, previousSessionId: record.parentSessionId, messagesAfter: record.messagesAfter ?? undefined };
    }
    if (record.outcome === 'refused' || record.outcome === 'stale') {
      // An earlier attempt decided this job and its answer was lost: give the same answer.
      return { outcome: record.outcome, headSessionId: lineage.headSessionId, generation: lineage.generation, reason: record.reason ?? undefined };
    }
    if (lineage.headSessionId !== input.parentSessionId || lineage.generation !== input.generation) {
      const reason = `the head is ${lineage.headSessionId} (generation ${lineage.generation}); adopting it instead of compacting again`;
      await finishJob(db, input.jobId, record.attempts, 'stale', { reason });
      return { outcome: 'stale', headSessionId: lineage.headSessionId, generation: lineage.generation, reason };
    }

    const watermarkSeq = rows.length > 0 ? rows[rows.length - 1].seq : 0;
    const transcript = rows.map(rowToMessage);
    const refuse = async (reason: string, stats: { tokensBefore?: number; tokensAfter?: number } = {}): Promise<CompactSessionResult> => {
      await finishJob(db, input.jobId, record.attempts, 'refused', { reason, messagesBefore: transcript.length, ...stats });
      return { outcome: 'refused', headSessionId: lineage.headSessionId, generation: lineage.generation, reason, messagesBefore: transcript.length, ...stats };
    };

    const plan = planCompaction(transcript, { ...deps.plan, force: input.force });
    if (plan.middle.length === 0) {
      return refuse(`nothing to summarise: all ${transcript.length} messages fit in the kept head and tail`);
    }

    let chunks = 0;
    const beat = () => heartbeat({ phase: 'summarising', messages: plan.middle.length, chunks });
    beat();
    const ticker = setInterval(beat, deps.heartbeatIntervalMs);
    let summary;
    const summariseStarted = Date.now();
    try {
      summary = await deps.summariser.summarise(
        { middle: plan.middle, previousSummary: plan.previousSummary, focusTopic: input.focusTopic, force: input.force },
        { signal: Context.current().cancellationSignal, onProgress: () => chunks++ },
      );
    } finally {
      clearInterval(ticker);
    }
    const usage = { promptTokens: summary.promptTokens, completionTokens: summary.completionTokens };
    const meter = Context.current().metricMeter.withTags({ model: summary.model });
    meter.createHistogram('session_summariser_latency', 'int', 'ms', 'Time the summariser took').record(Date.now() - summariseStarted);
    meter.createCounter('session_summariser_prompt_tokens', 'tokens', 'Prompt tokens the summariser reported').add(summary.promptTokens ?? 0);
    meter.createCounter('session_summariser_completion_tokens', 'tokens', 'Completion tokens the summariser reported').add(summary.completionTokens ?? 0);
    if (summary.text.trim() === '') return refuse('the summariser returned an empty summary');

    const candidate = buildCandidate(plan, summary.text, transcript);
    const verdict = judgeCandidate(transcript, candidate);
    if (!verdict.accepted) {
      await finishJob(db, input.jobId, record.attempts, 'refused', { reason: verdict.reason, tokensBefore: verdict.tokensBefore, tokensAfter: verdict.tokensAfter, messagesBefore: transcript.length, messagesAfter: candidate.length, ...usage });
      return { outcome: 'refused', headSessionId: lineage.headSessionId, generation: lineage.generation, reason: verdict.reason, tokensBefore: verdict.tokensBefore, tokensAfter: verdict.tokensAfter };
    }

    heartbeat({ phase: 'committing' });
    const committed = await withSpan('db.commit', { 'compaction.job_id': input.jobId, 'compaction.mode': input.mode }, () => commitCompaction(db, {
      job: input,
      attempt: record.attempts,
      mode: input.mode,
      watermarkSeq,
      compacted: candidate,
      stats: { tokensBefore: verdict.tokensBefore, tokensAfter: verdict.tokensAfter, messagesBefore: transcript.length, ...usage },
    }));
    if (committed.outcome === 'stale') {
      await finishJob(db, input.jobId, record.attempts, 'stale', { reason: committed.reason });
      return { outcome: 'stale', headSessionId: committed.headSessionId, generation: committed.generation, reason: committed.reason };
    }
    heartbeat({ phase: 'committed', alreadyCommitted: committed.alreadyCommitted });
    Context.current()
      .metricMeter.createHistogram('session_compaction_carried_messages', 'int', 'messages', 'Messages appended during a summary and carried into the new head')
      .record(committed.carried);
    if (committed.alreadyCommitted) log.info('compaction already committed by an earlier attempt', { jobId: input.jobId });
    return {
      outcome: 'compacted',
      headSessionId: committed.headSessionId,
      generation: committed.generation,
      previousSessionId: input.mode === 'rotate' ? input.parentSessionId : undefined,
      tokensBefore: verdict.tokensBefore,
      tokensAfter: verdict.tokensAfter,
      messagesBefore: transcript.length,
      messagesAfter: committed.messagesAfter,
    };
  }

  /**
   * Records a compaction the workflow gave up on (summariser failed for good) and returns
   * what Postgres holds, which the workflow adopts.
   */
  async function recordAbortedCompaction(input: CompactionJob & { reason: string }): Promise<SettledJob> {
    const { reason, ...job } = input;
    return abortJob(deps.db, job, deps.summariser.model, reason);
  }

  /** Marks the lineage closed in Postgres once the workflow has drained its queue. */
  async function markLineageClosed(lineageId: string): Promise<void> {
    await closeLineage(deps.db, lineageId);
  }

  return { compactSession, recordAbortedCompaction, markLineageClosed };
}

export type CompactionActivities = ReturnType<typeof createCompactionActivities>;
