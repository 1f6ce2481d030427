/**
 * The data plane's limits hold for every caller, not only the clients (issue 33, point 4): raw
 * SQL against the real Postgres, as a service in another language or an attacker with a
 * connection would send it. Each refusal is a typed error (SQLSTATE SC400, DETAIL naming
 * InvalidInputError and the field, which every client maps to its InvalidInputError), and
 * nothing is written; the lineage appends and compacts on. Rows are counted with this file's
 * own SQL.
 *
 * - token counts: a count of 2^31-1 (which once overflowed the 32-bit head sum and wedged the
 *   lineage) and one over the documented bound of 10,000,000 are refused; sums past 2^31 of
 *   counts within the bound are kept in 64 bits;
 * - sizes: a 20,000,000-character message, 1,001 messages, 2,000,000+ characters of text and
 *   64 MiB+ of JSON in one append are refused;
 * - `session_erase` refuses a lineage still open unless the call closes it.
 */
import type { DatabaseError } from 'pg';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dataPlaneError } from '../../src/db/postgres-errors';
import { InvalidInputError } from '../../src/errors';
import { messyTranscript } from '../support/messy';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack({ env: { OPENAI_API_KEY: '' } });

/** Runs raw SQL; answers its first column, or the error Postgres raised. */
async function raw(text: string, values: unknown[] = []): Promise<{ value?: unknown; error?: DatabaseError }> {
  try {
    const { rows } = await stack().db.pool.query(text, values);
    return { value: Object.values(rows[0] as object)[0] };
  } catch (error) {
    return { error: error as DatabaseError };
  }
}

/** The refusal every client maps to InvalidInputError(field): SQLSTATE SC400 and its DETAIL. */
function expectRefused(outcome: { error?: DatabaseError }, field: string, message: RegExp) {
  expect(outcome.error, 'refused').toBeDefined();
  expect(outcome.error!.code).toBe('SC400');
  expect(JSON.parse(outcome.error!.detail!)).toMatchObject({ type: 'InvalidInputError', field });
  expect(outcome.error!.message).toMatch(message);
  const typed = dataPlaneError(outcome.error);
  expect(typed).toBeInstanceOf(InvalidInputError);
  expect(typed).toMatchObject({ field });
}

const n = async (query: ReturnType<typeof sql>) => Number(((await stack().db.db.execute(query)).rows[0] as { n: string | number }).n);
const messagesOf = (id: string) => n(sql`select count(*) as n from messages where session_id like ${`${id}%`}`);

async function fresh(prefix: string) {
  const id = uniqueId(prefix);
  await stack().client.createSession({ sessionId: id });
  return id;
}

describe('token counts', () => {
  it('a count of 2^31-1 is refused with a typed error, nothing is written, and the lineage appends and compacts on', async () => {
    const id = await fresh('tok');
    await stack().client.append(id, conversation(6));
    const before = await messagesOf(id);
    // The issue's statement, verbatim but for the id.
    expectRefused(await raw(`select session_append($1, '[{"role":"user","content":"hi"}]', null, '{2147483647}')`, [id]), 'tokenCounts', /0 to 10000000/);
    expectRefused(
      await raw(`select session_append($1, '[{"role":"user","content":"a"},{"role":"user","content":"b"}]', null, '{5,10000001}')`, [id]),
      'tokenCounts',
      /0 to 10000000/,
    );
    expect(await messagesOf(id)).toBe(before);
    // Not wedged: the next appends land, and the lineage compacts.
    const next = await raw(`select session_append($1, '[{"role":"user","content":"hi"}]', null, '{10000000}')`, [id]);
    expect(next.error).toBeUndefined();
    // A client of the previous release sends integer[] counts and five arguments: still answered.
    const older = await raw(`select session_append($1, '[{"role":"user","content":"again"}]', null, '{3}'::integer[], 300000::bigint)`, [id]);
    expect(older.error, String(older.error)).toBeUndefined();
    await stack().client.append(id, conversation(4).slice(1));
    expect((await stack().client.compact(id, { force: true })).outcome).toBe('compacted');
  });

  it('sums past 2^31 of counts within the bound are kept in 64 bits', async () => {
    const id = await fresh('tok-sum');
    const batch = JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}: {"ok":true}` })));
    const counts = `{${Array(300).fill(10_000_000).join(',')}}`;
    const first = await raw(`select session_append($1, $2::jsonb, null, $3)`, [id, batch, counts]);
    expect(first.error, String(first.error)).toBeUndefined();
    expect((first.value as { headTokens: number }).headTokens).toBe(3_000_000_000);
    const second = await raw(`select session_append($1, '[{"role":"user","content":"and on"}]', null, '{7}')`, [id]);
    expect((second.value as { headTokens: number }).headTokens).toBe(3_000_000_007);
    // Own SQL: the stored head and the rows' sum agree.
    expect(await n(sql`select head_tokens as n from lineages where id = ${id}`)).toBe(3_000_000_007);
    expect(await n(sql`select sum(token_estimate) as n from messages where session_id = ${id}`)).toBe(3_000_000_007);
  });
});

describe('sizes', () => {
  it('a 20,000,000-character message, 1,001 messages, over 2,000,000 characters or 64 MiB of JSON in one append are refused; nothing is written', async () => {
    const id = await fresh('size');
    await stack().client.append(id, messyTranscript('openai-chat', 5, 3));
    const before = await messagesOf(id);
    expectRefused(
      await raw(`select session_append($1, jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat('x', 20000000))))`, [id]),
      'messages[0]',
      /is 20000000 characters; at most 200000/,
    );
    expectRefused(
      await raw(`select session_append($1, (select jsonb_agg(jsonb_build_object('role', 'user', 'content', 'm' || i)) from generate_series(1, 1001) i))`, [id]),
      'messages',
      /holds 1001 messages; at most 1000 per append/,
    );
    expectRefused(
      await raw(
        `select session_append($1, (select jsonb_agg(jsonb_build_object('role', 'user', 'content', repeat('y', 190000))) from generate_series(1, 11) i))`,
        [id],
      ),
      'messages',
      /total 2090000 characters; at most 2000000 per append/,
    );
    // Tool-call arguments are not readable text: the append's JSON bound holds them.
    expectRefused(
      await raw(
        `select session_append($1, jsonb_build_array(jsonb_build_object('role', 'assistant', 'content', null, 'tool_calls',
           jsonb_build_array(jsonb_build_object('id', 'call_1', 'type', 'function', 'function',
             jsonb_build_object('name', 'write_file', 'arguments', repeat('z', 67108864)))))))`,
        [id],
      ),
      'messages',
      /bytes of JSON; at most 67108864 per append/,
    );
    expect(await messagesOf(id)).toBe(before);
    // At the limits themselves: stored.
    const atLimit = await raw(`select session_append($1, jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat('é', 200000))))`, [id]);
    expect(atLimit.error, String(atLimit.error)).toBeUndefined();
    expect(await messagesOf(id)).toBe(before + 1);
  });
});

describe('session_erase', () => {
  it('refuses a lineage that is still open unless the call closes it', async () => {
    const id = await fresh('erase-open');
    await stack().client.append(id, messyTranscript('openai-chat', 6, 3));
    const rows = await messagesOf(id);
    expectRefused(await raw('select session_erase($1)', [id]), 'close', /is still open/);
    expectRefused(await raw('select session_erase($1, false)', [id]), 'close', /is still open/);
    expect(await messagesOf(id)).toBe(rows);
    expect(await n(sql`select count(*) as n from lineages where id = ${id}`)).toBe(1);
    const erased = await raw('select session_erase($1, true)', [id]);
    expect(erased.error, String(erased.error)).toBeUndefined();
    expect(erased.value).toMatchObject({ lineageId: id, messages: rows, sessions: 1 });
    expect(await n(sql`select count(*) as n from lineages where id = ${id}`)).toBe(0);
    expect(await messagesOf(id)).toBe(0);
    // A closed lineage needs no `close`.
    const closed = await fresh('erase-closed');
    await stack().db.db.execute(sql`update lineages set closed_at = now() where id = ${closed}`);
    expect((await raw('select session_erase($1)', [closed])).error).toBeUndefined();
  });
});
