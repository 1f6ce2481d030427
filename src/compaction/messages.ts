/**
 * Chat messages in the OpenAI chat-completions format, as stored and returned by the
 * service. This module is plain data and pure functions: it is safe to import from
 * workflow code.
 */

export type MessageRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export interface TextContentPart {
  type: 'text';
  text: string;
}

/** Non-text parts (images, audio, files) are kept as given; only their text counts. */
export interface OtherContentPart {
  type: string;
  [key: string]: unknown;
}

export type ContentPart = TextContentPart | OtherContentPart;

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: MessageRole;
  content: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
}

/**
 * The `name` that marks a message as a compaction summary written by this service. It is
 * reserved: an append that uses it, or whose text starts with SUMMARY_PREFIX, is refused
 * (InvalidInputError), so no message a user appended can pose as a summary.
 */
export const SUMMARY_MESSAGE_NAME = 'context_summary';
export const SUMMARY_PREFIX = '[CONTEXT SUMMARY: reference only, written by session-compaction]';

export function textOf(message: Pick<ChatMessage, 'content'>): string {
  const { content } = message;
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
}

export function isSummaryMessage(message: ChatMessage): boolean {
  return message.name === SUMMARY_MESSAGE_NAME && textOf(message).startsWith(SUMMARY_PREFIX);
}

/** A user message written by a person (or calling service), not a summary or a note of ours. */
export function isRealUserMessage(message: ChatMessage): boolean {
  return message.role === 'user' && !isSummaryMessage(message) && textOf(message).trim().length > 0;
}

/** Position of the last real user message: the request the agent is working on (-1: none). */
export function latestUserRequestIndex(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (isRealUserMessage(messages[i])) return i;
  return -1;
}

export function isInstructionMessage(message: ChatMessage): boolean {
  return message.role === 'system' || message.role === 'developer';
}
