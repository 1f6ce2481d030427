import { type ChatMessage, textOf } from './messages';

/** Per-message framing overhead that chat APIs add (role, separators). */
const MESSAGE_OVERHEAD_TOKENS = 4;
/** A common approximation for English text and code: about four characters per token. */
const CHARS_PER_TOKEN = 4;

/**
 * A cheap, deterministic token estimate. It is used to choose the tail, to decide whether a
 * candidate shrinks the transcript and for thresholds; it never needs to match a tokenizer
 * exactly, only to be monotonic in the text's size.
 */
export function estimateTokens(message: ChatMessage): number {
  let chars = textOf(message).length;
  for (const call of message.tool_calls ?? []) {
    chars += call.function.name.length + call.function.arguments.length + call.id.length;
  }
  if (message.tool_call_id) chars += message.tool_call_id.length;
  if (message.name) chars += message.name.length;
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(chars / CHARS_PER_TOKEN);
}

export function estimateTranscriptTokens(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateTokens(m);
  return total;
}
