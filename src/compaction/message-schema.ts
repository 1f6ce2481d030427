/**
 * Validation of messages a caller sends, before anything is written: the text rule (./text)
 * on every string and key, the dialect's structure, the reserved summary marker, and the size
 * limits. Not for workflow code (messages never pass through it). The SQL function
 * sc_check_batch checks the same structure for every other client.
 */
import { InvalidInputError } from '../errors';
import type { Dialect, Message } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import { codePointLength, findTextRuleViolation } from './text';

export interface MessageLimits {
  /** Characters (Unicode code points) of text in one message: every text a provider counts. */
  maxMessageChars: number;
  /** Messages in one append. */
  maxBatchMessages: number;
  /** Characters (code points) of text in one append. */
  maxBatchChars: number;
}

export const DEFAULT_MESSAGE_LIMITS: MessageLimits = {
  maxMessageChars: 200_000,
  maxBatchMessages: 1_000,
  maxBatchChars: 2_000_000,
};

const charsOf = (m: Message, dialect: Dialect) => dialect.texts(m).reduce((n, text) => n + codePointLength(text), 0);

/**
 * Validates one append batch as a whole: any bad message rejects all of them. Messages are
 * returned as given: fields the service does not know are kept, never dropped.
 */
export function parseMessages(raw: unknown, limits: MessageLimits = DEFAULT_MESSAGE_LIMITS, dialect: Dialect = openaiChat): Message[] {
  if (!Array.isArray(raw)) throw new InvalidInputError('messages', 'must be an array of messages');
  if (raw.length === 0) throw new InvalidInputError('messages', 'must hold at least one message');
  if (raw.length > limits.maxBatchMessages)
    throw new InvalidInputError('messages', `holds ${raw.length} messages; at most ${limits.maxBatchMessages} per append`);
  let total = 0;
  raw.forEach((m: unknown, i) => {
    const at = `messages[${i}]`;
    const unstorable = findTextRuleViolation(m, at);
    if (unstorable) throw new InvalidInputError(unstorable.field, unstorable.violation);
    const problem = dialect.check(m);
    if (problem)
      throw new InvalidInputError(
        problem.field === '' ? at : problem.field.startsWith('[') ? `${at}${problem.field}` : `${at}.${problem.field}`,
        problem.detail,
      );
    const message = m as Message;
    if (dialect.reservedName !== undefined && message.name === dialect.reservedName)
      throw new InvalidInputError(`${at}.name`, `"${dialect.reservedName}" is reserved for the summaries this service writes`);
    if (dialect.posesAsSummary(message)) {
      throw new InvalidInputError(
        `${at}.${dialect.summaryMarkerField}`,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes',
      );
    }
    const chars = charsOf(message, dialect);
    if (chars > limits.maxMessageChars) throw new InvalidInputError(at, `is ${chars} characters; at most ${limits.maxMessageChars}`);
    total += chars;
  });
  if (total > limits.maxBatchChars) throw new InvalidInputError('messages', `total ${total} characters; at most ${limits.maxBatchChars} per append`);
  return raw as Message[];
}
