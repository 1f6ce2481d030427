/** The benchmark's per-rung report (bench/rungs.ts), over audit rows written by hand. */
import { describe, expect, it } from 'vitest';
import { rungReport } from '../../bench/rungs';

const cost = (inputTokens: number, outputTokens: number, cacheReadTokens: number) => ({
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens: 0,
  calls: 1,
});

describe('rungReport', () => {
  it('counts compactions and tokens shed by the rung that answered, and tokens paid by every rung that ran', () => {
    const report = rungReport([
      {
        outcome: 'compacted',
        rung: 'summary',
        tokensBefore: 1000,
        tokensAfter: 200,
        costs: { masking: { ...cost(0, 0, 0), calls: 0 }, summary: cost(800, 100, 200) },
      },
      // The summary paid, then passed (over the window): the trim answered.
      {
        outcome: 'compacted',
        rung: 'trim',
        tokensBefore: 5000,
        tokensAfter: 2000,
        costs: { summary: cost(4000, 300, 0), trim: { ...cost(0, 0, 0), calls: 0 } },
      },
      { outcome: 'refused', rung: null, tokensBefore: 900, tokensAfter: null, costs: null },
    ]);
    expect(report).toEqual({
      masking: { compactions: 0, tokensShed: 0, tokensPaid: 0, cachedShare: null },
      summary: { compactions: 1, tokensShed: 800, tokensPaid: 5200, cachedShare: 0.042 },
      trim: { compactions: 1, tokensShed: 3000, tokensPaid: 0, cachedShare: null },
    });
  });
});
