/**
 * The rungs: the ways an attempt can make the head smaller, cheapest first. Each rung proposes
 * a head or passes to the next; the last one (the summary) always proposes or refuses. A new
 * rung is one entry in RUNGS (docs/compaction.md).
 */
import { ledgerBudget, renderLedger } from '../../compaction/ledger';
import { maskingTarget } from '../../compaction/masking';
import { maskingProposal, type Proposal, summaryProposal } from '../../compaction/proposal';
import { estimateTextTokens } from '../../compaction/tokens';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Heartbeat } from './heartbeat';
import { gatesOf, type Snapshot } from './snapshot';
import { summarise } from './summarise';

/** What the summariser reported it used (none for a rung without a summariser call). */
export interface SummariserUsage {
  promptTokens?: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
}

/** A rung's answer: a head to gate and commit, or a refusal of the job; undefined passes to the next rung. */
export type RungResult = { proposal: Proposal; usage: SummariserUsage; chunks?: number } | { refusal: string; usage: SummariserUsage } | undefined;

export interface RungStep {
  snapshot: Snapshot;
  input: CompactSessionInput;
  deps: CompactionActivityDeps;
  heartbeat: Heartbeat;
}

export interface Rung {
  name: Proposal['rung'];
  propose(step: RungStep): Promise<RungResult>;
}

/** Masking old tool outputs: no summariser call, when that brings the head to its target and the gates accept the masked head. */
const masking: Rung = {
  name: 'masking',
  async propose({ snapshot: s, input, deps }) {
    // A forced or focused request asks for a summary.
    if (!deps.masking || input.force || input.focusTopic) return undefined;
    const target = maskingTarget(s.lineage, deps.masking.targetPercent);
    if (target === undefined) return undefined;
    const seqs = s.rows.map((r) => r.lineageSeq);
    const proposal = maskingProposal(
      s.messages,
      seqs,
      s.plan,
      s.dialect,
      s.tokens,
      (m) => s.counter.count(m),
      target,
      s.previousLedger,
      deps.ledger.requestChars,
    );
    // A masked head the gates would refuse is not worth committing: the summary rung runs instead.
    if (!proposal || gatesOf(s, proposal, []).failed) return undefined;
    return { proposal, usage: {} };
  },
};

/** An LLM's summary of the middle, with the ledger of what it summarised. */
const summary: Rung = {
  name: 'summary',
  async propose({ snapshot: s, input, deps, heartbeat }) {
    const result = await summarise(s, input, deps, heartbeat);
    const usage = { promptTokens: result.promptTokens, completionTokens: result.completionTokens, cachedPromptTokens: result.cachedPromptTokens };
    if (result.text.trim() === '') return { refusal: 'the summariser returned an empty summary', usage };
    const budgetTokens = ledgerBudget(
      s.lineage.contextWindow,
      deps.ledger,
      s.storedLedger === null ? 0 : estimateTextTokens(renderLedger(s.previousLedger)),
      s.plan.middle.reduce((sum, i) => sum + s.tokens[i], 0),
    );
    const seqs = s.rows.map((r) => r.lineageSeq);
    const proposal = summaryProposal(s.messages, seqs, s.plan, s.dialect, result.text, s.previousLedger, {
      requestChars: deps.ledger.requestChars,
      budgetTokens,
    });
    return { proposal, usage, chunks: result.chunks };
  },
};

/** Cheapest first. */
export const RUNGS: readonly Rung[] = [masking, summary];

/** The first rung's proposal (or refusal). */
export async function propose(step: RungStep, rungs: readonly Rung[] = RUNGS): Promise<NonNullable<RungResult>> {
  for (const rung of rungs) {
    const result = await rung.propose(step);
    if (result) return result;
  }
  throw new Error(`no rung proposed a head (rungs: ${rungs.map((r) => r.name).join(', ')}); the last rung must always propose or refuse`);
}
