/**
 * Chat messages in the OpenAI chat-completions format (the `openai-chat` dialect), and the
 * summary marker every dialect reserves. Plain data: safe to import from workflow code. The
 * logic of each dialect lives in ./dialects.
 */

import type { JsonValue } from './json';

export type MessageRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

export type TextContentPart = {
  type: 'text';
  text: string;
};

/** Non-text parts (images, audio, files) are kept as given; only their text counts. */
export type OtherContentPart = {
  type: string;
  [key: string]: JsonValue;
};

export type ContentPart = TextContentPart | OtherContentPart;

type ToolCall = {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
};

/** An openai-chat message; any other field an SDK or gateway adds is kept as it came. */
export type ChatMessage = {
  role: MessageRole;
  content: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
};

/**
 * The `name` that marks an openai-chat message as a compaction summary written by this
 * service. It is reserved: an append that uses it, or whose text starts with SUMMARY_PREFIX
 * (in any dialect), is refused (InvalidInputError), so no message a user appended can pose
 * as a summary.
 */
export const SUMMARY_MESSAGE_NAME = 'context_summary';
export const SUMMARY_PREFIX = '[CONTEXT SUMMARY: reference only, written by session-compaction]';
