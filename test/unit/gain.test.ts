/**
 * The minimum-gain formula (src/compaction/gain.ts; docs/compaction.md, "What a compaction
 * costs"), by hand: the saving over the next turns, the summariser's bill and the prompt cache
 * the compaction invalidates.
 */
import { describe, expect, it } from 'vitest';
import { addCosts, DEFAULT_GAIN_POLICY, estimateGain, minGainReason, minimumGain, NO_COST, SUMMARY_TOKENS_ESTIMATE } from '../../src/compaction/gain';

const policy = { turns: 10, cacheReadRatio: 0.1, cacheWriteRatio: 1.25, outputRatio: 4 };

describe('minimumGain', () => {
  it('computes saving, cost, cache invalidated and net as documented', () => {
    const f = minimumGain({ tokensBefore: 100_000, tokensAfter: 20_000, costInputTokens: 80_000, costOutputTokens: 2_000 }, policy, true);
    // 10 × 0.1 × 80 000; 80 000 + 4 × 2 000; (1.25 − 0.1) × 20 000
    expect(f).toEqual({
      turns: 10,
      tokensBefore: 100_000,
      tokensAfter: 20_000,
      expectedSaving: 80_000,
      cost: 88_000,
      cacheInvalidated: 23_000,
      net: -31_000,
      declined: true,
      estimated: true,
    });
    expect(minGainReason(f)).toMatch(/^min_gain: over 10 turn\(s\) it would save 80000 token-equivalents, less than it costs \(88000 .* 23000 /);
  });

  it('pays over more turns', () => {
    const f = minimumGain({ tokensBefore: 100_000, tokensAfter: 20_000, costInputTokens: 80_000, costOutputTokens: 2_000 }, { ...policy, turns: 20 }, false);
    expect(f.net).toBe(160_000 - 88_000 - 23_000);
    expect(f.declined).toBe(false);
  });

  it('a rung without a summariser pays only the cache', () => {
    const f = minimumGain({ tokensBefore: 10_000, tokensAfter: 9_900, costInputTokens: 0, costOutputTokens: 0 }, policy, false);
    expect(f.cost).toBe(0);
    expect(f.expectedSaving).toBe(100);
    expect(f.cacheInvalidated).toBe(11_385);
    expect(f.declined).toBe(true);
  });

  it('never declines a head at or over the context window', () => {
    const f = minimumGain({ tokensBefore: 8_000, tokensAfter: 7_000, costInputTokens: 7_000, costOutputTokens: 500, contextWindow: 8_000 }, policy, true);
    expect(f.net).toBeLessThan(0);
    expect(f.declined).toBe(false);
  });

  it('without a prompt cache (every ratio 1) the saving is the tokens shed per turn', () => {
    const f = minimumGain(
      { tokensBefore: 5_000, tokensAfter: 1_000, costInputTokens: 4_000, costOutputTokens: 500 },
      { turns: 3, cacheReadRatio: 1, cacheWriteRatio: 1, outputRatio: 1 },
      false,
    );
    expect(f).toMatchObject({ expectedSaving: 12_000, cacheInvalidated: 0, cost: 4_500, net: 7_500, declined: false });
  });

  it('the guard is off by default', () => {
    expect(DEFAULT_GAIN_POLICY.turns).toBe(0);
  });
});

describe('estimateGain (before any rung pays)', () => {
  it('replaces the middle by a summary of the estimated size, read and written by the summariser', () => {
    const f = estimateGain({ tokensBefore: 50_000, middleTokens: 40_000, summarises: true }, policy);
    expect(f.tokensAfter).toBe(10_000 + SUMMARY_TOKENS_ESTIMATE);
    expect(f.cost).toBe(40_000 + 4 * SUMMARY_TOKENS_ESTIMATE);
    expect(f.estimated).toBe(true);
  });

  it('a middle smaller than the estimate is its own summary size; a lineage without the summary rung pays no summariser', () => {
    const f = estimateGain({ tokensBefore: 3_000, middleTokens: 1_000, summarises: false }, policy);
    expect(f.tokensAfter).toBe(3_000);
    expect(f.cost).toBe(0);
  });
});

describe('addCosts', () => {
  it('sums every field and keeps the iterations of both', () => {
    const a = {
      inputTokens: 10,
      outputTokens: 2,
      cacheReadTokens: 5,
      cacheWriteTokens: 1,
      calls: 1,
      iterations: [{ type: 'compaction', inputTokens: 10, outputTokens: 2, cacheReadTokens: 5, cacheWriteTokens: 1 }],
    };
    expect(addCosts(a, NO_COST)).toEqual(a);
    expect(addCosts(a, a)).toMatchObject({ inputTokens: 20, outputTokens: 4, cacheReadTokens: 10, cacheWriteTokens: 2, calls: 2 });
    expect(addCosts(a, a).iterations).toHaveLength(2);
    expect(addCosts(NO_COST, NO_COST)).not.toHaveProperty('iterations');
  });
});
