import type { Dialect, Message } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';

/** Per-message framing overhead that chat APIs add (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** A common approximation for English text and code: about four characters per token. */
const CHARS_PER_TOKEN = 4;

/**
 * A cheap, deterministic token estimate: the fallback for models without a known tokenizer
 * (see ./token-counter). It only needs to be monotonic in the text's size. The SQL function
 * sc_estimate_message_tokens computes the same number, so every client stores the same
 * estimate: openai-chat counts its texts (content, tool calls, ids, name); other dialects
 * count every string value of the message.
 */
export function estimateTokens(message: Message, dialect: Dialect = openaiChat): number {
  let chars = 0;
  for (const text of dialect.estimateTexts(message)) chars += text.length;
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(chars / CHARS_PER_TOKEN);
}

export function estimateTranscriptTokens(messages: readonly Message[], dialect: Dialect = openaiChat): number {
  let total = 0;
  for (const m of messages) total += estimateTokens(m, dialect);
  return total;
}

/** Rough tokens of a piece of prompt text (for the summariser's input budget). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 3);
}
