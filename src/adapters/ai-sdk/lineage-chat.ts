/**
 * An AI SDK conversation kept by this service in a lineage of the `ai-sdk` dialect
 * (`ModelMessage[]`, stored as appended): the app hands the model the lineage's head, which
 * the service compacts on its own at the lineage's threshold (`compactAt`), and appends the
 * user's input with what the model returned. No `pruneMessages`, no summarising in the app.
 *
 *   const chat = lineageChat({ sessions, sessionId: 'support-4711', compactAt: 60_000 });
 *   const turn = await chat.turn('Where is my order?');
 *   const result = await generateText({ model, tools, messages: turn.messages, prepareStep: turn.prepareStep, stopWhen: isStepCount(8) });
 *   await turn.finish(result);
 *
 * A chat app (`useChat`) sends its UIMessage[]; its route stores only the new user message
 * and hands the model the head:
 *
 *   const turn = await chat.uiTurn(messages);
 *   const result = streamText({ model, messages: turn.messages, prepareStep: turn.prepareStep, onFinish: turn.finish });
 *   return result.toUIMessageStreamResponse({ originalMessages: messages });
 *
 * See ./turn.ts for what a turn appends and when, and ./messages.ts for the JSON form.
 */
import { convertToModelMessages, type ModelMessage, type UIMessage } from 'ai';
import type { CreateSessionOptions, SessionsClient } from '../../client/sessions-client';
import { InvalidInputError } from '../../errors';
import { type LineageTurn, providerView, startTurn } from './turn';

/** How the lineage is created when it does not exist yet (the dialect is always `ai-sdk`). */
export type LineageChatOptions = Omit<CreateSessionOptions, 'sessionId' | 'dialect'> & {
  sessions: SessionsClient;
  /** The lineage's root session id: every process given it continues the same conversation. */
  sessionId: string;
};

export interface LineageChat {
  /** The lineage's id (its root session id), which every read and append names. */
  readonly sessionId: string;
  /** The lineage's head as the model is sent it. */
  head(): Promise<ModelMessage[]>;
  /** Starts a turn with the user's input (a text is a user message); nothing is stored until the model answers. */
  turn(input: string | ModelMessage | readonly ModelMessage[]): Promise<LineageTurn>;
  /** Starts a turn with the last of a chat's UIMessages, the user's new one (`convertToModelMessages`); the others are the app's. */
  uiTurn(messages: readonly UIMessage[]): Promise<LineageTurn>;
}

export function lineageChat(options: LineageChatOptions): LineageChat {
  const { sessions, sessionId, ...create } = options;
  let opened: Promise<unknown> | undefined;
  const open = () =>
    (opened ??= sessions.createSession({ ...create, sessionId, dialect: 'ai-sdk' }).catch((error: unknown) => {
      opened = undefined;
      throw error;
    }));
  const read = async () => {
    await open();
    return sessions.transcript(sessionId);
  };

  const chat: LineageChat = {
    sessionId,
    head: async () => providerView(await read()),
    turn: async (input) => {
      const messages: ModelMessage[] =
        typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? [...input] : [input as ModelMessage];
      return startTurn(sessions, sessionId, await read(), messages);
    },
    uiTurn: async (messages) => {
      const last = messages.at(-1);
      if (!last || last.role !== 'user') throw new InvalidInputError('messages', "the last UI message must be the user's new message");
      return chat.turn(await convertToModelMessages([last]));
    },
  };
  return chat;
}
