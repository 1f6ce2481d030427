/** The dialects by name. Pure: safe for workflow code. */
import { InvalidInputError } from '../../errors';
import { aiSdk } from './ai-sdk';
import { anthropic } from './anthropic';
import { gemini } from './gemini';
import { openaiAgents } from './openai-agents';
import { openaiChat } from './openai-chat';
import { openaiResponses } from './openai-responses';
import { DEFAULT_DIALECT, DIALECT_NAMES, type Dialect, type DialectName } from './types';

export * from './types';

const DIALECTS: Record<DialectName, Dialect> = {
  'openai-chat': openaiChat,
  'openai-responses': openaiResponses,
  'openai-agents': openaiAgents,
  anthropic,
  gemini,
  'ai-sdk': aiSdk,
};

export const isDialectName = (value: unknown): value is DialectName => typeof value === 'string' && (DIALECT_NAMES as readonly string[]).includes(value);

/** The dialect of a lineage (`openai-chat` when none is named). */
export function dialectOf(name: string | null | undefined): Dialect {
  const key = name ?? DEFAULT_DIALECT;
  if (!isDialectName(key)) throw new InvalidInputError('dialect', `must be one of ${DIALECT_NAMES.join(', ')}`);
  return DIALECTS[key];
}
