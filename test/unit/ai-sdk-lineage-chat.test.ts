/**
 * lineageChat (src/adapters/ai-sdk) without the stack: the AI SDK's real `generateText` tool
 * loop with a mock model, over an in-memory stand-in of the client's append / transcript
 * (appends keyed: a key seen before stores nothing). What a turn appends and when, and that a
 * head changed in the middle of the loop is what the next step sends.
 */
import { generateText, isStepCount, jsonSchema, type ModelMessage, tool, type UIMessage } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { lineageChat } from '../../src/adapters/ai-sdk';
import { responseAppendKey, toStoredMessage } from '../../src/adapters/ai-sdk/messages';
import type { SessionsClient } from '../../src/client/sessions-client';
import type { Message } from '../../src/compaction/dialects';

type LanguageModelV4CallOptions = Parameters<MockLanguageModelV4['doGenerate']>[0];
type LanguageModelV4GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

/** The client's data plane in memory: one lineage, its head, the keys seen. */
function memorySessions() {
  const state = { created: 0, head: [] as Message[], keys: new Set<string>(), appends: [] as { batch: Message[]; appendKey?: string }[] };
  const sessions = {
    createSession: async () => {
      state.created++;
      return {};
    },
    append: async (_id: string, batch: Message[], options: { appendKey?: string } = {}) => {
      const replayed = options.appendKey !== undefined && state.keys.has(options.appendKey);
      if (!replayed) {
        if (options.appendKey) state.keys.add(options.appendKey);
        state.head = [...state.head, ...(JSON.parse(JSON.stringify(batch)) as Message[])];
        state.appends.push({ batch, appendKey: options.appendKey });
      }
      return { replayed };
    },
    transcript: async () => ({ sessionId: 'head', dialect: 'ai-sdk', messages: state.head, seqs: state.head.map((_, i) => i) }),
  };
  return { state, sessions: sessions as unknown as SessionsClient };
}

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const callsReply = (n: number): LanguageModelV4GenerateResult => ({
  content: [
    { type: 'tool-call', toolCallId: `call_${n}a`, toolName: 'lookup', input: JSON.stringify({ topic: `t${n}a` }) },
    { type: 'tool-call', toolCallId: `call_${n}b`, toolName: 'lookup', input: JSON.stringify({ topic: `t${n}b` }) },
  ],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage,
  warnings: [],
  response: { id: `resp_${n}` },
});
const answerReply = (n: number): LanguageModelV4GenerateResult => ({
  content: [{ type: 'text', text: 'All done.' }],
  finishReason: { unified: 'stop', raw: 'end_turn' },
  usage,
  warnings: [],
  response: { id: `resp_${n}` },
});

/** A model that calls `lookup` twice in parallel, twice, then answers; it records each prompt. */
function scriptedModel() {
  const prompts: LanguageModelV4CallOptions['prompt'][] = [];
  let n = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      prompts.push(options.prompt);
      n++;
      return n <= 2 ? callsReply(n) : answerReply(n);
    },
  });
  return { model, prompts };
}

const SUMMARY: Message = { role: 'user', content: 'Summary of the conversation so far: the user asked about topics.' };
const textsOf = (prompt: LanguageModelV4CallOptions['prompt']) => JSON.stringify(prompt);

describe('toStoredMessage', () => {
  it('stores bytes as base64 and URLs as their text, drops undefined fields, keeps the rest', () => {
    const message: ModelMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'look', providerOptions: undefined },
        { type: 'image', image: new Uint8Array([1, 2, 3]), mediaType: 'image/png' },
        { type: 'file', data: new URL('https://example.com/a.pdf'), mediaType: 'application/pdf' },
        { type: 'file', data: new TextEncoder().encode('hello').buffer as ArrayBuffer, mediaType: 'text/plain' },
      ],
    };
    expect(toStoredMessage(message)).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', image: 'AQID', mediaType: 'image/png' },
        { type: 'file', data: 'https://example.com/a.pdf', mediaType: 'application/pdf' },
        { type: 'file', data: 'aGVsbG8=', mediaType: 'text/plain' },
      ],
    });
    const tool: ModelMessage = {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'shot',
          output: { type: 'content', value: [{ type: 'file-data', data: Buffer.from([255]), mediaType: 'image/png' } as never] },
        },
      ],
    };
    expect(JSON.stringify(toStoredMessage(tool))).toContain('"data":"/w=="');
  });

  it('keys a batch by its response id and content', () => {
    const batch: Message[] = [{ role: 'user', content: 'hi' }];
    expect(responseAppendKey('resp_1', batch)).toBe(responseAppendKey('resp_1', [{ content: 'hi', role: 'user' }]));
    expect(responseAppendKey('resp_2', batch)).not.toBe(responseAppendKey('resp_1', batch));
    expect(responseAppendKey('resp_1', [{ role: 'user', content: 'hi!' }])).not.toBe(responseAppendKey('resp_1', batch));
    expect(responseAppendKey('resp_1', batch).length).toBeLessThanOrEqual(200);
  });
});

describe('lineageChat', () => {
  const tools = {
    lookup: tool({
      inputSchema: jsonSchema<{ topic: string }>({ type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] }),
      execute: async ({ topic }) => ({ topic, hits: 3 }),
    }),
  };

  it('appends the input with the first step, each step once, and sends the head unchanged when nothing else changed it', async () => {
    const { state, sessions } = memorySessions();
    state.head = [
      { role: 'user', content: 'earlier' },
      { role: 'assistant', content: 'earlier answer' },
    ];
    const chat = lineageChat({ sessions, sessionId: 'conv-1' });
    const turn = await chat.turn('Look into two topics.');
    expect(turn.messages).toEqual([...state.head, { role: 'user', content: 'Look into two topics.' }]);
    const { model, prompts } = scriptedModel();
    const result = await generateText({ model, tools, messages: turn.messages, prepareStep: turn.prepareStep, stopWhen: isStepCount(5) });
    expect(result.text).toBe('All done.');
    // The last step is not appended until finish (no prepareStep follows it).
    expect(state.appends).toHaveLength(2);
    await turn.finish(result);
    await turn.finish(result); // again: nothing more
    expect(state.appends).toHaveLength(3);
    expect(state.appends[0].batch[0]).toEqual({ role: 'user', content: 'Look into two topics.' });
    expect(state.appends.map((a) => a.batch.length)).toEqual([3, 2, 1]);
    expect(state.appends.every((a) => a.appendKey?.startsWith('ai-sdk:'))).toBe(true);
    // What the lineage holds is the conversation as the SDK had it.
    const sdkView = [...turn.messages, ...result.responseMessages].map((m) => toStoredMessage(m));
    expect(state.head).toEqual(sdkView);
    expect(turn.headChanges).toBe(0);
    expect(prompts).toHaveLength(3);
    expect(state.created).toBe(1);
  });

  it('hands the next step the head when the service compacted in the middle of the tool loop', async () => {
    const { state, sessions } = memorySessions();
    state.head = [
      { role: 'user', content: 'an earlier request' },
      { role: 'assistant', content: 'an earlier answer' },
    ];
    const chat = lineageChat({ sessions, sessionId: 'conv-2' });
    const { model, prompts } = scriptedModel();
    let compactions = 0;
    const compacting = {
      lookup: tool({
        inputSchema: jsonSchema<{ topic: string }>({ type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] }),
        // The service compacts while the first step's tools run: the head becomes a summary.
        execute: async ({ topic }) => {
          if (topic === 't1b' && compactions++ === 0) state.head = [SUMMARY];
          return { topic, hits: 3 };
        },
      }),
    };
    const turn = await chat.turn({ role: 'user', content: [{ type: 'text', text: 'Go.' }] });
    const result = await generateText({ model, tools: compacting, messages: turn.messages, prepareStep: turn.prepareStep, stopWhen: isStepCount(5) });
    await turn.finish(result);
    expect(turn.headChanges).toBe(1);
    // The second request is the compacted head: the summary, then the turn so far (appended after the compaction).
    expect(textsOf(prompts[0])).not.toContain('Summary of the conversation');
    expect(textsOf(prompts[0])).toContain('an earlier request');
    expect(textsOf(prompts[1])).toContain('Summary of the conversation');
    expect(textsOf(prompts[1])).not.toContain('an earlier request');
    expect(prompts[1].map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool']);
    // ... and the SDK carries it forward.
    expect(textsOf(prompts[2])).toContain('Summary of the conversation');
    expect(prompts[2].length).toBe(prompts[1].length + 2);
    expect(state.head[0]).toEqual(SUMMARY);
    expect(state.head.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'All done.' }] });
  });

  it('stores nothing of a turn whose model call failed; a chat turn takes the last UI message, a user one', async () => {
    const { state, sessions } = memorySessions();
    const chat = lineageChat({ sessions, sessionId: 'conv-3' });
    const turn = await chat.turn('hello');
    const failing = new MockLanguageModelV4({
      doGenerate: async () => {
        throw new Error('provider down');
      },
    });
    await expect(generateText({ model: failing, messages: turn.messages, prepareStep: turn.prepareStep, maxRetries: 0 })).rejects.toThrow('provider down');
    await turn.finish({ steps: [] });
    expect(state.head).toEqual([]);

    const ui: UIMessage[] = [
      { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'first' }] },
      { id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'reply' }] },
      { id: 'u2', role: 'user', parts: [{ type: 'text', text: 'second' }] },
    ];
    const uiTurn = await chat.uiTurn(ui);
    expect(uiTurn.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'second' }] }]);
    await expect(chat.uiTurn(ui.slice(0, 2))).rejects.toThrow(/user's new message/);
  });
});
