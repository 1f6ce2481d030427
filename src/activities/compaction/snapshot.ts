/**
 * What an attempt works on once it goes on: the head's rows as messages with their token counts,
 * the plan (kept head, middle, tail), the ledger it continues, and the gates of any proposal on
 * that snapshot. Built once; every later step reads it.
 */
import type { Message } from '../../compaction/dialects';
import { dialectOf, type Dialect } from '../../compaction/dialects';
import { runGates, type GateReport } from '../../compaction/gates';
import { emptyLedger, ledgerFrom, type Ledger } from '../../compaction/ledger';
import { planCompaction, type CompactionPlan } from '../../compaction/plan';
import type { Proposal } from '../../compaction/proposal';
import { LEDGER_HEADING } from '../../compaction/summary-structure';
import { tokenCounterFor, type TokenCounter } from '../../compaction/token-counter';
import type { StartedJob } from '../../db/jobs';
import type { LineageInfo } from '../../db/lineage-state';
import { rowToMessage } from '../../db/schema';
import type { JsonValue } from '../../compaction/json';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';

export interface Snapshot {
  lineage: LineageInfo;
  dialect: Dialect;
  rows: StartedJob['rows'];
  messages: Message[];
  /** Stored token count of each message. */
  tokens: number[];
  tokensBefore: number;
  messagesBefore: number;
  /** The last row's seq: the commit carries every append after it. */
  watermarkSeq: number;
  plan: CompactionPlan;
  /** The ledger the stored one was, when the head still holds the summary that renders it. */
  previousLedger: Ledger;
  storedLedger: JsonValue | null;
  counter: TokenCounter;
}

export function takeSnapshot(begun: StartedJob, input: CompactSessionInput, deps: CompactionActivityDeps): Snapshot {
  const { lineage, rows, ledger: storedLedger } = begun;
  const dialect = dialectOf(lineage.dialect);
  const messages = rows.map(rowToMessage);
  const tokens = rows.map((r) => r.tokenEstimate);
  // The stored ledger is the head's only while the head still holds the summary that renders it
  // (a caller may have taken the summary back): otherwise the ledger starts again.
  const holdsLedger = messages.some((m) => dialect.isSummary(m) && dialect.textOf(m).includes(LEDGER_HEADING));
  return {
    lineage,
    dialect,
    rows,
    messages,
    tokens,
    tokensBefore: tokens.reduce((a, b) => a + b, 0),
    messagesBefore: messages.length,
    watermarkSeq: rows.length > 0 ? rows[rows.length - 1].seq : 0,
    plan: planCompaction(messages, { ...deps.plan, force: input.force, dialect }, tokens),
    previousLedger: holdsLedger ? ledgerFrom(storedLedger) : emptyLedger(),
    storedLedger,
    counter: tokenCounterFor(lineage.model, dialect),
  };
}

/** The gates on the head `proposal` would commit, followed by `carried` (the appends read at commit). */
export function gatesOf(s: Snapshot, proposal: Proposal, carried: Array<{ message: Message; tokens: number }>): GateReport {
  const carriedTokens = carried.reduce((sum, m) => sum + m.tokens, 0);
  const candidateTokens = proposal.candidate.reduce((sum, e) => sum + (e.from === undefined ? s.counter.count(e.message) : s.tokens[e.from]), 0);
  return runGates({
    before: [...s.messages, ...carried.map((c) => c.message)],
    after: [...proposal.candidate.map((c) => c.message), ...carried.map((c) => c.message)],
    tokensBefore: s.tokensBefore + carriedTokens,
    tokensAfter: candidateTokens + carriedTokens,
    targetTokens: s.lineage.contextWindow ?? undefined,
    summaryIndices: proposal.summaryIndices,
    requireSummary: proposal.rung !== 'masking',
    facts: proposal.demand,
    dialect: s.dialect,
  });
}
