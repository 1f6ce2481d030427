/** The auto-compaction threshold and context window createSession stores (src/client/thresholds.ts, parsed by parseCompactAt as the CLI's flag is): a table of what is taken and what is refused. */
import { describe, expect, it } from 'vitest';
import { resolveContextWindow, resolveThreshold } from '../../src/client/thresholds';
import { InvalidInputError } from '../../src/errors';

const NOT_A_THRESHOLD = 'invalid compactAt: must be a whole number of tokens from 1 to 2147483647 or a percentage such as 80%, got ';
const NOT_A_SHARE = 'invalid compactAt: a percentage must be above 0 and at most 100, got ';

describe('resolveThreshold', () => {
  it.each<[number | string | undefined, number | undefined, number | undefined]>([
    [undefined, undefined, undefined],
    [undefined, 128_000, undefined],
    [1, undefined, 1],
    [50_000, undefined, 50_000],
    [2_147_483_647, undefined, 2_147_483_647],
    ['50000', undefined, 50_000],
    [' 7 ', undefined, 7],
    ['80%', 128_000, 102_400],
    [' 80% ', 128_000, 102_400],
    ['12.5%', 1000, 125],
    ['100%', 1000, 1000],
    ['0.001%', 1000, 1],
    ['33%', 10, 3],
  ])('takes %j (window %j) as %j tokens', (compactAt, contextWindow, tokens) => {
    expect(resolveThreshold(compactAt, contextWindow)).toBe(tokens);
  });

  it.each<[unknown, number | undefined, string]>([
    [0, undefined, NOT_A_THRESHOLD],
    [-5, undefined, NOT_A_THRESHOLD],
    [1.5, undefined, NOT_A_THRESHOLD],
    [2_147_483_648, undefined, NOT_A_THRESHOLD],
    [Number.NaN, undefined, NOT_A_THRESHOLD],
    ['0', undefined, NOT_A_THRESHOLD],
    ['2147483648', undefined, NOT_A_THRESHOLD],
    ['1e3', undefined, NOT_A_THRESHOLD],
    ['', undefined, NOT_A_THRESHOLD],
    ['80 %', 1000, NOT_A_THRESHOLD],
    ['-5%', 1000, NOT_A_THRESHOLD],
    [null, undefined, NOT_A_THRESHOLD],
    ['0%', 1000, NOT_A_SHARE],
    ['100.5%', 1000, NOT_A_SHARE],
    ['80%', undefined, 'invalid compactAt: a percentage needs the context window: pass contextWindow, or a model whose window is known'],
  ])('refuses %j (window %j): %s', (compactAt, contextWindow, message) => {
    const refusal = (() => {
      try {
        resolveThreshold(compactAt as string, contextWindow);
      } catch (error) {
        return error;
      }
      throw new Error(`${JSON.stringify(compactAt)} was taken`);
    })();
    expect(refusal).toBeInstanceOf(InvalidInputError);
    expect((refusal as InvalidInputError).field).toBe('compactAt');
    // The CLI's messages (parseCompactAt), which end with what was given.
    expect((refusal as Error).message.startsWith(message)).toBe(true);
  });
});

describe('resolveContextWindow', () => {
  it.each<[number | undefined, string | undefined, number | undefined]>([
    [undefined, undefined, undefined],
    [undefined, 'no-such-model', undefined],
    [undefined, 'gpt-4o', 128_000],
    [undefined, 'openai/gpt-4o-mini', 128_000],
    [32_000, 'gpt-4o', 32_000],
    [1, undefined, 1],
    [2_147_483_647, undefined, 2_147_483_647],
  ])('takes window %j of model %j as %j', (contextWindow, model, window) => {
    expect(resolveContextWindow(contextWindow, model)).toBe(window);
  });

  it.each([0, -1, 1.5, 2_147_483_648, Number.POSITIVE_INFINITY])('refuses window %j', (contextWindow) => {
    expect(() => resolveContextWindow(contextWindow, 'gpt-4o')).toThrow(new InvalidInputError('contextWindow', 'must be a whole number from 1 to 2147483647'));
  });
});
