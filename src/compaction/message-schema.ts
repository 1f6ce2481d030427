/**
 * Validation of messages a caller sends, before anything is written. Not for workflow code
 * (messages never pass through it).
 */
import { z } from 'zod';
import { InvalidInputError } from '../errors';
import { type ChatMessage, SUMMARY_MESSAGE_NAME, SUMMARY_PREFIX, textOf } from './messages';

export interface MessageLimits {
  /** Characters of text (content plus tool-call arguments) in one message. */
  maxMessageChars: number;
  /** Messages in one append. */
  maxBatchMessages: number;
  /** Characters of text in one append. */
  maxBatchChars: number;
}

export const DEFAULT_MESSAGE_LIMITS: MessageLimits = {
  maxMessageChars: 200_000,
  maxBatchMessages: 1_000,
  maxBatchChars: 2_000_000,
};

const contentPart = z.union([
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.looseObject({
    type: z
      .string()
      .min(1)
      .refine((t) => t !== 'text', 'a text part needs a string text'),
  }),
]);

const toolCall = z.strictObject({
  id: z.string().min(1).max(200),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string().min(1).max(200), arguments: z.string() }),
});

const content = z.union([z.string(), z.array(contentPart).min(1), z.null()]);

const message = z
  .strictObject({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
    content,
    tool_calls: z.array(toolCall).min(1).optional(),
    tool_call_id: z.string().min(1).max(200).optional(),
    name: z.string().min(1).max(200).optional(),
  })
  .superRefine((m, ctx) => {
    if (m.role === 'tool' && !m.tool_call_id) ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'is required on tool messages' });
    if (m.role !== 'tool' && m.tool_call_id) ctx.addIssue({ code: 'custom', path: ['tool_call_id'], message: 'is only allowed on tool messages' });
    if (m.tool_calls && m.role !== 'assistant') ctx.addIssue({ code: 'custom', path: ['tool_calls'], message: 'are only allowed on assistant messages' });
    if (m.content === null && !m.tool_calls)
      ctx.addIssue({ code: 'custom', path: ['content'], message: 'may be null only on an assistant message with tool_calls' });
  });

function fieldPath(prefix: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : `${acc}.${String(key)}`), prefix);
}

/** Postgres text and jsonb cannot hold U+0000 or unpaired surrogates; reject them up front. */
function findUnstorableString(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return path;
    if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) return path;
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableString(value[i], `${path}[${i}]`);
      if (found) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const found = findUnstorableString(inner, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

function charsOf(m: ChatMessage): number {
  let n = typeof m.content === 'string' ? m.content.length : JSON.stringify(m.content ?? '').length;
  for (const c of m.tool_calls ?? []) n += c.function.arguments.length;
  return n;
}

/** Validates one append batch as a whole: any bad message rejects all of them. */
export function parseMessages(raw: unknown, limits: MessageLimits = DEFAULT_MESSAGE_LIMITS): ChatMessage[] {
  if (!Array.isArray(raw)) throw new InvalidInputError('messages', 'must be an array of chat messages');
  if (raw.length === 0) throw new InvalidInputError('messages', 'must hold at least one message');
  if (raw.length > limits.maxBatchMessages)
    throw new InvalidInputError('messages', `holds ${raw.length} messages; at most ${limits.maxBatchMessages} per append`);
  const parsed = z.array(message).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidInputError(fieldPath('messages', issue.path), issue.message);
  }
  let total = 0;
  parsed.data.forEach((m, i) => {
    const unstorable = findUnstorableString(m, `messages[${i}]`);
    if (unstorable) throw new InvalidInputError(unstorable, 'contains a NUL character or an unpaired surrogate');
    if (m.name === SUMMARY_MESSAGE_NAME)
      throw new InvalidInputError(`messages[${i}].name`, `"${SUMMARY_MESSAGE_NAME}" is reserved for the summaries this service writes`);
    if (
      textOf(m as ChatMessage)
        .trimStart()
        .startsWith(SUMMARY_PREFIX)
    ) {
      throw new InvalidInputError(
        `messages[${i}].content`,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes',
      );
    }
    const chars = charsOf(m as ChatMessage);
    if (chars > limits.maxMessageChars) throw new InvalidInputError(`messages[${i}]`, `is ${chars} characters; at most ${limits.maxMessageChars}`);
    total += chars;
  });
  if (total > limits.maxBatchChars) throw new InvalidInputError('messages', `total ${total} characters; at most ${limits.maxBatchChars} per append`);
  return parsed.data as ChatMessage[];
}
