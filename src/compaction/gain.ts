/**
 * What a compaction costs and whether it pays (issue 37 §4), pure: the tokens a rung was billed
 * (RungCost, the audit row's `costs`), and the minimum-gain guard's formula (docs/compaction.md,
 * "What a compaction costs"). Every figure is in input-token equivalents: one uncached input
 * token of the agent's model is 1.
 */

/**
 * The tokens one rung was billed, over all its calls. `inputTokens` is every input token the
 * requests held, cached or not (OpenAI's prompt_tokens; Anthropic's input_tokens plus its cache
 * reads and writes); `cacheReadTokens` of those were served from the prompt cache and
 * `cacheWriteTokens` written to it. `iterations`: the provider's per-step usage, where it
 * reports it so (Anthropic usage.iterations), as it reported it.
 */
export interface RungCost {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** LLM calls billed (0 for a rung that calls none). */
  calls: number;
  iterations?: UsageIteration[];
}

/** One step of a provider's usage.iterations (Anthropic), in RungCost's names. */
interface UsageIteration {
  type?: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

export const NO_COST: RungCost = Object.freeze({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0 });

/** Two costs summed (the iterations of both kept). */
export function addCosts(a: RungCost, b: RungCost): RungCost {
  const iterations = [...(a.iterations ?? []), ...(b.iterations ?? [])];
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    calls: a.calls + b.calls,
    ...(iterations.length > 0 ? { iterations } : {}),
  };
}

/** The guard's settings (COMPACTION_MIN_GAIN_*, src/config.ts). */
export interface GainPolicy {
  /** The turns a compaction must repay its cost within; 0 turns the guard off. */
  turns: number;
  /** What a cached input token costs, as a share of an uncached one (0.1: Anthropic's and OpenAI's cache reads). */
  cacheReadRatio: number;
  /** What writing an input token to the cache costs, as a share of an uncached one (1.25: Anthropic's 5-minute cache; 1 where writes are free). */
  cacheWriteRatio: number;
  /** What an output token of the summariser costs, as a share of an uncached input token (4 to 5 for most models). */
  outputRatio: number;
}

export const DEFAULT_GAIN_POLICY: GainPolicy = Object.freeze({ turns: 0, cacheReadRatio: 0.1, cacheWriteRatio: 1.25, outputRatio: 4 });

/** What the guard judges: the head now and after, and what the compaction would pay for. */
export interface GainInput {
  /** The head's tokens now (its prefix is in the agent's prompt cache). */
  tokensBefore: number;
  /** The head's tokens after the compaction (an estimate before the summary is paid for). */
  tokensAfter: number;
  /** The compaction's own bill: the summariser's input and output tokens (0 for a rung without a call). */
  costInputTokens: number;
  costOutputTokens: number;
  /** The model's context window: a head at or above it is never declined (it cannot go on without a compaction). */
  contextWindow?: number | null;
}

/** The guard's figures, as the audit row's `gain` holds them. */
export interface GainFigures {
  turns: number;
  tokensBefore: number;
  tokensAfter: number;
  /** Over `turns` turns, each reading the head from the cache: turns × cacheReadRatio × (tokensBefore − tokensAfter). */
  expectedSaving: number;
  /** The summariser's bill: costInputTokens + outputRatio × costOutputTokens. */
  cost: number;
  /** The cache the compaction invalidates: the first turn after it writes the new head (cacheWriteRatio) instead of reading one (cacheReadRatio): tokensAfter × (cacheWriteRatio − cacheReadRatio). */
  cacheInvalidated: number;
  /** expectedSaving − cost − cacheInvalidated. */
  net: number;
  /** True when the guard declines: net < 0 and the head is under the context window. */
  declined: boolean;
  /** True when tokensAfter and the cost were estimated before paying for a summary. */
  estimated: boolean;
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * The minimum-gain formula. Over the next `turns` turns the agent sends the head each turn;
 * without a compaction it reads `tokensBefore` from its prompt cache each time, with one it
 * writes `tokensAfter` once and reads it `turns − 1` times:
 *
 *   keep    = turns × r × before
 *   compact = w × after + (turns − 1) × r × after + cost
 *   net     = keep − compact = turns × r × (before − after) − (w − r) × after − cost
 *
 * The compaction is declined when net < 0, unless the head is at or above the context window.
 */
export function minimumGain(input: GainInput, policy: GainPolicy, estimated: boolean): GainFigures {
  const { turns, cacheReadRatio: r, cacheWriteRatio: w, outputRatio } = policy;
  const expectedSaving = turns * r * (input.tokensBefore - input.tokensAfter);
  const cost = input.costInputTokens + outputRatio * input.costOutputTokens;
  const cacheInvalidated = Math.max(0, w - r) * input.tokensAfter;
  const net = expectedSaving - cost - cacheInvalidated;
  const overWindow = input.contextWindow != null && input.tokensBefore >= input.contextWindow;
  return {
    turns,
    tokensBefore: input.tokensBefore,
    tokensAfter: input.tokensAfter,
    expectedSaving: round(expectedSaving),
    cost: round(cost),
    cacheInvalidated: round(cacheInvalidated),
    net: round(net),
    declined: net < 0 && !overWindow,
    estimated,
  };
}

/** The reason a declined compaction is refused with (classified: it starts with `min_gain`). */
export function minGainReason(f: GainFigures): string {
  return (
    `min_gain: over ${f.turns} turn(s) it would save ${f.expectedSaving} token-equivalents, less than it costs ` +
    `(${f.cost} for the summary and ${f.cacheInvalidated} of prompt cache invalidated)`
  );
}

/** The summary's size the guard assumes before one is paid for: this many tokens, at most the middle's. */
export const SUMMARY_TOKENS_ESTIMATE = 2048;

/**
 * The guard's figures before any rung runs (so a declined job pays for nothing): the middle
 * replaced by a summary of SUMMARY_TOKENS_ESTIMATE tokens, the summariser reading the whole
 * middle uncached and writing that summary. A lineage that may not use the summary rung pays
 * no summariser: its cost is the cache alone.
 */
export function estimateGain(
  head: { tokensBefore: number; middleTokens: number; summarises: boolean; contextWindow?: number | null },
  policy: GainPolicy,
): GainFigures {
  const summaryTokens = Math.min(head.middleTokens, SUMMARY_TOKENS_ESTIMATE);
  return minimumGain(
    {
      tokensBefore: head.tokensBefore,
      tokensAfter: Math.max(0, head.tokensBefore - head.middleTokens + summaryTokens),
      costInputTokens: head.summarises ? head.middleTokens : 0,
      costOutputTokens: head.summarises ? summaryTokens : 0,
      contextWindow: head.contextWindow,
    },
    policy,
    true,
  );
}
