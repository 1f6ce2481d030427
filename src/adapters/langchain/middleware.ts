/**
 * An agent middleware for LangChain v1's `createAgent`: the conversation kept by this service in
 * a lineage of the `openai-chat` dialect, and the model handed the lineage's head on every
 * call, in place of `summarizationMiddleware` (which rewrites the agent's state itself).
 *
 *   const agent = createAgent({
 *     model, tools,
 *     middleware: [lineageMiddleware({ sessions, sessionId: 'support-4711', compactAt: 60_000 })],
 *   });
 *   await agent.invoke({ messages: [new HumanMessage('Where is my order?')] });
 *
 * Before each model call (beforeModel), the messages of the step the lineage has not got yet
 * (the user's input, the model's last answer with its tool calls, the tool results) are
 * appended, keyed by their LangChain ids (a step run again is stored once), and the agent's
 * state is replaced by the head, converted back: what the service compacted (its summary and
 * the recent messages, the tool calls with their results) is what the model is sent, and what
 * another process appended to the same conversation is there too. When the agent ends
 * (afterAgent), its final answer is appended the same way. The service compacts on its own at
 * the lineage's threshold (`compactAt`), one job per lineage, gated, without forking the
 * conversation; the agent never summarises.
 */
import { RemoveMessage, type BaseMessage } from '@langchain/core/messages';
import { createMiddleware } from 'langchain';
import { createHash } from 'node:crypto';
import type { CreateSessionOptions, SessionsClient } from '../../client/sessions-client';
import { canonicalJson } from '../../compaction/json';
import { fromChatMessage, toChatMessage } from './messages';

/** How the lineage is created when it does not exist yet (the dialect is always `openai-chat`). */
export type LineageMiddlewareOptions = Omit<CreateSessionOptions, 'sessionId' | 'dialect'> & {
  sessions: SessionsClient;
  /** The lineage's root session id: every agent given it continues the same conversation. */
  sessionId: string;
};

/** `@langchain/langgraph`'s REMOVE_ALL_MESSAGES: a RemoveMessage with this id clears the state's messages. */
const REMOVE_ALL_MESSAGES = '__remove_all__';

/** The id prefix of the messages the middleware put in the state from the head: these the lineage has. */
const FROM_HEAD = 'lineage-head:';

const fromHead = (m: BaseMessage) => typeof m.id === 'string' && m.id.startsWith(FROM_HEAD);

/** The id of the head's message at `position`: the same on every read while the message stays there. */
const headId = (message: unknown, position: number) =>
  `${FROM_HEAD}${position}:${createHash('sha256').update(canonicalJson(message)).digest('hex').slice(0, 16)}`;

/**
 * The append key of a step's messages: their LangChain ids (the state's reducer gives every
 * message one), so the step run again (a retried node) is stored once. Without ids, no key.
 */
function appendKey(messages: readonly BaseMessage[]): string | undefined {
  if (messages.some((m) => typeof m.id !== 'string' || m.id === '')) return undefined;
  const digest = createHash('sha256')
    .update(messages.map((m) => m.id).join('\n'))
    .digest('hex');
  return `langchain:${digest.slice(0, 40)}`;
}

export function lineageMiddleware(options: LineageMiddlewareOptions) {
  const { sessions, sessionId, ...create } = options;
  let opened: Promise<unknown> | undefined;
  const open = () =>
    (opened ??= sessions.createSession({ ...create, sessionId, dialect: 'openai-chat' }).catch((error: unknown) => {
      opened = undefined;
      throw error;
    }));

  /** Appends what the lineage has not got yet, and answers the state update that makes the state the head. */
  const sync = async (messages: readonly BaseMessage[]) => {
    await open();
    const pending = messages.filter((m) => !fromHead(m) && m.getType() !== 'remove');
    if (pending.length > 0) await sessions.append(sessionId, pending.map(toChatMessage), { appendKey: appendKey(pending) });
    const head = await sessions.transcript(sessionId);
    return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...head.messages.map((m, i) => fromChatMessage(m, headId(m, i)))] };
  };

  return createMiddleware({
    name: 'LineageMiddleware',
    beforeModel: (state) => sync(state.messages),
    afterAgent: (state) => sync(state.messages),
  });
}
