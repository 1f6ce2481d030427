/**
 * lineageMiddleware (src/adapters/langchain/middleware.ts): LangChain v1's `createAgent` over a
 * lineage, on the real stack. A scripted chat model (no network) runs many turns with parallel
 * and single tool calls; the lineage compacts at a low threshold and, forced from inside a tool,
 * in the middle of a turn's tool loop; a second agent with a client of its own continues the
 * conversation. Every request the model receives, converted as `@langchain/openai` sends it, is
 * accepted by the strict fake of the OpenAI chat API; every user input is in the lineage; the
 * second agent's model is handed the compacted head; the audit finds no fork.
 */
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { createAgent, tool } from 'langchain';
import { describe, expect, it } from 'vitest';
import { lineageMiddleware, toChatMessage } from '../../src/adapters/langchain';
import type { SessionsClient } from '../../src/client/sessions-client';
import { SUMMARY_MESSAGE_NAME } from '../../src/compaction/messages';
import { auditRows, sessionMessages } from '../../src/db/session-store';
import { uniqueId, useTestStack, withClient } from '../support/stack';
import { validateChatRequest } from '../support/strict-provider';

const stack = useTestStack();

/** What the model was sent, as the OpenAI chat API would get it, and the API's verdict. */
interface Request {
  messages: ReturnType<typeof toChatMessage>[];
  rejection: string | null;
}

/**
 * A chat model that answers from a script: to a user request, two parallel `lookup` calls; to
 * their results, one `note` call; to that, the final answer. It records every request.
 */
class ScriptedChatModel extends BaseChatModel {
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
function tools(compactNow: () => Promise<void>) {
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

const isSummary = (m: { role?: unknown; name?: unknown }) => m.role === 'assistant' && m.name === SUMMARY_MESSAGE_NAME;

describe('lineageMiddleware on createAgent', () => {
  it('stores a step run again once (its append key is its messages ids), and the head it put in the state never again', async () => {
    const id = uniqueId('lc-retry');
    const middleware = lineageMiddleware({ sessions: stack().client, sessionId: id });
    const beforeModel = middleware.beforeModel as (state: { messages: BaseMessage[] }, runtime: unknown) => Promise<{ messages: BaseMessage[] }>;
    const step = [new HumanMessage({ id: 'h-1', content: 'What changed?' })];
    await beforeModel({ messages: step }, {});
    const again = await beforeModel({ messages: step }, {});
    const head = await stack().client.transcript(id);
    expect(head.messages).toEqual([{ role: 'user', content: 'What changed?' }]);
    // The state becomes the head: messages the middleware knows the lineage holds.
    expect(again.messages.slice(1).map(toChatMessage)).toEqual(head.messages);
    // Passed again with a new message (a previous result's messages, then the next input),
    // the head's messages are known by their ids: only the new one is stored.
    const next = await beforeModel({ messages: [...again.messages.slice(1), new HumanMessage({ id: 'h-2', content: 'And then?' })] }, {});
    expect((await stack().client.transcript(id)).messages).toEqual([...head.messages, { role: 'user', content: 'And then?' }]);
    // The head's ids are the same on every read while its messages stay.
    expect(next.messages[1].id).toBe(again.messages[1].id);
  });

  it('runs many turns with tool calls, compactions mid-loop and a second agent: no request rejected, every input kept, no fork', async () => {
    const id = uniqueId('lc-agent');
    const compactAt = 3_000;
    const inputs: string[] = [];
    let forceOnTurn = false;
    const forced: string[] = [];
    const compactNow = async () => {
      if (!forceOnTurn) return;
      forceOnTurn = false;
      // Against the head; a threshold compaction that committed first makes it stale: once more against the new head.
      for (let attempt = 0; attempt < 3; attempt++) {
        const result = await stack().client.compact((await stack().client.lineage(id)).headSessionId, { force: true });
        forced.push(`${result.outcome} ${result.reason ?? ''}`);
        if (result.outcome !== 'stale') return;
      }
    };
    const started = Date.now();

    const runAgent = async (sessions: SessionsClient, label: string, turns: number, forceEvery: number) => {
      const model = new ScriptedChatModel(label);
      const agent = createAgent({
        model,
        tools: tools(compactNow),
        systemPrompt: 'You are a careful research assistant.',
        middleware: [lineageMiddleware({ sessions, sessionId: id, compactAt })],
      });
      for (let turn = 1; turn <= turns; turn++) {
        const input = `${label} request ${turn}: look into topic ${turn * 7}`;
        inputs.push(input);
        forceOnTurn = turn % forceEvery === 0;
        const result = await agent.invoke({ messages: [new HumanMessage(input)] });
        expect(result.messages.at(-1)?.content).toBe(`Done: ${input}`);
      }
      return model;
    };

    const first = await runAgent(stack().client, 'first', 10, 3);
    // A second agent, with a client (and connections) of its own, continues the conversation.
    const second = await withClient(stack(), {}, (sessions) => runAgent(sessions, 'second', 3, 100));

    const requests = [...first.requests, ...second.requests];
    const rejected = requests.filter((r) => r.rejection !== null);
    expect(rejected.map((r) => r.rejection)).toEqual([]);
    // And the strict fake does refuse a broken request (so 0 could have been otherwise).
    expect(validateChatRequest({ model: 'agent-model', messages: [{ role: 'tool', tool_call_id: 'call_9', content: '{}' }] })).not.toBeNull();
    expect(first.requests).toHaveLength(30);

    // Compactions landed while the agents ran, some inside a turn's tool loop: a request that
    expect(forced.filter((o) => o.startsWith('compacted')).length, forced.join()).toBe(3);
    const compactions = (await auditRows(stack().db.db, id)).filter((r) => r.outcome === 'compacted');
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    expect(compactions.every((r) => r.startedAt.getTime() > started)).toBe(true);
    // holds a summary the turn's previous request did not (it landed between two model calls of one turn).
    const summaryOf = (r: Request) => r.messages.find(isSummary)?.content ?? null;
    const midLoop = first.requests.filter((r, i) => i > 0 && r.messages.at(-1)?.role === 'tool' && summaryOf(r) !== summaryOf(first.requests[i - 1]));
    expect(midLoop.length).toBeGreaterThanOrEqual(2);
    // The second agent's model was handed the compacted head from its first request.
    expect(second.requests[0].messages.some(isSummary)).toBe(true);
    expect(second.requests[0].messages.length).toBeLessThan(first.requests.at(-1)!.messages.length + 4);

    // Every user input is in the lineage (live or archived by a compaction), verbatim.
    const lineage = await stack().client.lineage(id);
    const stored = (await Promise.all(lineage.sessions.map((s) => sessionMessages(stack().db.db, s.sessionId, { includeArchived: true })))).flat();
    const said = new Set(
      stored
        .map((m) => m.body)
        .filter((b) => b.role === 'user')
        .map((b) => b.content),
    );
    expect(inputs.filter((input) => !said.has(input))).toEqual([]);
    // The head ends with the second agent's last answer (named after the agent's node, as
    // createAgent names its model's messages); it is one the provider takes.
    const head = (await stack().client.transcript(id)).messages;
    expect(head.at(-1)).toEqual({ role: 'assistant', content: `Done: ${inputs.at(-1)}`, name: 'model' });
    expect(validateChatRequest({ model: 'agent-model', messages: head })).toBeNull();

    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0]);
    console.log(
      `langchain-middleware: 10+3 turns, ${first.requests.length}+${second.requests.length} model requests, ${compactions.length} compactions ` +
        `(${midLoop.length} landed mid-loop, ${forced.filter((o) => o.startsWith('compacted')).length} forced from a tool), ${rejected.length} rejected, ${audit.forks} forks`,
    );
  });
});
