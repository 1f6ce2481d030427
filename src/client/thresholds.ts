/**
 * A lineage's auto-compaction threshold in tokens, from what createSession is given: a
 * number of tokens, or a percentage of the model's context window (`'80%'`), which is the
 * caller's `contextWindow` or the one known for the model. Pure: refusals are InvalidInputError.
 */
import { contextWindowOf } from '../compaction/token-counter';
import { InvalidInputError } from '../errors';
import { MAX_INT32, parseCompactAt } from './numbers';

/** The largest token count: the thresholds and windows are Postgres `integer` columns. */
const MAX_TOKENS = MAX_INT32;

/** The context window of the lineage: the caller's, or the model's when it is known; undefined when neither is. */
export function resolveContextWindow(contextWindow: number | undefined, model: string | undefined): number | undefined {
  const window = contextWindow ?? contextWindowOf(model);
  if (window !== undefined && (!Number.isInteger(window) || window < 1 || window > MAX_TOKENS)) {
    throw new InvalidInputError('contextWindow', `must be a whole number from 1 to ${MAX_TOKENS}`);
  }
  return window;
}

/**
 * Turns `compactAt` (tokens, or a percentage of the context window, parsed by
 * parseCompactAt; surrounding spaces are allowed) into tokens; undefined: no threshold.
 */
export function resolveThreshold(compactAt: number | string | undefined, contextWindow: number | undefined): number | undefined {
  if (compactAt === undefined) return undefined;
  const threshold = parseCompactAt(typeof compactAt === 'string' ? compactAt.trim() : compactAt, 'compactAt');
  if (typeof threshold === 'number') return threshold;
  if (contextWindow === undefined) {
    throw new InvalidInputError('compactAt', 'a percentage needs the context window: pass contextWindow, or a model whose window is known');
  }
  return Math.max(1, Math.floor((contextWindow * Number(threshold.slice(0, -1))) / 100));
}
