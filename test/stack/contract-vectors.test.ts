/**
 * The data plane as SQL functions, and the shared contract vectors (contract/vectors/*.json,
 * also run by the Python client's tests): every refused batch and session, the token
 * estimate, a sequence of appends with append keys, and the compact Update's validator.
 * The SQL functions are called directly here, past the TypeScript client's own validation,
 * so each case proves the function itself refuses the input and writes nothing.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { tokenCounterFor, tokenizerFor } from '../../src/compaction/token-counter';
import { estimateTokens } from '../../src/compaction/tokens';
import type { ChatMessage } from '../../src/compaction/messages';
import { PROJECT_ROOT } from '../../src/config';
import * as store from '../../src/db/session-store';
import { InvalidInputError, LineageClosedError, SessionConflictError, SessionNotFoundError } from '../../src/errors';
import { compactUpdate } from '../../src/workflows/contract';
import { uniqueId, useTestStack } from '../support/stack';

const vectors = (name: string) => JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'contract/vectors', name), 'utf8'));
const ERROR_TYPES = { InvalidInputError, SessionConflictError, SessionNotFoundError, LineageClosedError } as const;

describe('the data plane SQL functions', () => {
  const stack = useTestStack();
  const db = () => stack().db.db;
  const count = async (query: ReturnType<typeof sql>) => Number(((await db().execute(query)).rows[0] as { n: string }).n);
  const rowsOfLineage = (lineageId: string) =>
    count(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${lineageId}`);
  /** Creates a session, appends `messages` through session_append, and reads the token column it stored. */
  const storedEstimates = async (session: { sessionId: string; model?: string }, messages: ChatMessage[]) => {
    await store.createSession(db(), { ...session, mode: 'rotate' });
    await store.appendMessages(db(), session.sessionId, messages);
    const { rows } = await db().execute(sql`select token_estimate as t from messages where session_id = ${session.sessionId} order by seq`);
    return rows.map((r) => Number((r as { t: number }).t));
  };

  it.each(
    vectors('append-errors.json').cases as Array<{
      name: string;
      messages: unknown;
      field: string;
      message: string;
      appendKey?: string;
      tokenCounts?: number[];
    }>,
  )('session_append refuses: $name', async (vector) => {
    const id = uniqueId('vec-append');
    await store.createSession(db(), { sessionId: id, mode: 'rotate' });
    const error = await store
      .appendMessages(db(), id, vector.messages as ChatMessage[], vector.tokenCounts, undefined, { appendKey: vector.appendKey })
      .catch((e) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ field: vector.field, message: vector.message });
    expect(await rowsOfLineage(id)).toBe(0);
  });

  it.each(vectors('create-errors.json').cases as Array<Record<string, never>>)('session_create refuses: $name', async (vector: Record<string, unknown>) => {
    const existing = vector.existing as { mode?: 'rotate' | 'in_place'; source?: string } | undefined;
    const sessionId = existing ? uniqueId(String(vector.sessionId)) : String(vector.sessionId);
    if (existing) await store.createSession(db(), { sessionId, mode: existing.mode ?? 'rotate', source: existing.source });
    const before = await count(sql`select count(*) as n from lineages`);
    const error = await store
      .createSession(db(), {
        sessionId,
        mode: (vector.mode as 'rotate') ?? 'rotate',
        source: vector.source as string | undefined,
        compactAtTokens: vector.compactAtTokens as number | undefined,
        rungs: vector.rungs as string[] | undefined,
      })
      .catch((e) => e);
    expect(error).toBeInstanceOf(ERROR_TYPES[vector.type as keyof typeof ERROR_TYPES]);
    expect(error.message).toBe(String(vector.message).replace(JSON.stringify(String(vector.sessionId)), JSON.stringify(sessionId)));
    if (vector.field) expect(error.field).toBe(vector.field);
    expect(await count(sql`select count(*) as n from lineages`)).toBe(before);
  });

  it('stores the estimate of the vectors, which is also estimateTokens of the TypeScript code', async () => {
    const cases = vectors('token-estimates.json').cases as Array<{ message: ChatMessage; tokens: number }>;
    const stored = await storedEstimates(
      { sessionId: uniqueId('vec-tokens') },
      cases.map((c) => c.message),
    );
    expect(stored).toEqual(cases.map((c) => c.tokens));
    expect(cases.map((c) => estimateTokens(c.message))).toEqual(cases.map((c) => c.tokens));
  });

  it('counts the tokens of the vectors per model (token-counts.json); an unknown model gets the stored estimate', async () => {
    const { tokenizers, models, cases } = vectors('token-counts.json') as {
      tokenizers: Record<string, string>;
      models: string[];
      cases: Array<{ name: string; message: ChatMessage; tokens: Record<string, number> }>;
    };
    for (const [model, tokenizer] of Object.entries(tokenizers)) expect([model, tokenizerFor(model)]).toEqual([model, tokenizer]);
    expect(models.map(tokenizerFor)).toEqual(['o200k_base', 'cl100k_base', 'estimate']);
    for (const model of models) {
      const counter = tokenCounterFor(model);
      expect(cases.map((c) => [c.name, counter.count(c.message)])).toEqual(cases.map((c) => [c.name, c.tokens[model]]));
    }
    // The unknown model's column is what session_append stores when it is given no counts.
    const stored = await storedEstimates(
      { sessionId: uniqueId('vec-counts'), model: models[2] },
      cases.map((c) => c.message),
    );
    expect(stored).toEqual(cases.map((c) => c.tokens[models[2]]));
    // The vectors tell the encodings apart: a client that picked the wrong one would fail.
    expect(cases.some((c) => c.tokens[models[0]] !== c.tokens[models[1]])).toBe(true);
    expect(cases.some((c) => c.tokens[models[0]] !== c.tokens[models[2]])).toBe(true);
  });

  it('answers the sequence of appends of the vectors; a resend with its key stores nothing', async () => {
    const { compactAtTokens, steps } = vectors('append-results.json') as {
      compactAtTokens: number;
      steps: Array<{ appendKey?: string; messages: ChatMessage[]; tokenCounts?: number[]; expect: Record<string, unknown> }>;
    };
    const id = uniqueId('vec-results');
    await store.createSession(db(), { sessionId: id, mode: 'rotate', compactAtTokens });
    let ledger = 0;
    for (const step of steps) {
      const result = await store.appendMessages(db(), id, step.messages, step.tokenCounts, undefined, { appendKey: step.appendKey });
      expect(result).toEqual({ sessionId: id, lineageId: id, ...JSON.parse(JSON.stringify(step.expect).replaceAll('$SESSION', id)) });
      if (!result.replayed) ledger += step.messages.length;
      expect(await rowsOfLineage(id)).toBe(ledger);
    }
    // The same key for another batch is refused, not answered with the first result.
    await expect(store.appendMessages(db(), id, [{ role: 'user', content: 'different' }], undefined, undefined, { appendKey: 'k1' })).rejects.toMatchObject({
      name: 'InvalidInputError',
      field: 'appendKey',
    });
    expect(await rowsOfLineage(id)).toBe(ledger);
  });

  it('session_append stores each message exactly as sent and session_transcript returns it JSON-equal', async () => {
    const id = uniqueId('vec-verbatim');
    await store.createSession(db(), { sessionId: id, mode: 'rotate' });
    // Past the TypeScript client: fields the service does not know are kept, not refused, and
    // JSON text a tool returns stays a string (never parsed into a number or an object).
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }], metadata: { turn: 1 } },
      {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          { index: 0, id: 'call_0', type: 'function', function: { name: 'count', arguments: '{}' } },
          { index: 1, id: 'call_1', type: 'function', function: { name: 'probe', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_0', content: '42' },
      { role: 'tool', tool_call_id: 'call_1', content: '{"ok":true}', name: 'probe' },
      // The same id again in a later turn: accepted (pairing is by position).
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'count', arguments: '{"again":1}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: '"quoted"' },
    ];
    await store.appendMessages(db(), id, messages as unknown as ChatMessage[]);
    const transcript = await store.headTranscript(db(), id);
    expect(transcript).toMatchObject({ sessionId: id, dialect: 'openai-chat', seqs: [1, 2, 3, 4, 5, 6] });
    expect(transcript.messages).toEqual(messages);
    expect(transcript.messages.map((m) => m.content).slice(2, 4)).toEqual(['42', '{"ok":true}']);
    const { rows } = await db().execute(sql`select role from messages where session_id = ${id} order by seq`);
    expect(rows.map((r) => (r as { role: string }).role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'tool']);
  });

  it('maps not found and closed lineages to typed errors', async () => {
    await expect(store.appendMessages(db(), 'no-such-session', [{ role: 'user', content: 'x' }])).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(store.headTranscript(db(), 'no-such-session')).rejects.toBeInstanceOf(SessionNotFoundError);
    const id = uniqueId('vec-closed');
    await store.createSession(db(), { sessionId: id, mode: 'rotate' });
    await store.closeLineage(db(), id);
    await expect(store.appendMessages(db(), id, [{ role: 'user', content: 'x' }])).rejects.toBeInstanceOf(LineageClosedError);
  });

  it('concurrent appends with keys, each sent twice at once, land once each with gapless numbers', async () => {
    const id = uniqueId('vec-concurrent');
    await store.createSession(db(), { sessionId: id, mode: 'rotate' });
    const batches = Array.from({ length: 30 }, (_, i) => [{ role: 'user' as const, content: `message ${i}` }]);
    const results = await Promise.all(
      batches.flatMap((batch, i) => [0, 1].map(() => store.appendMessages(db(), id, batch, undefined, undefined, { appendKey: `key-${i}` }))),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(30);
    const transcript = await store.headTranscript(db(), id);
    expect(transcript.messages.map((m) => m.content).sort()).toEqual(batches.map((b) => b[0].content).sort());
    expect(transcript.seqs).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    const lineageSeqs = (await db().execute(sql`select lineage_seq as s from messages where session_id = ${id} order by lineage_seq`)).rows.map((r) =>
      Number((r as { s: number }).s),
    );
    expect(lineageSeqs).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it.each(vectors('compact-requests.json').cases as Array<{ name: string; request: Record<string, unknown>; type: string; field?: string }>)(
    'the compact Update validator refuses: $name',
    async (vector) => {
      const head = uniqueId('vec-compact');
      await stack().client.createSession({ sessionId: head });
      await stack().client.append(head, [{ role: 'user', content: 'hello' }]);
      const request = Object.fromEntries(Object.entries(vector.request).map(([k, v]) => [k, v === '$HEAD' ? head : v === '$1001' ? 'x'.repeat(1001) : v]));
      const handle = await stack().client.operator.workflowHandle(head);
      const error = await handle.executeUpdate(compactUpdate, { args: [request as never] }).catch((e) => e);
      expect(error.cause).toMatchObject({ type: vector.type });
      if (vector.field) expect(error.cause.message).toContain(`invalid ${vector.field}:`);
      expect((await handle.query('state')) as { compactions: number }).toMatchObject({ compactions: 0 });
    },
  );
});
