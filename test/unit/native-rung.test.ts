/**
 * The pure parts of the native rung: the head it proposes (our summary message with the binding
 * line and the ledger, then the provider's output byte-exact, then the latest request and the
 * tail) passes every gate in both layouts; the binding line reads back; Anthropic's usage is its
 * compaction iterations'; the rung passes, with its reason, wherever it does not apply, before
 * any call; a failed call is classified without the provider's text.
 */
import { APIConnectionTimeoutError, APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import type { CompactionActivityDeps, CompactSessionInput } from '../../src/activities/compaction/deps';
import { Heartbeat } from '../../src/activities/compaction/heartbeat';
import { native, nativeFailure } from '../../src/activities/compaction/native';
import { takeSnapshot } from '../../src/activities/compaction/snapshot';
import { anthropicUsage, NativeCompactionFailedError, type NativeCompaction } from '../../src/activities/native-compaction';
import { dialectOf, type DialectName, type Message } from '../../src/compaction/dialects';
import { runGates } from '../../src/compaction/gates';
import { emptyLedger } from '../../src/compaction/ledger';
import { DEFAULT_PLAN_OPTIONS, planCompaction } from '../../src/compaction/plan';
import { bindingLine, bindingOf, holdsOpaqueItem, nativeProposal } from '../../src/compaction/proposal';
import { SUMMARY_PREFIX } from '../../src/compaction/messages';
import { estimateTokens } from '../../src/compaction/tokens';
import type { StartedJob } from '../../src/db/jobs';
import type { LineageInfo } from '../../src/db/lineage-state';

const FILLER = 'the design keeps every module small; ';

function conversation(dialect: 'openai-responses' | 'anthropic', repeats = 40): Message[] {
  const user = (text: string): Message =>
    dialect === 'anthropic' ? { role: 'user', content: [{ type: 'text', text }] } : { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  const assistant = (text: string): Message =>
    dialect === 'anthropic'
      ? { role: 'assistant', content: [{ type: 'text', text }] }
      : { type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
  const messages: Message[] = [];
  for (let k = 0; k < 8; k++) messages.push(user(`Request ${k}: explain src/module-${k}.ts.`), assistant(`Part ${k}: ${FILLER.repeat(repeats)}`));
  messages.push(user('Now write the tests for src/module-7.ts, order ORD-4411.'));
  return messages;
}

describe('the native proposal', () => {
  it.each(['openai-responses', 'anthropic'] as const)(
    '%s: summary with binding and ledger, the opaque item byte-exact, the latest request kept; every gate passes',
    (name) => {
      const dialect = dialectOf(name);
      const messages = conversation(name);
      const tokens = messages.map((m) => estimateTokens(m, dialect));
      const plan = planCompaction(messages, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 0, minTailGroups: 1, dialect }, tokens);
      const item: Message =
        name === 'anthropic'
          ? { type: 'compaction', content: 'The user asked for coding work.', encrypted_content: 'EncC1' }
          : { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAA1' };
      const returned = name === 'anthropic' ? [] : plan.middle.map((i) => messages[i]).filter((m) => dialect.isRealUserRequest(m));
      const binding =
        name === 'anthropic' ? { provider: 'anthropic' as const, model: 'claude-x' } : { provider: 'openai' as const, model: 'gpt-x', itemId: 'cmp_1' };
      const proposal = nativeProposal(
        messages,
        messages.map((_, i) => i + 1),
        plan,
        dialect,
        { before: returned, item, readable: name === 'anthropic' ? 'The user asked for coding work.' : undefined, binding },
        emptyLedger(),
        { requestChars: 500, budgetTokens: 3000 },
      );
      expect(proposal.rung).toBe('native');
      const after = proposal.candidate.map((e) => e.message);
      const opaque = after.filter(holdsOpaqueItem);
      expect(opaque).toHaveLength(1);
      if (name === 'anthropic') expect(opaque[0]).toEqual({ role: 'assistant', content: [item] });
      else expect(opaque[0]).toBe(item);
      const summary = after[proposal.summaryIndices[0]];
      expect(bindingOf(dialect.textOf(summary))).toEqual(binding);
      // The provider's user messages are the middle's own rows (their sequence numbers name them later).
      for (const entry of proposal.candidate) if (dialect.isRealUserRequest(entry.message)) expect(entry.from).toBeDefined();
      const report = runGates({
        before: messages,
        after,
        tokensBefore: tokens.reduce((a, b) => a + b, 0),
        tokensAfter: after.reduce((sum, m) => sum + estimateTokens(m, dialect), 0),
        summaryIndices: proposal.summaryIndices,
        facts: proposal.demand,
        dialect,
      });
      expect(report.failed).toBeUndefined();
    },
  );

  it('the binding line reads back, and a text without one has none', () => {
    const binding = { provider: 'openai' as const, model: 'gpt-5.4 (2026)', itemId: 'cmp_9' };
    expect(bindingOf(`Summary.\n${bindingLine(binding)}\nmore`)).toEqual(binding);
    expect(bindingOf(bindingLine({ provider: 'anthropic', model: 'claude-x' }))).toEqual({ provider: 'anthropic', model: 'claude-x' });
    expect(bindingOf('A summary that mentions a provider compaction in passing.')).toBeUndefined();
  });
});

describe("Anthropic's compaction usage", () => {
  it('is the sum of the compaction iterations, not the top-level usage', () => {
    const iteration = (type: string, input: number, output: number, cached = 0) => ({
      type,
      input_tokens: input,
      output_tokens: output,
      cache_read_input_tokens: cached,
    });
    const usage = { input_tokens: 5, output_tokens: 1, iterations: [iteration('compaction', 60_000, 300, 100), iteration('message', 900, 40)] };
    expect(anthropicUsage(usage)).toEqual({ promptTokens: 60_000, completionTokens: 300, cachedPromptTokens: 100 });
    expect(anthropicUsage({ input_tokens: 7, output_tokens: 2 })).toEqual({ promptTokens: 7, completionTokens: 2, cachedPromptTokens: 0 });
  });
});

const lineage: LineageInfo = {
  lineageId: 'l',
  headSessionId: 'l',
  generation: 0,
  mode: 'rotate',
  dialect: 'openai-responses',
  source: null,
  compactAtTokens: null,
  model: 'gpt-x',
  contextWindow: null,
  closed: false,
  incarnation: 'inc-1',
};

/** The rung's step on `messages`; the native call records that it was made and fails the test if it is. */
function stepOf(messages: Message[], over: Partial<LineageInfo>, nativeDeps: NativeCompaction | undefined, input: Partial<CompactSessionInput> = {}) {
  const deps = {
    plan: { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 0, minTailGroups: 1 },
    ledger: { percent: 10, maxTokens: 3000, requestChars: 500 },
    native: nativeDeps,
    heartbeatIntervalMs: 1000,
  } as unknown as CompactionActivityDeps;
  const rows = messages.map((body, i) => ({
    id: i + 1,
    seq: i + 1,
    body,
    tokenEstimate: Math.ceil(JSON.stringify(body).length / 4),
    lineageSeq: i + 1,
    originMessageId: null,
  }));
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
  const full = { force: false, ...input } as CompactSessionInput;
  const snapshot = takeSnapshot({ job, lineage: { ...lineage, ...over }, ledger: null, rows } as unknown as StartedJob, full, deps);
  return { snapshot, input: full, deps, heartbeat: new Heartbeat(() => {}) };
}

describe('the native rung passes, before any call, where it does not apply', () => {
  const refuse = async () => {
    throw new Error('no call expected');
  };
  const configured: NativeCompaction = { calls: { openai: refuse, anthropic: refuse }, models: {}, timeoutMs: 1000 };
  const cases: Array<[string, DialectName, Partial<LineageInfo>, NativeCompaction | undefined, Partial<CompactSessionInput>, string | RegExp]> = [
    ['another dialect', 'openai-chat', {}, configured, {}, 'the openai-chat dialect has no provider compaction'],
    ['no endpoint', 'openai-responses', {}, { ...configured, calls: {} }, {}, "no openai endpoint is configured for the provider's own compaction"],
    ['a focused request', 'openai-responses', {}, configured, { focusTopic: 'tests' }, 'a focused request asks for our summary'],
    ['no model', 'openai-responses', { model: null }, configured, {}, 'the lineage names no model and none is configured for openai'],
    ['under the trigger minimum', 'anthropic', {}, configured, {}, /^the middle holds \d+ tokens, under Anthropic's compaction trigger minimum of 50000$/],
  ];
  it.each(cases)('%s', async (_what, name, over, deps, input, reason) => {
    const messages =
      name === 'openai-chat'
        ? [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'hello' },
            { role: 'user', content: 'more' },
          ]
        : conversation(name === 'anthropic' ? 'anthropic' : 'openai-responses');
    const result = await native.propose(stepOf(messages, { ...over, dialect: name }, deps, input));
    expect(result).toMatchObject({ passed: typeof reason === 'string' ? reason : expect.stringMatching(reason) });
  });

  it('off (the default): a pass without a reason, so the audit row is as before', async () => {
    expect(await native.propose(stepOf(conversation('openai-responses'), {}, undefined))).toBeUndefined();
  });

  it('a head whose compaction item another model made', async () => {
    const messages: Message[] = [
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: `${SUMMARY_PREFIX}\n${bindingLine({ provider: 'openai', model: 'gpt-old', itemId: 'cmp_1' })}` }],
      },
      { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAA1' },
      ...conversation('openai-responses'),
    ];
    const step = stepOf(messages, {}, configured);
    expect(step.snapshot.dialect.isSummary(messages[0])).toBe(true);
    expect(await native.propose(step)).toEqual({ passed: "the head's compaction item was made by openai model gpt-old, not gpt-x: the summary replaces it" });
  });
});

describe('a failed native call, classified', () => {
  it('names the status and code, the timeout, or the missing item, never the provider text', () => {
    const refused = APIError.generate(
      400,
      { error: { message: 'secret detail', code: 'invalid_encrypted_content', type: 'invalid_request_error' } },
      'secret detail',
      new Headers(),
    );
    expect(nativeFailure(refused, 1000)).toBe('the provider answered 400 invalid_encrypted_content');
    expect(nativeFailure(new APIConnectionTimeoutError(), 1500)).toBe('the call timed out after 1500 ms');
    expect(nativeFailure(new NativeCompactionFailedError('the compaction failed (content: null)'), 1000)).toBe('the compaction failed (content: null)');
  });
});
