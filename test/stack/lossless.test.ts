/**
 * Every message comes back as it went in, and every provider's agent gets a head it accepts,
 * on the real stack, for every dialect and both modes: messy generated transcripts (what the
 * real corpus taught us) with arbitrary JSON in fields the service does not know are stored,
 * read back JSON-equal, compacted twice, and each new head is checked with the dialect's
 * strict provider on the provider view, for the latest request verbatim, and for every kept
 * or carried message JSON-equal to one that was appended (by this test's own ledger).
 */
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';
import { canonicalJson, jsonEqual, type JsonValue } from '../../src/compaction/json';
import { latestUserRequestIndex } from '../../src/compaction/plan';
import { messyTranscript } from '../support/messy';
import { uniqueId, useTestStack } from '../support/stack';
import { strictProviderCheck } from '../support/strict-check';

const stack = useTestStack();

/** Arbitrary JSON (strings that look like JSON or numbers, unicode, empty strings, nesting) from a seed. */
const extras = (seed: number, n: number): JsonValue[] =>
  fc.sample(fc.jsonValue({ maxDepth: 3 }), { seed, numRuns: n }).map((v) => JSON.parse(JSON.stringify(v)) as JsonValue);

/** The messy transcript with an unknown field of arbitrary JSON on some messages (and some looking like JSON text). */
function withUnknownFields(messages: Message[], seed: number): Message[] {
  const values = extras(seed, messages.length);
  return messages.map((m, i) => (i % 3 === 0 ? { ...m, x_vendor_meta: values[i] ?? null, x_json_text: i % 2 ? '{"a": 1}' : '42' } : m));
}

describe.each(DIALECT_NAMES.flatMap((d) => (['rotate', 'in_place'] as const).map((mode) => [d, mode] as const)))('%s, %s', (name, mode) => {
  it('stores every message JSON-equal, and each compacted head is accepted, keeps the latest request and only appended messages', async () => {
    const dialect = dialectOf(name);
    const id = uniqueId(`lossless-${name}`);
    await stack().client.createSession({ sessionId: id, dialect: name, mode });
    const ledger = new Map<string, number>();
    const appended: Message[] = [];
    const append = async (messages: Message[]) => {
      await stack().client.append(id, messages);
      for (const m of messages) ledger.set(canonicalJson(m), (ledger.get(canonicalJson(m)) ?? 0) + 1);
      appended.push(...messages);
    };
    const first = withUnknownFields(messyTranscript(name, 7 + name.length), 11);
    await append(first);
    const stored = await stack().client.transcript(id);
    expect(stored.messages).toHaveLength(first.length);
    stored.messages.forEach((m, i) => expect(jsonEqual(m, first[i]), `message ${i} comes back as it went in`).toBe(true));

    let headId = id;
    for (const round of [1, 2]) {
      const result = await stack().client.compact(headId, { force: true, requestId: `${id}-${round}` });
      headId = result.sessionId;
      expect(result.outcome, result.reason).toBe('compacted');
      const head = (await stack().client.transcript(result.sessionId)).messages;
      const view = (await stack().client.transcript(result.sessionId, { for: 'provider' })).messages;
      expect(await strictProviderCheck(name, view)).toBeUndefined();
      const latest = appended[latestUserRequestIndex(dialect, appended)];
      expect(head.some((m) => jsonEqual(m, latest))).toBe(true);
      const left = new Map(ledger);
      for (const m of head) {
        if (dialect.isSummary(m)) continue;
        const key = canonicalJson(m);
        expect(left.get(key) ?? 0, `a kept message was appended: ${key.slice(0, 200)}`).toBeGreaterThan(0);
        left.set(key, left.get(key)! - 1);
      }
      // compact() answers with the same head, exactly as stored.
      expect(result.messages.length).toBe(head.length);
      result.messages.forEach((m, i) => expect(jsonEqual(m, head[i])).toBe(true));
      if (round === 1) await append(withUnknownFields(messyTranscript(name, 100 + name.length, 8), 12));
    }
    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0]);
  });
});

it('the strict check this test relies on refuses a broken head in every dialect', async () => {
  const broken: Record<string, Message[]> = {
    'openai-chat': [{ role: 'tool', tool_call_id: 'call_1', content: '42' }],
    'openai-responses': [{ type: 'function_call_output', call_id: 'call_1', output: '42' }],
    'openai-agents': [{ type: 'function_call_result', callId: 'call_1', name: 'f', status: 'completed', output: { type: 'text', text: '42' } }],
    anthropic: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] }],
    gemini: [
      { role: 'user', parts: [{ text: 'hi' }] },
      { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] },
    ],
    'ai-sdk': [
      { role: 'user', content: 'hi' },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'f', output: { type: 'text', value: '42' } }] },
    ],
  };
  for (const name of DIALECT_NAMES) expect(await strictProviderCheck(name, broken[name]), name).toBeDefined();
});

describe.each(['rotate', 'in_place'] as const)('numbers JavaScript cannot hold (%s)', (mode) => {
  it('keep their exact digits in kept and carried copies: bodies are copied inside Postgres', async () => {
    const id = uniqueId(`bignum-${mode}`);
    await stack().client.createSession({ sessionId: id, mode });
    await stack().client.append(id, messyTranscript('openai-chat', 3, 8));
    // Another language's client can store what JSON allows and JavaScript rounds: raw SQL here.
    const exact = '{"role": "user", "content": "ship order 1", "x_order_id": 9007199254740993, "x_price": 0.1000000000000000055511151231257827}';
    await stack().db.db.execute(sql`select session_append(${id}, ${`[${exact}]`}::jsonb)`);
    const result = await stack().client.compact(id, { force: true });
    expect(result.outcome).toBe('compacted');
    const rows = (
      await stack().db.db.execute(
        sql`select body::text as body from messages where session_id = ${result.sessionId} and archived_at is null and body->>'content' = 'ship order 1'`,
      )
    ).rows as Array<{ body: string }>;
    expect(rows).toHaveLength(1); // the latest request, kept verbatim
    expect(rows[0].body).toContain('9007199254740993');
    expect(rows[0].body).toContain('0.1000000000000000055511151231257827');
  });
});
