/**
 * Floor (d): the ordered append, the least any session store that keeps its messages in order
 * must do. One transaction, shaped like floor (c)'s (begin, one statement, commit), whose one
 * statement locks the session's row (the UPDATE takes its row lock, so the appends of one
 * session are serialised as ours are), takes the next sequence numbers and inserts the batch
 * as jsonb rows numbered from them. No validation, no token counts, no lineage, no
 * auto-compaction state: what floor (d) leaves out is what ours adds. Benchmark-only.
 */
import type { Pool } from 'pg';

export const ORDERED_FLOOR_TABLES_SQL = `
create table if not exists bench_floor_sessions (id text primary key, next_seq integer not null default 0);
create table if not exists bench_floor_messages (session_id text not null, seq integer not null, body jsonb not null, primary key (session_id, seq));
`;

/** Creates the sessions floor (d) appends to (idempotent). */
export async function createOrderedFloorSessions(pool: Pool, ids: readonly string[]): Promise<void> {
  await pool.query('insert into bench_floor_sessions (id) select unnest($1::text[]) on conflict (id) do nothing', [ids]);
}

const APPEND = `with s as (update bench_floor_sessions set next_seq = next_seq + $2 where id = $1 returning next_seq - $2 as base)
insert into bench_floor_messages (session_id, seq, body)
select $1, s.base + t.ord, t.m from s, jsonb_array_elements($3::jsonb) with ordinality as t(m, ord)`;

/** Floor (d)'s unit of work: one ordered append of `batch` to session `id`, in its own transaction. */
export async function orderedFloorAppend(pool: Pool, id: string, batch: readonly unknown[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rowCount } = await client.query(APPEND, [id, batch.length, JSON.stringify(batch)]);
    if (rowCount !== batch.length) throw new Error(`floor (d): ${rowCount} rows for a batch of ${batch.length} (no session ${id}?)`);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
