/**
 * What a compaction proposes to commit, by rung: the head, the ledger it carries, what the
 * `facts` gate demands of it, and which messages it replaces. The compaction activity builds
 * one of these and gates it on the exact head at commit; the fidelity benchmark builds the
 * same ones without the stack. Pure.
 */
import { buildCandidate, type CandidateEntry } from './candidate';
import type { Dialect, Message } from './dialects/types';
import type { FactsDemand } from './gates';
import { buildLedger, demandedFacts, factsOf, type Ledger, ledgerFacts, type LedgerOptions, mergeFacts, summaryWithLedger } from './ledger';
import { maskOldOutputs } from './masking';
import type { CompactionPlan } from './plan';

export interface Proposal {
  rung: 'summary' | 'masking' | 'trim';
  candidate: CandidateEntry[];
  ledger: Ledger;
  demand: FactsDemand;
  /** Positions in the snapshot of the messages the head no longer holds as appended (summarised, or masked). */
  replaced: number[];
  /** Positions in the candidate of the summary's messages: this compaction's (the summary's or the trim's), or (masking) the summary the head keeps. */
  summaryIndices: number[];
}

/**
 * The masking rung's proposal, or undefined when masking old tool outputs cannot bring the head to
 * `targetTokens`. `seqs[i]` is snapshot message i's lineage sequence number (null on rows a
 * compaction wrote: only those can hold placeholders already).
 */
export function maskingProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  tokens: readonly number[],
  count: (message: Message) => number,
  targetTokens: number,
  previous: Ledger,
  requestChars: number,
): Proposal | undefined {
  const masked = maskOldOutputs(snapshot, seqs, plan, dialect, tokens, count, targetTokens);
  if (!masked) return undefined;
  return {
    rung: 'masking',
    candidate: masked.entries,
    // The head keeps its summary and the ledger in it as they are.
    ledger: previous,
    demand: {
      expected: mergeFacts(
        factsOf(
          masked.masked.map((i) => snapshot[i]),
          dialect,
          requestChars,
        ),
        ledgerFacts(previous),
      ),
      folded: { requests: [], paths: [], identifiers: [] },
    },
    replaced: masked.masked,
    summaryIndices: masked.entries.flatMap((e, i) => (dialect.isSummary(e.message) ? [i] : [])),
  };
}

/**
 * The summary rung's proposal: the summariser's prose followed by the ledger, which merges the
 * previous one with the summarised middle. `seqs[i]` is snapshot message i's lineage sequence
 * number (null on rows a compaction wrote).
 */
export function summaryProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  prose: string,
  previous: Ledger,
  options: LedgerOptions,
): Proposal {
  const range = plan.middle.map((i) => ({ message: snapshot[i], seq: seqs[i] }));
  const kept = plan.latestUserRequest !== undefined ? plan.middle.indexOf(plan.latestUserRequest) : -1;
  const { ledger, folded } = buildLedger(previous, range, dialect, options, kept >= 0 ? kept : undefined);
  const candidate = buildCandidate(plan, summaryWithLedger(prose, ledger), snapshot, dialect);
  return {
    rung: 'summary',
    candidate,
    ledger,
    demand: {
      expected: demandedFacts(previous, range, dialect, options),
      folded,
    },
    replaced: plan.middle,
    summaryIndices: candidate.flatMap((e, i) => (e.from === undefined ? [i] : [])),
  };
}
