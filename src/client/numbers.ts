/**
 * Strict parsing of the numbers a user types (the `sessions` flags, the inspector's query
 * parameters) and the range check of the numbers the library takes. Only plain decimal digits
 * are a number: `0x10`, `1e3`, `1.5`, ` 5`, `+5` and the empty string are refused, where
 * `Number()` would take most of them. Every value must fit a Postgres `integer` (the columns
 * these numbers end up in), so a refusal is a typed InvalidInputError naming the field, never
 * a database error. Pure: no I/O.
 */
import { InvalidInputError } from '../errors';

/** The largest Postgres `integer` (and the longest delay a Node timer takes, in ms). */
export const MAX_INT32 = 2_147_483_647;

export interface WholeNumberRange {
  /** Smallest value taken; default 1. */
  min?: number;
  /** Largest value taken; default MAX_INT32. */
  max?: number;
}

const DECIMAL = /^[0-9]+$/;
const PERCENT = /^([0-9]+(?:\.[0-9]+)?)%$/;

/** The refused value as it appears in a message: short, quoted when a string. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return value === null ? 'null' : typeof value;
}

/**
 * `value` as a whole number in `min..max` (default 1..MAX_INT32). A string must be plain
 * decimal digits; a number must be a safe integer. Anything else: InvalidInputError(field).
 */
export function parseWholeNumber(value: unknown, field: string, range: WholeNumberRange = {}): number {
  const { min = 1, max = MAX_INT32 } = range;
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) throw new RangeError(`bad range ${min}..${max} for ${field}`);
  const expected = `must be a whole number from ${min} to ${max}`;
  let number: number;
  if (typeof value === 'number') number = value;
  else if (typeof value === 'string' && DECIMAL.test(value)) number = Number(value);
  else throw new InvalidInputError(field, `${expected}, got ${shown(value)}`);
  if (!Number.isSafeInteger(number) || number < min || number > max) throw new InvalidInputError(field, `${expected}, got ${shown(value)}`);
  return number === 0 ? 0 : number; // never -0
}

/**
 * A compaction threshold (`compactAt`, `--compact-at`): tokens (a whole number,
 * 1..MAX_INT32, as a number or plain digits) or a share of the context window, `N%` with
 * 0 < N <= 100 (N may have decimals: `12.5%`). The one parser of thresholds: the CLI's flag
 * and createSession's option (src/client/thresholds.ts) both go through it.
 */
export function parseCompactAt(value: unknown, field = '--compact-at'): number | `${number}%` {
  const percent = typeof value === 'string' ? PERCENT.exec(value) : null;
  if (percent) {
    const share = Number(percent[1]);
    if (!(share > 0 && share <= 100)) throw new InvalidInputError(field, `a percentage must be above 0 and at most 100, got ${shown(value)}`);
    return `${share}%`;
  }
  const tokens = typeof value === 'number' ? value : typeof value === 'string' && DECIMAL.test(value) ? Number(value) : Number.NaN;
  if (Number.isSafeInteger(tokens) && tokens >= 1 && tokens <= MAX_INT32) return tokens;
  throw new InvalidInputError(field, `must be a whole number of tokens from 1 to ${MAX_INT32} or a percentage such as 80%, got ${shown(value)}`);
}

/** The longest `--timeout` in seconds: its milliseconds must fit a Node timer. */
export const MAX_TIMEOUT_SECONDS = Math.floor(MAX_INT32 / 1000);

/** `--timeout SECONDS` (whole seconds, 1..MAX_TIMEOUT_SECONDS) as milliseconds. */
export function parseTimeoutSeconds(value: unknown, field = '--timeout'): number {
  return parseWholeNumber(value, field, { min: 1, max: MAX_TIMEOUT_SECONDS }) * 1000;
}
