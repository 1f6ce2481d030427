/**
 * The rungs: the ways an attempt can make the head smaller, cheapest first. Each rung proposes
 * a head or passes to the next, saying why; the last one (the trim) proposes or passes, and
 * when every rung passed the attempt gates the head a rung left behind (a summary over the
 * context window, which the gates refuse) or refuses with every rung's reason. A new rung is
 * one entry in RUNGS (docs/compaction.md).
 */
import { ledgerBudget, renderLedger } from '../../compaction/ledger';
import { maskingTarget } from '../../compaction/masking';
import { maskingProposal, type Proposal, summaryProposal } from '../../compaction/proposal';
import { addCosts, NO_COST, type RungCost } from '../../compaction/gain';
import { estimateTextTokens } from '../../compaction/tokens';
import { trimProposal, trimTarget } from '../../compaction/trim';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Heartbeat } from './heartbeat';
import { gatesOf, type Snapshot } from './snapshot';
import { native } from './native';
import { inputTooLarge, summarise } from './summarise';

/** What the summariser reported it used (none for a rung without a summariser call); `cost`: the rung's bill (the audit row's `costs`). */
interface SummariserUsage {
  promptTokens?: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
  cost?: RungCost;
}

/** What each rung that ran was billed, by rung name: the audit row's `costs`. */
export type RungCosts = Partial<Record<Proposal['rung'], RungCost>>;

/** Why each rung that passed did, by rung name: the audit row's `passed_rungs`. */
type PassedRungs = Partial<Record<Proposal['rung'], string>>;

/** A head a rung proposes: gated and committed; `note` goes into the audit row's reason. */
export interface Proposed {
  proposal: Proposal;
  usage: SummariserUsage;
  chunks?: number;
  note?: string;
  passedRungs?: PassedRungs;
}

/** Why a rung passed, what it paid for, and the head it proposed that the gates will refuse (gated when no later rung answers). */
export interface Passed {
  passed: string;
  usage?: SummariserUsage;
  leftBehind?: Proposed;
}

/** A rung's answer: a head to gate and commit, a refusal of the job, or a pass to the next rung (undefined: a pass without a reason). */
export type RungResult = Proposed | { refusal: string; usage: SummariserUsage; passedRungs?: PassedRungs } | Passed | undefined;

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

/** The tokens of a proposed head (without appends carried at commit). */
const candidateTokens = (s: Snapshot, proposal: Proposal) =>
  proposal.candidate.reduce((sum, e) => sum + (e.from === undefined ? s.counter.count(e.message) : s.tokens[e.from]), 0);

/** The ledger's bound for a compaction of `replacedTokens` (src/compaction/ledger.ts ledgerBudget). */
const budgetOf = (s: Snapshot, deps: CompactionActivityDeps, replacedTokens: number) =>
  ledgerBudget(s.lineage.contextWindow, deps.ledger, s.storedLedger === null ? 0 : estimateTextTokens(renderLedger(s.previousLedger)), replacedTokens);

/** Masking old tool outputs: no summariser call, when that brings the head to its target and the gates accept the masked head. */
const masking: Rung = {
  name: 'masking',
  async propose({ snapshot: s, input, deps }) {
    if (!deps.masking) return { passed: 'masking is off' };
    // A forced or focused request asks for a summary.
    if (input.force || input.focusTopic) return { passed: 'a forced or focused request asks for a summary' };
    const target = maskingTarget(s.lineage, deps.masking.targetPercent);
    if (target === undefined) return { passed: 'the lineage has neither a threshold nor a context window' };
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
    if (!proposal) return { passed: `masking old tool outputs does not bring the head to ${target} tokens` };
    // A masked head the gates would refuse is not worth committing: the summary rung runs instead.
    const failed = gatesOf(s, proposal, []).failed;
    if (failed) return { passed: `the gates would refuse the masked head (gate ${failed.gate})` };
    return { proposal, usage: {}, note: `masking rung: ${proposal.replaced.length} old tool output(s) replaced by placeholders, no summariser call` };
  },
};

/**
 * An LLM's summary of the middle, with the ledger of what it summarised. It passes to the trim
 * when the summariser refuses its input as too long (after the summarise step's own smaller
 * tries), or when its head would still be over the context window.
 */
const summary: Rung = {
  name: 'summary',
  async propose({ snapshot: s, input, deps, heartbeat }) {
    let result: Awaited<ReturnType<typeof summarise>>;
    try {
      result = await summarise(s, input, deps, heartbeat);
    } catch (error) {
      const tooLarge = inputTooLarge(error);
      if (tooLarge) return { passed: `the summariser refused its input as too long (${tooLarge})` };
      throw error;
    }
    const usage = {
      promptTokens: result.promptTokens,
      completionTokens: result.completionTokens,
      cachedPromptTokens: result.cachedPromptTokens,
      cost: result.cost,
    };
    if (result.text.trim() === '') return { refusal: 'the summariser returned an empty summary', usage };
    const budgetTokens = budgetOf(
      s,
      deps,
      s.plan.middle.reduce((sum, i) => sum + s.tokens[i], 0),
    );
    const seqs = s.rows.map((r) => r.lineageSeq);
    const proposal = summaryProposal(s.messages, seqs, s.plan, s.dialect, result.text, s.previousLedger, {
      requestChars: deps.ledger.requestChars,
      budgetTokens,
    });
    const proposed = { proposal, usage, chunks: result.chunks };
    const window = s.lineage.contextWindow;
    const tokensAfter = candidateTokens(s, proposal);
    if (window !== null && tokensAfter > window) {
      return { passed: `its head would hold ${tokensAfter} tokens, over the context window of ${window}`, usage, leftBehind: proposed };
    }
    return proposed;
  },
};

/**
 * The last resort: the oldest groups dropped until the head fits (src/compaction/trim.ts), the
 * ledger of what was dropped in the summary message; never the kept head, an instruction, the
 * latest request or the open calls. Its target: the masking rung's share of the threshold (or
 * of the context window), half when masking is off.
 */
const trim: Rung = {
  name: 'trim',
  async propose({ snapshot: s, deps }) {
    const target = trimTarget(s.lineage, deps.masking?.targetPercent ?? 50);
    const seqs = s.rows.map((r) => r.lineageSeq);
    const previous = s.plan.previousSummary;
    const note = (dropped: number) =>
      `The ${dropped} oldest message(s) of this conversation were dropped without a summary: no summary could bring it under its size limit. The ledger below lists what they held.`;
    const withPrevious = (dropped: number) => `${note(dropped)}\n\nSummary before that:\n${previous}`;
    const trimmed = (prose: (dropped: number) => string) =>
      trimProposal(s.messages, seqs, s.plan, s.dialect, s.tokens, (m) => s.counter.count(m), s.previousLedger, {
        targetTokens: target,
        requestChars: deps.ledger.requestChars,
        ledgerBudget: (dropped) => budgetOf(s, deps, dropped),
        prose,
      });
    // The previous summary's prose stays when the head still fits with it.
    const proposal = (previous ? trimmed(withPrevious) : undefined) ?? trimmed(note);
    if (!proposal) {
      return { passed: `dropping every group it may drop does not bring the head${target === undefined ? '' : ` to ${target} tokens`}` };
    }
    const dropped = proposal.replaced.length;
    return { proposal, usage: {}, note: `trim rung: the ${dropped} oldest message(s) dropped, their ledger kept in the summary` };
  },
};

/** Cheapest first (the provider's own compaction before our summary); the trim last. */
export const RUNGS: readonly Rung[] = [masking, native, summary, trim];

/** Why a rung the lineage may not use passes (src/activities/compaction/rung-setting.ts). */
export const NOT_ENABLED = 'not enabled for this lineage';

const addUsage = (a: SummariserUsage, b: SummariserUsage = {}): SummariserUsage => {
  const sum = (x?: number, y?: number) => (x === undefined && y === undefined ? undefined : (x ?? 0) + (y ?? 0));
  const out: SummariserUsage = {};
  for (const key of ['promptTokens', 'completionTokens', 'cachedPromptTokens'] as const) {
    const value = sum(a[key], b[key]);
    if (value !== undefined) out[key] = value;
  }
  if (a.cost || b.cost) out.cost = addCosts(a.cost ?? NO_COST, b.cost ?? NO_COST);
  return out;
};

/**
 * The first rung's proposal (or refusal). What the rungs that passed paid for is added to its
 * usage, and why they passed goes with it (`passedRungs`, the audit row's `passed_rungs`).
 * When every rung passed: the head one of them left behind (for the gates to refuse), or a
 * refusal with every rung's reason. What each rung that ran was billed goes into `costs`, by
 * rung name (a rung that is not enabled did not run).
 */
export async function propose(step: RungStep, rungs: readonly Rung[] = RUNGS, costs: RungCosts = {}): Promise<Exclude<RungResult, Passed | undefined>> {
  const passed: string[] = [];
  const passedRungs: PassedRungs = {};
  let paid: SummariserUsage = {};
  let leftBehind: Proposed | undefined;
  for (const rung of rungs) {
    const result = await rung.propose(step);
    if (result === undefined) continue;
    if (!('passed' in result && result.passed === NOT_ENABLED)) costs[rung.name] = ('usage' in result ? result.usage?.cost : undefined) ?? NO_COST;
    if ('passed' in result) {
      passed.push(`${rung.name}: ${result.passed}`);
      passedRungs[rung.name] = result.passed;
      paid = addUsage(paid, result.usage);
      leftBehind = result.leftBehind ?? leftBehind;
      continue;
    }
    if (passed.length === 0) return result;
    const usage = addUsage(paid, result.usage);
    return { ...result, usage, passedRungs };
  }
  if (leftBehind) return { ...leftBehind, passedRungs };
  if (passed.length > 0) return { refusal: `no rung could bring the head under its target (${passed.join('; ')})`, usage: paid, passedRungs };
  throw new Error(`no rung proposed a head (rungs: ${rungs.map((r) => r.name).join(', ')}); the last rung must always propose or refuse`);
}
