/**
 * The commit step: the proposed head published in one statement (src/db/commit.ts), after the
 * gates ran again on it followed by whatever was appended meanwhile; then the answer.
 */
import { Context, log } from '@temporalio/activity';
import type { GainFigures } from '../../compaction/gain';
import type { JsonValue } from '../../compaction/json';
import type { Proposal } from '../../compaction/proposal';
import { commitCompaction, type CompactedMessage } from '../../db/session-store';
import { withSpan } from '../../tracing';
import type { Answer } from '../../workflows/contract';
import type { Decider } from './decide';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Heartbeat } from './heartbeat';
import type { Proposed, RungCosts } from './rungs';
import { gatesOf, type Snapshot } from './snapshot';

/** Inclusive lineage sequence range of the appended messages among `rows`. */
function lineageRange(rows: ReadonlyArray<{ lineageSeq: number | null }>): { fromSeq: number; toSeq: number } | undefined {
  const seqs = rows.map((r) => r.lineageSeq).filter((n): n is number => n !== null);
  return seqs.length > 0 ? { fromSeq: Math.min(...seqs), toSeq: Math.max(...seqs) } : undefined;
}

/** The head as rows to write: kept messages point at the rows they came from, new ones carry their own body. */
function compactedMessages(s: Snapshot, proposal: Proposal): CompactedMessage[] {
  return proposal.candidate.map((entry) =>
    entry.from === undefined
      ? { message: entry.message, tokens: s.counter.count(entry.message) }
      : {
          message: entry.message,
          tokens: s.tokens[entry.from],
          lineageSeq: s.rows[entry.from].lineageSeq,
          originMessageId: s.rows[entry.from].originMessageId ?? s.rows[entry.from].id,
          sourceRowId: s.rows[entry.from].id,
        },
  );
}

export async function commitProposal(
  step: { snapshot: Snapshot; input: CompactSessionInput; deps: CompactionActivityDeps; heartbeat: Heartbeat; decide: Decider },
  attempt: number,
  proposed: Proposed,
  audit: { costs?: RungCosts; gain?: GainFigures } = {},
): Promise<Answer> {
  const { snapshot: s, input, deps, heartbeat, decide } = step;
  const { proposal, usage, chunks, passedRungs } = proposed;
  heartbeat.beat({ phase: 'gates', chunks });
  const compacted = compactedMessages(s, proposal);
  heartbeat.beat({ phase: 'committing', chunks });
  const committed = await withSpan('db.commit', { 'compaction.job_id': input.jobId, 'compaction.mode': input.mode }, () =>
    commitCompaction(deps.db, {
      // The commit carries the incarnation the job began on.
      job: { ...input, incarnation: s.lineage.incarnation },
      attempt,
      mode: input.mode,
      dialect: s.dialect,
      watermarkSeq: s.watermarkSeq,
      snapshotRows: s.rows.length,
      compacted,
      summarised: lineageRange(proposal.replaced.map((i) => s.rows[i])),
      verify: (carried) => gatesOf(s, proposal, carried),
      stats: { tokensBefore: s.tokensBefore, messagesBefore: s.messagesBefore, ...usage },
      rung: proposal.rung,
      note: proposed.note,
      passedRungs,
      costs: audit.costs,
      gain: audit.gain,
      ledger: proposal.ledger as unknown as JsonValue,
      policy: deps.autoCompaction,
    }),
  );
  if (committed.outcome === 'refused') {
    return decide.refuse(committed.reason, {
      gate: committed.gate,
      gateResults: committed.gateResults,
      tokensAfter: committed.tokensAfter,
      ...usage,
      passedRungs,
      ...audit,
    });
  }
  if (committed.outcome === 'stale') {
    return decide.stale({ outcome: 'stale', sessionId: committed.sessionId, generation: committed.generation, reason: committed.reason });
  }
  heartbeat.beat({ phase: 'committed', chunks, alreadyCommitted: committed.alreadyCommitted });
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
    tokensBefore: s.tokensBefore,
    tokensAfter: committed.tokensAfter,
    messagesBefore: s.messagesBefore,
    messagesAfter: committed.messagesAfter,
    ...(committed.followUpRequestId ? { followUpRequestId: committed.followUpRequestId } : {}),
  };
}
