/**
 * The native rung on the real stack (Temporal dev server, Postgres, the worker with
 * NATIVE_COMPACTION on) against the strict fakes, through the real `openai` and
 * `@anthropic-ai/sdk` clients: per provider, a compaction answered by the provider's own
 * compaction (audit row rung 'native', why masking passed, the opaque item byte-exact in the
 * head and taken by the strict fake on the agent's next turn, the latest request verbatim, the
 * ledger in the summary message); each forced failure of the native call (an error, no
 * compaction item, `content: null`, a hung call) falls through to the summary within the same
 * job and still commits (the fault counted on the fake); a model switch: the next compaction
 * is the summary's, which replaces the opaque item instead of sending it again. Without the
 * native rung in RUNGS every one of these commits with 'summary' and the first assertion on
 * the rung fails.
 */
import Anthropic from '@anthropic-ai/sdk';
import { sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectOf, type DialectName, type Message } from '../../src/compaction/dialects';
import { jsonEqual } from '../../src/compaction/json';
import { holdsOpaqueItem } from '../../src/compaction/proposal';
import { LEDGER_HEADING } from '../../src/compaction/summary-structure';
import { auditRows } from '../../src/db/session-store';
import { sdkRequestInput, toAgentsItems } from '../support/agents-items';
import { uniqueId, useTestStack } from '../support/stack';
import { startStrictAnthropic, type StrictAnthropicProvider } from '../support/strict-anthropic';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';

const AGENT_MODEL = 'agent-model';
const FILLER = 'the design keeps every module small and its interface stable; ';

type Native = 'openai-responses' | 'openai-agents' | 'anthropic';

function userText(shape: 'openai-responses' | 'anthropic', text: string): Message {
  return shape === 'anthropic'
    ? { role: 'user', content: [{ type: 'text', text }] }
    : { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

function assistantText(shape: 'openai-responses' | 'anthropic', text: string): Message {
  return shape === 'anthropic'
    ? { role: 'assistant', content: [{ type: 'text', text }] }
    : { type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** A call the agent made after the latest request and has not answered yet, and the result it will append. */
function openCall(shape: 'openai-responses' | 'anthropic', n: number): { call: Message; result: Message } {
  return shape === 'anthropic'
    ? {
        call: { role: 'assistant', content: [{ type: 'tool_use', id: `toolu_open_${n}`, name: 'Read', input: { file_path: 'src/open.ts' } }] },
        result: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_open_${n}`, content: 'ok' }] },
      }
    : {
        call: { type: 'function_call', call_id: `call_open_${n}`, name: 'read_file', arguments: '{"path":"src/open.ts"}' },
        result: { type: 'function_call_output', call_id: `call_open_${n}`, output: 'ok' },
      };
}

/**
 * Turns of explanation (no tool outputs: masking cannot shrink them), then the latest request
 * and a call still open. Anthropic's middle is over its compaction trigger minimum (50,000 tokens).
 */
function conversation(name: Native, round: number): { messages: Message[]; latest: Message; result: Message } {
  const shape = name === 'anthropic' ? 'anthropic' : 'openai-responses';
  const repeats = shape === 'anthropic' ? 600 : 80;
  const messages: Message[] = [];
  for (let k = 0; k < 10; k++) {
    messages.push(userText(shape, `Round ${round}, request ${k}: explain part ${k} of src/module-${k}.ts in depth.`));
    messages.push(assistantText(shape, `Part ${k}: ${FILLER.repeat(repeats)}`));
  }
  const latest = userText(shape, `Round ${round}: now write the tests for src/module-9.ts, order ORD-${4411 + round}.`);
  const { call, result } = openCall(shape, round);
  const all = [...messages, latest, call];
  const converted = name === 'openai-agents' ? toAgentsItems([...all, result]) : [...all, result];
  const convertedResult = converted.pop()!;
  return { messages: converted, latest: converted.at(-2)!, result: convertedResult };
}

describe.each(['openai-responses', 'openai-agents', 'anthropic'] as const)('the native rung on the real stack (%s)', (name: Native) => {
  const stack = useTestStack({ noWorker: true });
  const dialect = dialectOf(name as DialectName);
  const provider = name === 'anthropic' ? 'anthropic' : 'openai';
  let responses: StrictResponsesProvider;
  let claude: StrictAnthropicProvider;

  beforeAll(async () => {
    responses = await startStrictResponses({ seed: 5, answersOnly: true });
    claude = await startStrictAnthropic({ seed: 5, answersOnly: true });
    responses.compaction.hangMs = 4_000;
    claude.compaction.hangMs = 4_000;
    const { config } = stack();
    await stack().startWorker({
      config: {
        ...config,
        native: {
          enabled: true,
          openai: { apiKey: 'test-key', baseURL: responses.url },
          anthropic: { apiKey: 'test-key', baseURL: claude.url },
          timeoutMs: 1_500,
        },
      },
    });
  });
  afterAll(async () => {
    await responses?.close();
    await claude?.close();
  });

  const compactRequests = () => (provider === 'anthropic' ? claude.compaction.requests : responses.compaction.requests).length;
  const faults = () => (provider === 'anthropic' ? claude.compaction.faults : responses.compaction.faults) as string[];

  /** The agent's next turn with this head (and the open call's result) through the real SDK; throws the provider's refusal. */
  async function nextTurn(head: readonly Message[], result: Message, model = AGENT_MODEL): Promise<void> {
    const messages = dialect.forProvider([...head, result]);
    if (provider === 'anthropic') {
      const client = new Anthropic({ apiKey: 'test-key', baseURL: claude.url, maxRetries: 0 });
      await client.messages.create({ model, max_tokens: 1024, messages: messages as unknown as Anthropic.MessageParam[] });
      return;
    }
    const client = new OpenAI({ apiKey: 'test-key', baseURL: responses.url, maxRetries: 0 });
    const input = name === 'openai-agents' ? sdkRequestInput(messages) : messages;
    await client.responses.create({ model, input: input as unknown as OpenAI.Responses.ResponseInputItem[], store: false });
  }

  async function lineage() {
    const id = uniqueId(`native-${name}`);
    const session = conversation(name, 1);
    await stack().client.createSession({ sessionId: id, dialect: name, model: AGENT_MODEL });
    await stack().client.append(id, session.messages);
    return { id, ...session };
  }

  it("answers with the provider's own compaction: rung 'native', the opaque item byte-exact and taken on the next turn", async () => {
    const { id, latest, result } = await lineage();
    const before = compactRequests();
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ outcome: 'compacted', rung: 'native', gate: null });
    expect(row.reason).toBe(`native rung: ${provider} compaction by model ${AGENT_MODEL}`);
    expect(row.passedRungs).toEqual({ masking: 'the lineage has neither a threshold nor a context window' });
    // One native call, and no summariser call.
    expect(compactRequests()).toBe(before + 1);
    expect(stack().llm.requests).toHaveLength(0);
    expect(row.summariserPromptTokens).toBeGreaterThan(0);
    // The row's costs are what the fake provider billed for its one compaction, read from the
    // usage it sent (Anthropic: the compaction iteration only, not the top-level usage); masking,
    // tried first, called no model.
    const masking = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0 };
    const bill = (provider === 'anthropic' ? claude : responses).compaction.billed.at(-1);
    expect(bill).toBeDefined();
    if (provider === 'openai') {
      const usage = responses.compaction.billed.at(-1)!;
      expect(row.costs).toEqual({
        masking,
        native: {
          inputTokens: usage.input_tokens,
          outputTokens: usage.output_tokens,
          cacheReadTokens: usage.input_tokens_details.cached_tokens,
          cacheWriteTokens: 0,
          calls: 1,
        },
      });
    } else {
      const [step] = claude.compaction.billed.at(-1)!.iterations;
      const tokens = {
        inputTokens: step.input_tokens + step.cache_read_input_tokens + step.cache_creation_input_tokens,
        outputTokens: step.output_tokens,
        cacheReadTokens: step.cache_read_input_tokens,
        cacheWriteTokens: step.cache_creation_input_tokens,
      };
      expect(row.costs).toEqual({ masking, native: { ...tokens, calls: 1, iterations: [{ type: 'compaction', ...tokens }] } });
    }

    const head = (await stack().client.transcript(answer.sessionId)).messages;
    expect(head.some((m) => jsonEqual(m, latest))).toBe(true);
    const summary = head.find((m) => dialect.isSummary(m))!;
    expect(dialect.textOf(summary)).toContain(LEDGER_HEADING);
    expect(dialect.textOf(summary)).toContain(`made by model ${AGENT_MODEL}`);
    const opaque = head.filter(holdsOpaqueItem);
    expect(opaque).toHaveLength(1);
    if (provider === 'openai') {
      const item = opaque[0];
      expect(responses.compaction.made.get(String(item.id))).toBe(AGENT_MODEL);
      expect(Object.keys(item).sort()).toEqual(['encrypted_content', 'id', 'type']);
    } else {
      const block = (opaque[0].content as Message[])[0];
      expect(opaque[0].role).toBe('assistant');
      expect(claude.compaction.made.get(String(block.encrypted_content))).toBe(AGENT_MODEL);
      expect(typeof block.content).toBe('string');
    }

    // The strict provider takes the head, opaque item and all, on the agent's next turn.
    const rejected = (provider === 'anthropic' ? claude : responses).rejections.length;
    await nextTurn(head, result);
    expect((provider === 'anthropic' ? claude : responses).rejections.length).toBe(rejected);
    // ... and refuses it from another model: the item is bound to the model that made it.
    await expect(nextTurn(head, result, `${AGENT_MODEL}-other`)).rejects.toMatchObject({ status: 400 });
  });

  const faultCases: Array<[string, string, RegExp]> =
    provider === 'anthropic'
      ? [
          ['error', 'an error', /^the provider's compaction failed: the provider answered 529/],
          ['no-block', 'no compaction block', /^the provider's compaction failed: no compaction block in the answer/],
          ['null-content', 'content: null', /^the provider's compaction failed: the compaction failed \(content: null\)$/],
          ['hang', 'a hung call', /^the provider's compaction failed: the call timed out after 1500 ms$/],
        ]
      : [
          ['error', 'an error', /^the provider's compaction failed: the provider answered 500/],
          ['no-item', 'no compaction item', /^the provider's compaction failed: expected exactly one compaction output item, got 0$/],
          ['hang', 'a hung call', /^the provider's compaction failed: the call timed out after 1500 ms$/],
        ];

  it.each(faultCases)('a native call that fails with %s (%s) falls through to the summary within the job, which commits', async (fault, _what, reason) => {
    const { id, latest, result } = await lineage();
    const before = compactRequests();
    faults().push(fault);
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    // The fault landed: one native call, answered with it.
    expect(compactRequests()).toBe(before + 1);
    expect(faults()).toHaveLength(0);
    expect(answer.outcome, answer.reason).toBe('compacted');
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ outcome: 'compacted', rung: 'summary' });
    expect(row.passedRungs?.native).toMatch(reason);
    expect(stack().llm.requests.length).toBeGreaterThan(0);
    const head = (await stack().client.transcript(answer.sessionId)).messages;
    expect(head.some((m) => jsonEqual(m, latest))).toBe(true);
    expect(head.some(holdsOpaqueItem)).toBe(false);
    await nextTurn(head, result);
  });

  it('after a model switch the next compaction is the summary, which replaces the opaque item instead of sending it again', async () => {
    const { id, result } = await lineage();
    const first = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect((await auditRows(stack().db.db, id))[0].rung).toBe('native');
    // The lineage moves to another model (an operator's change): only the old one reads the item.
    await stack().db.db.execute(sql`update lineages set model = ${`${AGENT_MODEL}-2`} where id = (select lineage_id from sessions where id = ${id})`);
    const more = conversation(name, 2);
    await stack().client.append(first.sessionId, [result, ...more.messages]);
    const before = compactRequests();
    const second = await stack().client.compact(first.sessionId, { timeoutMs: 60_000 });
    expect(second.outcome, second.reason).toBe('compacted');
    const rows = await auditRows(stack().db.db, id);
    expect(rows.at(-1)).toMatchObject({ outcome: 'compacted', rung: 'summary' });
    expect(rows.at(-1)!.passedRungs?.native).toBe(
      `the head's compaction item was made by ${provider} model ${AGENT_MODEL}, not ${AGENT_MODEL}-2: the summary replaces it`,
    );
    // The old item went to no provider, and is gone from the head.
    expect(compactRequests()).toBe(before);
    const head = (await stack().client.transcript(second.sessionId)).messages;
    expect(head.some(holdsOpaqueItem)).toBe(false);
    expect(head.some((m) => jsonEqual(m, more.latest))).toBe(true);
    await nextTurn(head, more.result, `${AGENT_MODEL}-2`);
  });

  it('a head whose opaque item the provider refuses (invalid_encrypted_content) is compacted by the summary, which replaces it', async () => {
    const { id, result } = await lineage();
    const first = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect((await auditRows(stack().db.db, id))[0].rung).toBe('native');
    // The stored item no longer verifies (as when the provider rotates its keys): its encrypted content changes.
    const path = provider === 'anthropic' ? sql`'{content,0,encrypted_content}'` : sql`'{encrypted_content}'`;
    const altered = await stack().db.db.execute(
      sql`update messages set body = jsonb_set(body, ${path}::text[], to_jsonb('tampered'::text)) where session_id = ${first.sessionId} and (body->>'type' = 'compaction' or body->'content'->0->>'type' = 'compaction')`,
    );
    expect(altered.rowCount).toBe(1);
    const more = conversation(name, 2);
    await stack().client.append(first.sessionId, [result, ...more.messages]);
    const before = compactRequests();
    const refusedBefore = (provider === 'anthropic' ? claude : responses).rejections.length;
    const second = await stack().client.compact(first.sessionId, { timeoutMs: 60_000 });
    expect(second.outcome, second.reason).toBe('compacted');
    // The native call was made with the item, and refused.
    expect(compactRequests()).toBe(before + 1);
    const rejections = (provider === 'anthropic' ? claude : responses).rejections.slice(refusedBefore);
    expect(rejections.map((r) => r.rule)).toEqual([provider === 'anthropic' ? 'AN-C' : 'RS-7']);
    const rows = await auditRows(stack().db.db, id);
    expect(rows.at(-1)).toMatchObject({ outcome: 'compacted', rung: 'summary' });
    expect(rows.at(-1)!.passedRungs?.native).toMatch(/^the provider's compaction failed: the provider answered 400/);
    const head = (await stack().client.transcript(second.sessionId)).messages;
    expect(head.some(holdsOpaqueItem)).toBe(false);
    await nextTurn(head, more.result);
  });

  it('compacts natively again on the same model: the previous item goes to the provider that made it, the new one replaces it', async () => {
    const { id, result } = await lineage();
    const first = await stack().client.compact(id, { timeoutMs: 60_000 });
    const old = (await stack().client.transcript(first.sessionId)).messages.find(holdsOpaqueItem)!;
    const more = conversation(name, 2);
    await stack().client.append(first.sessionId, [result, ...more.messages]);
    const second = await stack().client.compact(first.sessionId, { timeoutMs: 60_000 });
    expect(second.outcome, second.reason).toBe('compacted');
    expect((await auditRows(stack().db.db, id)).map((r) => r.rung)).toEqual(['native', 'native']);
    // The native input held the previous item, byte-exact.
    const sent = JSON.stringify((provider === 'anthropic' ? claude : responses).compaction.requests.at(-1)?.body ?? {});
    expect(sent).toContain(JSON.stringify(provider === 'anthropic' ? (old.content as Message[])[0] : old));
    const head = (await stack().client.transcript(second.sessionId)).messages;
    const opaque = head.filter(holdsOpaqueItem);
    expect(opaque).toHaveLength(1);
    expect(jsonEqual(opaque[0], old)).toBe(false);
    expect(head.some((m) => jsonEqual(m, more.latest))).toBe(true);
    await nextTurn(head, more.result);
  });
});
