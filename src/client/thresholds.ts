/**
 * A lineage's auto-compaction threshold in tokens, from what createSession is given: a
 * number of tokens, or a percentage of the model's context window (`'80%'`), which is the
 * caller's `contextWindow` or the one known for the model. Pure: refusals are InvalidInputError.
 */
import { contextWindowOf } from '../compaction/token-counter';
import { InvalidInputError } from '../errors';
import { MAX_INT32 } from './numbers';

/** The largest token count: the thresholds and windows are Postgres `integer` columns. */
const MAX_TOKENS = MAX_INT32;

const NOT_A_THRESHOLD = `must be a whole number of tokens from 1 to ${MAX_TOKENS} or a percentage such as "80%"`;

/** The context window of the lineage: the caller's, or the model's when it is known; undefined when neither is. */
export function resolveContextWindow(contextWindow: number | undefined, model: string | undefined): number | undefined {
  const window = contextWindow ?? contextWindowOf(model);
  if (window !== undefined && (!Number.isInteger(window) || window < 1 || window > MAX_TOKENS)) {
    throw new InvalidInputError('contextWindow', `must be a whole number from 1 to ${MAX_TOKENS}`);
  }
  return window;
}

/** Turns `compactAt` (tokens, or a percentage of the context window) into tokens; undefined: no threshold. */
export function resolveThreshold(compactAt: number | string | undefined, contextWindow: number | undefined): number | undefined {
  if (compactAt === undefined) return undefined;
  if (typeof compactAt === 'number') {
    if (!Number.isInteger(compactAt) || compactAt < 1 || compactAt > MAX_TOKENS) throw new InvalidInputError('compactAt', NOT_A_THRESHOLD);
    return compactAt;
  }
  const match = /^(\d+(?:\.\d+)?)%$/.exec(typeof compactAt === 'string' ? compactAt.trim() : '');
  if (!match) {
    const tokens = Number(compactAt);
    if (typeof compactAt === 'string' && /^\d+$/.test(compactAt.trim()) && tokens >= 1 && tokens <= MAX_TOKENS) return tokens;
    throw new InvalidInputError('compactAt', NOT_A_THRESHOLD);
  }
  const percent = Number(match[1]);
  if (percent <= 0 || percent > 100) throw new InvalidInputError('compactAt', 'a percentage must be above 0 and at most 100');
  if (contextWindow === undefined) {
    throw new InvalidInputError('compactAt', 'a percentage needs the context window: pass contextWindow, or a model whose window is known');
  }
  return Math.max(1, Math.floor((contextWindow * percent) / 100));
}
