/** Strict parsing of typed numbers (src/client/numbers.ts): a table of what is taken and what is refused. */
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../src/errors';
import { MAX_INT32, MAX_TIMEOUT_SECONDS, parseCompactAt, parseTimeoutSeconds, parseWholeNumber } from '../../src/client/numbers';

function refusal(parse: () => unknown): InvalidInputError {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError, got a value');
}

describe('parseWholeNumber', () => {
  it('is 2^31 - 1 at most by default, a Postgres integer', () => {
    expect(MAX_INT32).toBe(2 ** 31 - 1);
  });

  it.each([
    ['1', 1],
    ['42', 42],
    ['007', 7],
    ['2147483647', MAX_INT32],
    [1, 1],
    [MAX_INT32, MAX_INT32],
  ])('takes %j as %d', (value, expected) => {
    expect(parseWholeNumber(value, '--limit')).toBe(expected);
  });

  it.each([
    '0x10',
    '1e3',
    '1.5',
    '1.0',
    '',
    ' ',
    ' 5',
    '5 ',
    '+5',
    '-5',
    '0',
    '99999999999',
    '2147483648',
    '9'.repeat(400),
    'Infinity',
    'NaN',
    '١٢', // Arabic-Indic digits: \d in some engines, never here
    '5%',
    '1_000',
    '0b1',
    '0o7',
    0,
    -1,
    1.5,
    2 ** 31,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    null,
    undefined,
    true,
    {},
  ])('refuses %j with InvalidInputError naming the field', (value) => {
    const error = refusal(() => parseWholeNumber(value, '--context-window'));
    expect(error.field).toBe('--context-window');
    expect(error.message).toMatch(/^invalid --context-window: must be a whole number from 1 to 2147483647, got /);
  });

  it('takes a range of its own, and never returns -0', () => {
    expect(parseWholeNumber('0', 'n', { min: 0, max: 10 })).toBe(0);
    expect(Object.is(parseWholeNumber(-0, 'n', { min: 0, max: 10 }), 0)).toBe(true);
    expect(parseWholeNumber('10', 'n', { min: 0, max: 10 })).toBe(10);
    expect(refusal(() => parseWholeNumber('11', 'n', { min: 0, max: 10 })).message).toBe('invalid n: must be a whole number from 0 to 10, got "11"');
    expect(() => parseWholeNumber('1', 'n', { min: 5, max: 1 })).toThrow(RangeError);
  });

  it('shows a long refused value cut short', () => {
    expect(refusal(() => parseWholeNumber('x'.repeat(100), 'n')).message).toBe(
      `invalid n: must be a whole number from 1 to 2147483647, got "${'x'.repeat(40)}…"`,
    );
  });
});

describe('parseCompactAt', () => {
  it.each([
    ['300', 300],
    ['2147483647', MAX_INT32],
    ['80%', '80%'],
    ['100%', '100%'],
    ['0.5%', '0.5%'],
    ['12.50%', '12.5%'],
    ['080%', '80%'],
  ])('takes %j as %j', (value, expected) => {
    expect(parseCompactAt(value)).toBe(expected);
  });

  it.each(['0%', '0.0%', '100.5%', '101%', '1e2%', '%', '.5%', '5.%', ' 80%', '80 %', '-5%', '0x10', '1e3', '1.5', '', '0', '99999999999', 'eighty'])(
    'refuses %j naming --compact-at',
    (value) => {
      const error = refusal(() => parseCompactAt(value));
      expect(error.field).toBe('--compact-at');
      expect(error.message).toMatch(/^invalid --compact-at: /);
    },
  );

  it('says what a percentage must be', () => {
    expect(refusal(() => parseCompactAt('150%')).message).toBe('invalid --compact-at: a percentage must be above 0 and at most 100, got "150%"');
    expect(refusal(() => parseCompactAt('1e3')).message).toBe(
      'invalid --compact-at: must be a whole number of tokens from 1 to 2147483647 or a percentage such as 80%, got "1e3"',
    );
  });
});

describe('parseTimeoutSeconds', () => {
  it('takes whole seconds whose milliseconds fit a Node timer', () => {
    expect(parseTimeoutSeconds('30')).toBe(30_000);
    expect(parseTimeoutSeconds(String(MAX_TIMEOUT_SECONDS))).toBe(MAX_TIMEOUT_SECONDS * 1000);
    expect(MAX_TIMEOUT_SECONDS * 1000).toBeLessThanOrEqual(MAX_INT32);
  });

  it.each(['0', '0.5', '1e3', '', String(MAX_TIMEOUT_SECONDS + 1), '-1'])('refuses %j naming --timeout', (value) => {
    expect(refusal(() => parseTimeoutSeconds(value)).field).toBe('--timeout');
  });
});
