/**
 * The summariser speaks each configured API through its real SDK: Chat Completions and the
 * Responses API (`openai`), and Anthropic's Messages API (`@anthropic-ai/sdk`), streamed and
 * not, against the strict fake providers (which refuse a malformed request with the provider's
 * error). An auth failure is final, a server error is retried.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmSummariser } from '../../src/activities/summariser';
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
  anthropic = await startStrictAnthropic({ seed: 1 });
  responses = await startStrictResponses({ seed: 1 });
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
