import { describe, expect, it } from 'vitest';
import { ledgerBudget } from '../../src/compaction/ledger';
import { maskingTarget } from '../../src/compaction/masking';

describe('maskingTarget', () => {
  it('takes its share of the threshold when the lineage has one', () => {
    expect(maskingTarget({ compactAtTokens: 10_000, contextWindow: 200_000 }, 50)).toBe(5_000);
  });
  it('falls back to the context window without a threshold', () => {
    expect(maskingTarget({ compactAtTokens: null, contextWindow: 8_001 }, 50)).toBe(4_000);
  });
  it('has no target when the lineage has neither', () => {
    expect(maskingTarget({ compactAtTokens: null, contextWindow: null }, 50)).toBeUndefined();
  });
});

describe('ledgerBudget', () => {
  const bound = { percent: 10, maxTokens: 3_000 };
  it('is the share of the context window when that is the smallest bound', () => {
    expect(ledgerBudget(20_000, bound, 10_000, 10_000)).toBe(2_000);
  });
  it('is at most maxTokens', () => {
    expect(ledgerBudget(1_000_000, bound, 10_000, 10_000)).toBe(3_000);
  });
  it('uses maxTokens when the context window is unknown', () => {
    expect(ledgerBudget(null, bound, 10_000, 10_000)).toBe(3_000);
  });
  it('grows a head by at most half of the tokens it summarises over the previous ledger', () => {
    expect(ledgerBudget(null, bound, 100, 1_001)).toBe(600);
    expect(ledgerBudget(null, bound, 0, 0)).toBe(0);
  });
});
