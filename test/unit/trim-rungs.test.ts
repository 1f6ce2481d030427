/**
 * The trim rung in the ladder (src/activities/compaction/rungs.ts): it runs only after the rungs
 * before it passed, its answer names why each of them did, a head a rung left behind (a summary
 * over the context window) is gated when no later rung answers, and a summariser that refuses
 * its input as too long is a pass, not a failure.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createLlmSummariser } from '../../src/activities/summariser';
import type { Message } from '../../src/compaction/dialects';
import { DEFAULT_PLAN_OPTIONS } from '../../src/compaction/plan';
import type { Proposal } from '../../src/compaction/proposal';
import type { CompactionActivityDeps, CompactSessionInput } from '../../src/activities/compaction/deps';
import { Heartbeat } from '../../src/activities/compaction/heartbeat';
import { propose, type Rung, RUNGS, type RungStep } from '../../src/activities/compaction/rungs';
import { inputTooLarge } from '../../src/activities/compaction/summarise';
import { takeSnapshot } from '../../src/activities/compaction/snapshot';
import type { StartedJob } from '../../src/db/jobs';
import type { LineageInfo } from '../../src/db/lineage-state';
import type { LlmConfig } from '../../src/config';
import { conversation } from '../support/conversation';

const lineage: LineageInfo = {
  lineageId: 'l',
  headSessionId: 'l',
  generation: 0,
  mode: 'rotate',
  dialect: 'openai-chat',
  source: null,
  compactAtTokens: null,
  model: null,
  contextWindow: null,
  closed: false,
  incarnation: 'inc-1',
};

function stepOf(messages: Message[], over: Partial<LineageInfo>): RungStep {
  const deps = {
    plan: { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 300 },
    ledger: { percent: 10, maxTokens: 3000, requestChars: 500 },
    masking: { targetPercent: 50 },
  } as unknown as CompactionActivityDeps;
  const rows = messages.map((body, i) => ({
    id: i + 1,
    seq: i + 1,
    body,
    tokenEstimate: Math.ceil(JSON.stringify(body).length / 4),
    lineageSeq: i + 1,
    originMessageId: null,
  }));
  const input = { force: false } as CompactSessionInput;
  const job = {
    outcome: 'running',
    attempts: 1,
    generation: 1,
    parentSessionId: 'l',
    childSessionId: null,
    messagesAfter: null,
    reason: null,
    gate: null,
  } as const;
  const snapshot = takeSnapshot({ job, lineage: { ...lineage, ...over }, ledger: null, rows } as unknown as StartedJob, input, deps);
  return { snapshot, input, deps, heartbeat: new Heartbeat(() => {}) };
}

const tooLong = ApplicationFailure.create({
  message: 'bad request (HTTP 400, context_length_exceeded): the endpoint refused the request',
  type: 'SummariserInvalidRequest',
  nonRetryable: true,
  details: [{ kind: 'bad request', status: 400, code: 'context_length_exceeded' }],
});

describe('the trim rung in the ladder', () => {
  const trim = RUNGS.find((r) => r.name === 'trim')!;
  const messages = conversation(30) as Message[];
  const total = messages.reduce((sum, m) => sum + Math.ceil(JSON.stringify(m).length / 4), 0);

  it('reads a context-length failure of the summariser, and no other, as its input being too large', () => {
    expect(inputTooLarge(tooLong)).toMatch(/context_length_exceeded/);
    const status413 = ApplicationFailure.create({ message: 'bad request (HTTP 413)', details: [{ kind: 'bad request', status: 413 }] });
    expect(inputTooLarge(status413)).toBeDefined();
    const auth = ApplicationFailure.create({ message: 'auth (HTTP 401)', details: [{ kind: 'auth', status: 401, code: 'invalid_api_key' }] });
    expect(inputTooLarge(auth)).toBeUndefined();
    expect(inputTooLarge(new Error('context_length_exceeded'))).toBeUndefined();
  });

  it.each([
    ['chat', { error: { message: "This model's maximum context length is 8192 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } }],
    ['anthropic', { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' } }],
  ] as const)('reads the %s API refusing a prompt as too long, through its SDK, as its input being too large', async (api, body) => {
    const server = createServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const baseURL = api === 'chat' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`;
      const config: LlmConfig = { api, apiKey: 'test', baseURL, model: 'm', stream: false };
      const request = { lines: ['user: hi'], force: false, chunk: { index: 1, count: 1 }, cut: false };
      const error = await createLlmSummariser(config, { stallTimeoutMs: 10_000, requestTimeoutMs: 10_000 })
        .summarise(request, { signal: new AbortController().signal, onProgress: () => undefined })
        .catch((e: unknown) => e);
      expect(inputTooLarge(error)).toMatch(/^bad request \(HTTP 400, (context_length_exceeded|prompt_too_long)\)/);
      // The provider's own text is read, never kept.
      expect((error as Error).message).not.toMatch(/250000|8192/);
    } finally {
      server.close();
    }
  });

  it('proposes a head under its target, and says why the rungs before it passed', async () => {
    const step = stepOf(messages, { contextWindow: Math.floor(total / 2) });
    const summaryFails: Rung = { name: 'summary', propose: async () => ({ passed: 'the summariser refused its input as too long (HTTP 400)' }) };
    const result = await propose(step, [RUNGS[0], summaryFails, trim]);
    if (!('proposal' in result)) throw new Error(`expected a proposal, got ${JSON.stringify(result)}`);
    expect(result.proposal.rung).toBe('trim');
    expect(result.note).toMatch(/^trim rung: the \d+ oldest message\(s\) dropped/);
    expect(result.passedRungs).toEqual({ masking: expect.any(String), summary: 'the summariser refused its input as too long (HTTP 400)' });
    const tokensAfter = result.proposal.candidate.reduce(
      (sum, e) => sum + (e.from === undefined ? step.snapshot.counter.count(e.message) : step.snapshot.tokens[e.from]),
      0,
    );
    expect(tokensAfter).toBeLessThanOrEqual(Math.floor(total / 4)); // half the window: the masking rung's share
  });

  it('is not tried when a rung before it answers', async () => {
    const calls: string[] = [];
    const answering: Rung = { name: 'summary', propose: async () => (calls.push('summary'), { refusal: 'empty', usage: {} }) };
    const counting: Rung = { name: 'trim', propose: async () => void calls.push('trim') };
    await propose(stepOf(messages, {}), [answering, counting]);
    expect(calls).toEqual(['summary']);
  });

  it('when it cannot fit either, the head a rung left behind is gated (and refused), or the job is refused with every reason', async () => {
    const step = stepOf(messages, { contextWindow: 20 });
    const leftBehind = { proposal: { rung: 'summary' } as Proposal, usage: { promptTokens: 7 } };
    const overWindow: Rung = { name: 'summary', propose: async () => ({ passed: 'its head would hold 900 tokens', usage: { promptTokens: 7 }, leftBehind }) };
    expect(await propose(step, [overWindow, trim])).toEqual({
      ...leftBehind,
      passedRungs: { summary: 'its head would hold 900 tokens', trim: expect.stringMatching(/^dropping every group/) },
    });
    const tooLarge: Rung = { name: 'summary', propose: async () => ({ passed: 'the summariser refused its input as too long' }) };
    const refused = await propose(step, [tooLarge, trim]);
    expect(refused).toMatchObject({
      refusal: expect.stringMatching(/^no rung could bring the head under its target \(summary: .*; trim: dropping every group/),
    });
  });
});
