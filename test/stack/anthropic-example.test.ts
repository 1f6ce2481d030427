/**
 * examples/anthropic-agent.ts works as written: its `runAnthropicAgent` runs a few turns
 * against the real stack (Temporal, Postgres, a worker) and the strict Anthropic fake
 * (test/support/strict-anthropic.ts) through the real `@anthropic-ai/sdk` client, with thinking
 * on and the example's own file-system tools. The fake answers with thinking blocks (signed,
 * remembered, required back byte-identical), `tool_use` blocks for the tools the request offers,
 * and 400 wherever Anthropic would. A low threshold makes the service compact between turns.
 *
 * Proven against the test's own ledger: every request the SDK sent and every reply it got (a
 * `fetch` of the test's), every batch the agent appended (a spy on `append`), in order:
 * - the provider saw every request and rejected none, and it does reject a broken head (a
 *   result without its call) and a thinking block changed by one character, so 0 could have
 *   been otherwise;
 * - at least 2 compactions during the run: distinct summaries in the heads sent, and audit rows;
 * - every head sent holds the latest user request verbatim, and only messages the agent
 *   appended (JSON-equal) or the service's summary;
 * - each reply was appended exactly as the SDK returned it, and every thinking block in a head
 *   sent is byte-identical (text and signature) to the one the provider issued.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { Message as AnthropicMessage, MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fileSystemTools, runAnthropicAgent, type TurnReport } from '../../examples/anthropic-agent';
import { dialectOf, type Message } from '../../src/compaction/dialects';
import { canonicalJson, jsonEqual } from '../../src/compaction/json';
import { auditRows } from '../../src/db/session-store';
import { startStrictAnthropic, type StrictAnthropicProvider } from '../support/strict-anthropic';
import { startTestStack, type TestStack, uniqueId } from '../support/stack';

/** Any model starting with `agent-model` is answered by the fake's seeded agent script. */
const MODEL = 'agent-model-example';
/** Estimated tokens: a turn's tool loop passes it, so the service compacts after most turns. */
const THRESHOLD_TOKENS = 1_000;
const REQUESTS = Array.from({ length: 7 }, (_, i) => `REQUEST-${i + 1}: look at the modules and tell me what module ${i + 1} does`);
/** The files the script's calls name (`src/module-<n>.ts`), ~700 characters each; some calls name none of them (is_error results). */
const FILES = Object.fromEntries(
  Array.from({ length: 30 }, (_, n) => [
    `src/module-${n}.ts`,
    `// module ${n}\n${Array.from({ length: 14 }, (_, k) => `export const m${n}_${k} = ${n * k};`).join('\n')}\n`,
  ]),
);
const HOLD_REASON = /tool loop is open with thinking on/;

type Block = Record<string, unknown> & { type?: unknown };
const blocksOf = (m: Message): Block[] => (Array.isArray(m.content) ? (m.content as Block[]) : []);
const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const anthropicDialect = dialectOf('anthropic');

/** What the test saw, in order: each append the agent made, each request the SDK sent with its answer. */
type Event = { kind: 'append'; messages: Message[] } | { kind: 'call'; request: MessageCreateParamsNonStreaming; status?: number; reply?: AnthropicMessage };

let stack: TestStack;
let provider: StrictAnthropicProvider;

beforeAll(async () => {
  provider = await startStrictAnthropic({ seed: 3, largeArgumentsChance: 0 });
  stack = await startTestStack({ env: { COMPACTION_TAIL_TOKENS: '200' } });
  // The summariser (the stack's fake OpenAI-compatible LLM) takes a little while, as a real one does.
  stack.llm.setDefault({ delayMs: 100 });
});

afterAll(async () => {
  await stack?.close();
  await provider?.close();
});

describe('examples/anthropic-agent.ts against the strict Anthropic provider', () => {
  it('runs its turns through compactions: every request accepted, thinking kept byte-identical, nothing but what was appended', async () => {
    const events: Event[] = [];
    const calls = () => events.filter((e): e is Extract<Event, { kind: 'call' }> => e.kind === 'call');
    // The real SDK, with a fetch of the test's that records each request body as sent and each
    // reply as received (what the SDK hands the agent).
    const recordingFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const event: Extract<Event, { kind: 'call' }> = { kind: 'call', request: JSON.parse(String(init?.body)) as MessageCreateParamsNonStreaming };
      events.push(event);
      const response = await fetch(input, init);
      event.status = response.status;
      if (response.ok) event.reply = JSON.parse(await response.clone().text()) as AnthropicMessage;
      return response;
    };
    const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: provider.url, maxRetries: 0, fetch: recordingFetch });
    const append = stack.client.append.bind(stack.client);
    const spy = vi.spyOn(stack.client, 'append').mockImplementation(async (sessionId, messages, options) => {
      events.push({ kind: 'append', messages: wire(messages) as Message[] });
      return append(sessionId, messages, options);
    });

    const sessionId = uniqueId('anthropic-example');
    const started = Date.now();
    let reports: TurnReport[];
    try {
      reports = await runAnthropicAgent({
        sessions: stack.client,
        anthropic,
        sessionId,
        requests: REQUESTS,
        model: MODEL,
        tools: fileSystemTools(FILES),
        compactAtTokens: THRESHOLD_TOKENS,
      });
    } finally {
      spy.mockRestore();
    }
    const elapsedMs = Date.now() - started;

    // Every request reached the provider and was accepted; every turn ended with an answer.
    const mine = provider.requests.filter((r) => r.model === MODEL);
    expect(provider.rejections.filter((r) => r.model === MODEL).map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    expect(mine.length).toBe(calls().length);
    expect(mine.every((r) => r.caller === 'agent' && r.status === 200)).toBe(true);
    expect(calls().every((c) => c.status === 200 && c.reply !== undefined)).toBe(true);
    expect(reports.map((r) => r.request)).toEqual(REQUESTS);
    expect(reports.reduce((n, r) => n + r.modelCalls, 0)).toBe(calls().length);
    expect(reports.every((r) => r.answer.length > 0)).toBe(true);

    // Walk the ledger in order, checking each head sent against what came before it.
    const appended = new Set<string>();
    const issued = new Map<string, string>(); // signature -> thinking text, as the provider sent it
    const summaries = new Set<string>();
    const violations: string[] = [];
    let latestRequest: Message | undefined;
    let thinkingResent = 0;
    let thinkingResentAfterCompaction = 0;
    let toolResults = 0;
    let errorResults = 0;
    let lastReply: AnthropicMessage | undefined;
    for (const [i, event] of events.entries()) {
      if (event.kind === 'append') {
        // A reply is appended next, on its own, exactly as the SDK returned it: role and content blocks.
        if (lastReply) {
          if (event.messages.length !== 1 || !jsonEqual(event.messages[0], wire({ role: 'assistant', content: lastReply.content })))
            violations.push(`event ${i}: the reply ${lastReply.id} was not appended as returned`);
          lastReply = undefined;
        }
        for (const m of event.messages) {
          appended.add(canonicalJson(m));
          if (m.role === 'user' && typeof m.content === 'string') latestRequest = m;
          for (const b of blocksOf(m)) {
            if (b.type !== 'tool_result') continue;
            toolResults++;
            if (b.is_error === true) errorResults++;
          }
        }
        continue;
      }
      if (lastReply) violations.push(`call at event ${i}: the reply ${lastReply.id} was never appended`);
      const head = event.request.messages as unknown as Message[];
      const summary = head.find((m) => anthropicDialect.isSummary(m));
      if (summary) summaries.add(canonicalJson(summary));
      if (!latestRequest || !head.some((m) => jsonEqual(m, latestRequest!))) violations.push(`call at event ${i}: the latest user request is not in the head`);
      for (const [n, m] of head.entries()) {
        if (!appended.has(canonicalJson(m)) && !anthropicDialect.isSummary(m))
          violations.push(`call at event ${i}: message ${n} is neither appended nor the summary: ${canonicalJson(m).slice(0, 120)}`);
      }
      // Thinking blocks as sent (parsed from the request's own bytes) against what was issued.
      for (const b of head.filter((m) => m.role === 'assistant').flatMap(blocksOf)) {
        if (b.type !== 'thinking') continue;
        thinkingResent++;
        if (summary) thinkingResentAfterCompaction++;
        if (issued.get(String(b.signature)) !== b.thinking) violations.push(`call at event ${i}: a thinking block is not the one issued under its signature`);
      }
      for (const b of event.reply?.content ?? []) if (b.type === 'thinking') issued.set(b.signature, b.thinking);
      lastReply = event.reply;
    }
    expect(violations).toEqual([]);
    expect(issued.size).toBeGreaterThan(0);
    expect(thinkingResent).toBeGreaterThan(0);
    expect(thinkingResentAfterCompaction).toBeGreaterThan(0);
    expect(toolResults).toBeGreaterThan(0);
    expect(errorResults, 'tool errors (a file that is not there) go back as is_error results').toBeGreaterThan(0);

    // At least two compactions during the run: seen in the heads sent, and in the audit.
    const rows = await auditRows(stack.db.db, sessionId);
    const compacted = rows.filter((r) => r.outcome === 'compacted');
    const held = rows.filter((r) => r.outcome === 'refused' && HOLD_REASON.test(r.reason ?? ''));
    console.log(
      `[anthropic-example] ${JSON.stringify({
        elapsedMs,
        turns: reports.length,
        modelCalls: calls().length,
        toolResults,
        errorResults,
        thinkingIssued: issued.size,
        thinkingResent,
        summariesSeen: summaries.size,
        compacted: compacted.length,
        held: held.length,
        outcomes: rows.map((r) => r.outcome),
        turnCompactions: reports.map((r) => r.compaction ?? '-'),
        rejected: provider.rejections.filter((r) => r.model === MODEL).length,
      })}`,
    );
    expect(summaries.size).toBeGreaterThanOrEqual(2);
    expect(compacted.length).toBeGreaterThanOrEqual(summaries.size);
    // The run met the hold the agent must live with: compactions asked for inside a tool loop
    // with thinking on were refused, and the agent compacted once the loop had closed.
    expect(held.length).toBeGreaterThan(0);
    // No gate had to refuse a head the planner built (holds aside: those are by design).
    expect(rows.filter((r) => r.gate !== null && r.gate !== 'smaller' && !HOLD_REASON.test(r.reason ?? '')).map((r) => `${r.gate}: ${r.reason}`)).toEqual([]);

    // The 0 above could have been otherwise: the same provider, through the same SDK, refuses the
    // final head with a result that answers no call, and the last head sent with one character of
    // a thinking block changed.
    const { messages: finalHead } = await stack.client.transcript(sessionId, { for: 'provider' });
    const orphan: Message = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_never_made', content: '42' }] };
    const hasThinking = (c: Extract<Event, { kind: 'call' }>) =>
      c.request.messages.some((m) => m.role === 'assistant' && blocksOf(m as unknown as Message).some((b) => b.type === 'thinking'));
    const withThinking = [...calls()].reverse().find(hasThinking)!;
    const altered = wire(withThinking.request.messages) as unknown as Message[];
    const block = altered.flatMap((m) => (m.role === 'assistant' ? blocksOf(m) : [])).find((b) => b.type === 'thinking')!;
    block.thinking = `${String(block.thinking)}.`;
    for (const broken of [[...finalHead, orphan], altered]) {
      const error = await anthropic.messages.create({ ...withThinking.request, messages: broken as unknown as MessageParam[] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    }
    expect(provider.rejections.filter((r) => r.model === MODEL).map((r) => r.rule)).toEqual(['AN-1', 'AN-7']);
  });
});
