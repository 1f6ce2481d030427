/**
 * The summariser speaks each configured API through its real SDK: Chat Completions and the
 * Responses API (`openai`), and Anthropic's Messages API (`@anthropic-ai/sdk`), streamed and
 * not, against the strict fake providers (which refuse a malformed request with the provider's
 * error). An auth failure is final, a server error is retried.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmSummariser } from '../../src/activities/summariser';
import { dialectOf } from '../../src/compaction/dialects';
import type { JsonObject } from '../../src/compaction/json';
import { prefixLayout } from '../../src/compaction/summary-prompt';
import type { LlmConfig } from '../../src/config';
import { startStrictAnthropic, type StrictAnthropicProvider } from '../support/strict-anthropic';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';

const request = {
  lines: ['user: Fix the parser 😀', 'tool result (call_1): {"status": "ok"}'],
  force: false,
  latestUserRequest: 'user: Fix the parser 😀',
  chunk: { index: 1, count: 1 },
  cut: false,
};
const context = () => ({ signal: new AbortController().signal, onProgress: () => undefined });
const options = { stallTimeoutMs: 10_000, requestTimeoutMs: 10_000 };

let anthropic: StrictAnthropicProvider;
let responses: StrictResponsesProvider;
beforeAll(async () => {
  // The session's own model doubles as the summariser's in the prefix layout: its requests carry no summariser prompt of their own.
  anthropic = await startStrictAnthropic({ seed: 1, summariserModel: 'claude-own' });
  responses = await startStrictResponses({ seed: 1, summariserModel: 'gpt-own' });
});
afterAll(async () => {
  await anthropic?.close();
  await responses?.close();
});

describe.each([false, true])('the summariser (stream %s)', (stream) => {
  it('summarises through the Anthropic Messages API', async () => {
    const config: LlmConfig = { api: 'anthropic', apiKey: 'test', baseURL: anthropic.url, model: 'claude-test', stream };
    const before = anthropic.requests.length;
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.text.length).toBeGreaterThan(0);
    const sent = anthropic.requests.slice(before);
    expect(sent.map((r) => [r.caller, r.status, r.stream])).toEqual([['summariser', 200, stream]]);
    expect(anthropic.rejections).toHaveLength(0);
  });

  it('summarises through the OpenAI Responses API', async () => {
    const config: LlmConfig = { api: 'responses', apiKey: 'test', baseURL: responses.url, model: 'gpt-test', stream };
    const before = responses.requests.length;
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.text.length).toBeGreaterThan(0);
    const sent = responses.requests.slice(before);
    expect(sent.map((r) => [r.caller, r.status, r.stream])).toEqual([['summariser', 200, stream]]);
    expect(responses.rejections).toHaveLength(0);
  });
});

it('classifies Anthropic errors: an unreachable endpoint is retried, not final', async () => {
  const config: LlmConfig = { api: 'anthropic', apiKey: 'test', baseURL: 'http://127.0.0.1:9', model: 'claude-test', stream: false };
  const error = await createLlmSummariser(config, options)
    .summarise(request, context())
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ApplicationFailure);
  expect((error as ApplicationFailure).type).toBe('SummariserConnectionError');
  expect((error as ApplicationFailure).nonRetryable).toBe(false);
});

describe('the prefix layout: the head as the agent sends it, then the instruction', () => {
  const anthropicHead: JsonObject[] = [
    { role: 'user', content: 'Fix the parser in src/parse.ts' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/parse.ts' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"lines":120,"ok":true}' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'The parser drops the last token.' }] },
    { role: 'user', content: 'Fix it and run the tests.' },
  ];
  const responsesHead: JsonObject[] = [
    { type: 'message', role: 'user', content: 'Fix the parser in src/parse.ts' },
    { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"src/parse.ts"}' },
    { type: 'function_call_output', call_id: 'call_1', output: '{"lines":120,"ok":true}' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The parser drops the last token.', annotations: [] }] },
    { type: 'message', role: 'user', content: 'Fix it and run the tests.' },
  ];

  it.each([
    ['anthropic', anthropicHead, () => anthropic, (body: any) => body.messages],
    ['openai-responses', responsesHead, () => responses, (body: any) => body.input],
  ] as const)('%s: the strict provider accepts it, and it begins with the head, unchanged', async (name, head, provider, itemsOf) => {
    const dialect = dialectOf(name);
    const layout = prefixLayout(head, { middle: [0, 1, 2] }, dialect, 200, 100_000);
    expect(layout).toMatchObject({ from: 1, to: 3 });
    const config: LlmConfig =
      name === 'anthropic'
        ? { api: 'anthropic', apiKey: 'test', baseURL: anthropic.url, model: 'claude-own', stream: false }
        : { api: 'responses', apiKey: 'test', baseURL: responses.url, model: 'gpt-own', stream: false };
    const summariser = createLlmSummariser(config, options);
    expect(summariser.speaks?.(name)).toBe(true);
    const before = provider().requests.length;
    const rejectedBefore = provider().rejections.length;
    await summariser.summarise({ ...request, lines: [], prefix: layout }, context());
    const [sent] = provider().requests.slice(before);
    expect(provider().rejections.length).toBe(rejectedBefore);
    const items = itemsOf(sent.body);
    expect(items.slice(0, head.length)).toEqual(dialect.forProvider(head));
    expect(items).toHaveLength(head.length + 1);
    expect(items.at(-1)).toMatchObject({ role: 'user' });
    expect(String(items.at(-1).content)).toContain('Summarise messages 1 to 3 of the 5 above');
    // Nothing before the head: no system prompt or instructions of the summariser's own.
    const body = sent.body as { system?: unknown; instructions?: unknown };
    expect(body.system ?? body.instructions).toBeUndefined();
  });

  it('is not used when the head ends in a call waiting for its result, or does not fit one request', () => {
    const chat = dialectOf('openai-chat');
    const head: JsonObject[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Read src/a.ts' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } }] },
    ];
    expect(prefixLayout(head, { middle: [1] }, chat, 100, 100_000)).toBeUndefined();
    const answered = [...head, { role: 'tool', tool_call_id: 'call_1', content: '{"ok":true}' }];
    expect(prefixLayout(answered, { middle: [1] }, chat, 100, 100_000)).toMatchObject({ from: 2, to: 2 });
    expect(prefixLayout(answered, { middle: [1] }, chat, 100_000, 100_000)).toBeUndefined();
    expect(prefixLayout(answered, { middle: [] }, chat, 100, 100_000)).toBeUndefined();
  });

  it('is spoken only by the API of the dialect: chat, Responses, Anthropic', () => {
    const speaks = (api: LlmConfig['api']) =>
      (['openai-chat', 'openai-responses', 'openai-agents', 'anthropic', 'gemini'] as const).filter((d) =>
        createLlmSummariser({ api, apiKey: 'k', model: 'm', stream: false }, options).speaks?.(d),
      );
    expect([speaks('chat'), speaks('responses'), speaks('anthropic')]).toEqual([['openai-chat'], ['openai-responses'], ['anthropic']]);
  });
});
