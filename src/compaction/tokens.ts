import { type ChatMessage, textOf } from './messages';

/** Per-message framing overhead that chat APIs add (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** A common approximation for English text and code: about four characters per token. */
const CHARS_PER_TOKEN = 4;

/** Every piece of text of a message that a provider counts: content, tool calls, ids, name. */
export function messageTexts(message: ChatMessage): string[] {
  const texts = [textOf(message)];
  for (const call of message.tool_calls ?? []) texts.push(call.function.name, call.function.arguments, call.id);
  if (message.tool_call_id) texts.push(message.tool_call_id);
  if (message.name) texts.push(message.name);
  return texts;
}

/**
 * A cheap, deterministic token estimate: the fallback for models without a known tokenizer
 * (see ./token-counter). It only needs to be monotonic in the text's size.
 */
export function estimateTokens(message: ChatMessage): number {
  let chars = 0;
  for (const text of messageTexts(message)) chars += text.length;
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(chars / CHARS_PER_TOKEN);
}

export function estimateTranscriptTokens(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateTokens(m);
  return total;
}

/** Rough tokens of a piece of prompt text (for the summariser's input budget). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 3);
}
