/**
 * A LangChain v1 agent for tests: `createAgent` with `lineageMiddleware`, a scripted chat model
 * (no network) and two tools. Every request the model receives is recorded as the OpenAI chat
 * API would get it (`toChatMessage`, as `@langchain/openai` converts), with the strict chat
 * fake's verdict on it.
 *
 * Run as a script, it is the second process of a two-process test:
 *   node --import tsx test/support/langchain-agent.ts <sessionId> <label> <turns> <compactAt>
 * with the stack's environment; it prints one JSON line: {"inputs": [...], "requests": [...]}.
 */
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { createAgent, tool } from 'langchain';
import { lineageMiddleware, toChatMessage } from '../../src/adapters/langchain';
import { SessionsClient } from '../../src/client/sessions-client';
import { SUMMARY_MESSAGE_NAME } from '../../src/compaction/messages';
import { loadConfig } from '../../src/config';
import { validateChatRequest } from './strict-provider';

/** What the model was sent, as the OpenAI chat API would get it, and the API's verdict. */
export interface Request {
  messages: ReturnType<typeof toChatMessage>[];
  rejection: string | null;
}

/**
 * A chat model that answers from a script: to a user request, two parallel `lookup` calls; to
 * their results, one `note` call; to that, the final answer. It records every request.
 */
export class ScriptedChatModel extends BaseChatModel {
  readonly requests: Request[] = [];
  private calls = 0;

  constructor(private readonly label: string) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const sent = messages.map(toChatMessage);
    this.requests.push({ messages: sent, rejection: validateChatRequest({ model: 'agent-model', messages: sent })?.message ?? null });
    const last = messages.map((m) => m.getType()).lastIndexOf('human');
    const request = last < 0 ? '' : String(messages[last].content);
    const rounds = messages.slice(last + 1).filter((m) => m.getType() === 'ai' && ((m as AIMessage).tool_calls?.length ?? 0) > 0).length;
    const call = (name: string, args: Record<string, unknown>) => ({ id: `call_${this.label}_${++this.calls}`, name, args, type: 'tool_call' as const });
    const reply =
      rounds === 0
        ? new AIMessage({ content: '', tool_calls: [call('lookup', { topic: `${request} (a)` }), call('lookup', { topic: `${request} (b)` })] })
        : rounds === 1
          ? new AIMessage({ content: 'Noting what I found.', tool_calls: [call('note', { text: `found for ${request}` })] })
          : new AIMessage({ content: `Done: ${request}` });
    return { generations: [{ text: typeof reply.content === 'string' ? reply.content : '', message: reply }] };
  }
}

/** The agent's tools: `lookup` answers a large result; `note` forces a compaction when `compactNow()` says so. */
export function tools(compactNow: () => Promise<void>) {
  const lookup = tool(({ topic }: { topic: string }) => `Results for ${topic}: ${'a long line of search output, '.repeat(40)}`, {
    name: 'lookup',
    description: 'Looks a topic up.',
    schema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  });
  const note = tool(
    async ({ text }: { text: string }) => {
      await compactNow();
      return `noted: ${text}`;
    },
    { name: 'note', description: 'Takes a note.', schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  );
  return [lookup, note];
}

export const isSummary = (m: { role?: unknown; name?: unknown }) => m.role === 'assistant' && m.name === SUMMARY_MESSAGE_NAME;

/**
 * Runs `turns` invocations of an agent on lineage `sessionId`, each with only its new request;
 * `beforeTurn` is told each turn's number first. Answers the requests and what the model was sent.
 */
export async function runTurns(
  sessions: SessionsClient,
  sessionId: string,
  options: { label: string; turns: number; compactAt: number; compactNow?: () => Promise<void>; beforeTurn?: (turn: number) => void },
): Promise<{ inputs: string[]; requests: Request[] }> {
  const model = new ScriptedChatModel(options.label);
  const agent = createAgent({
    model,
    tools: tools(options.compactNow ?? (() => Promise.resolve())),
    systemPrompt: 'You are a careful research assistant.',
    middleware: [lineageMiddleware({ sessions, sessionId, compactAt: options.compactAt })],
  });
  const inputs: string[] = [];
  for (let turn = 1; turn <= options.turns; turn++) {
    const input = `${options.label} request ${turn}: look into topic ${turn * 7}`;
    inputs.push(input);
    options.beforeTurn?.(turn);
    const result = await agent.invoke({ messages: [new HumanMessage(input)] });
    const answer = result.messages.at(-1)?.content;
    if (answer !== `Done: ${input}`) throw new Error(`turn ${turn} ended with ${JSON.stringify(answer)}`);
  }
  return { inputs, requests: model.requests };
}

async function main() {
  const [sessionId, label, turns, compactAt] = process.argv.slice(2);
  const sessions = await SessionsClient.connect({ config: loadConfig(process.env) });
  try {
    console.log(JSON.stringify(await runTurns(sessions, sessionId, { label, turns: Number(turns), compactAt: Number(compactAt) })));
  } finally {
    await sessions.close();
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
