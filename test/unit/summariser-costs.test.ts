/**
 * What the summariser was billed, in one shape for every API (RungCost, src/compaction/gain.ts),
 * read from the usage each SDK returns: OpenAI Chat's prompt_tokens_details.cached_tokens,
 * Anthropic's cache_read_input_tokens and cache_creation_input_tokens (added to its input, which
 * leaves them out), and Anthropic's usage.iterations (then the bill). A local server answers
 * with usage written by hand; the strict Anthropic fake covers the streamed path.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmSummariser } from '../../src/activities/summariser';
import type { LlmConfig } from '../../src/config';
import { startStrictAnthropic, type StrictAnthropicProvider } from '../support/strict-anthropic';

const request = { lines: ['user: Fix the parser'], force: false, latestUserRequest: 'user: Fix the parser', chunk: { index: 1, count: 1 }, cut: false };
const context = () => ({ signal: new AbortController().signal, onProgress: () => undefined });
const options = { stallTimeoutMs: 10_000, requestTimeoutMs: 10_000 };

let anthropicUsage: Record<string, unknown> = {};
let server: Server;
let url: string;
let strict: StrictAnthropicProvider;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.url?.includes('/chat/completions')) {
        res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 0,
            model: 'gpt-test',
            choices: [{ index: 0, message: { role: 'assistant', content: 'A summary.' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_tokens_details: { cached_tokens: 600 } },
          }),
        );
        return;
      }
      res.end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [{ type: 'text', text: 'A summary.' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: anthropicUsage,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  strict = await startStrictAnthropic({ seed: 1 });
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await strict?.close();
});

describe("the summariser's cost", () => {
  it('OpenAI Chat: the input holds the cached tokens', async () => {
    const config: LlmConfig = { api: 'chat', apiKey: 'test', baseURL: `${url}/v1`, model: 'gpt-test', stream: false };
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.cost).toEqual({ inputTokens: 1000, outputTokens: 50, cacheReadTokens: 600, cacheWriteTokens: 0, calls: 1 });
  });

  it("Anthropic: the cache's reads and writes are added to the input", async () => {
    anthropicUsage = { input_tokens: 100, output_tokens: 40, cache_read_input_tokens: 3000, cache_creation_input_tokens: 500 };
    const config: LlmConfig = { api: 'anthropic', apiKey: 'test', baseURL: url, model: 'claude-test', stream: false };
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.cost).toEqual({ inputTokens: 3600, outputTokens: 40, cacheReadTokens: 3000, cacheWriteTokens: 500, calls: 1 });
  });

  it('Anthropic with usage.iterations: the iterations are the bill, each kept', async () => {
    anthropicUsage = {
      input_tokens: 100,
      output_tokens: 40,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      iterations: [
        { type: 'compaction', input_tokens: 60_000, output_tokens: 2_000, cache_read_input_tokens: 10_000, cache_creation_input_tokens: 0 },
        { type: 'message', input_tokens: 100, output_tokens: 40, cache_read_input_tokens: 0, cache_creation_input_tokens: 2_000 },
      ],
    };
    const config: LlmConfig = { api: 'anthropic', apiKey: 'test', baseURL: url, model: 'claude-test', stream: false };
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.cost).toEqual({
      inputTokens: 72_100,
      outputTokens: 2_040,
      cacheReadTokens: 10_000,
      cacheWriteTokens: 2_000,
      calls: 1,
      iterations: [
        { type: 'compaction', inputTokens: 70_000, outputTokens: 2_000, cacheReadTokens: 10_000, cacheWriteTokens: 0 },
        { type: 'message', inputTokens: 2_100, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 2_000 },
      ],
    });
  });

  it('Anthropic streamed (the strict fake): the input from message_start, the output from message_delta', async () => {
    const config: LlmConfig = { api: 'anthropic', apiKey: 'test', baseURL: strict.url, model: 'claude-test', stream: true };
    const result = await createLlmSummariser(config, options).summarise(request, context());
    expect(result.cost).toEqual({ inputTokens: 100, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 1 });
  });
});
