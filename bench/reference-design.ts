/**
 * Benchmark-only baseline: the reference agent's own design, on the same Postgres, with no
 * workflow. Tables of its own (ref_*), so our constraints do not protect it.
 *
 * - A lock row per session with a TTL lease (ref_locks) and a refresher that extends it every
 *   TTL/3 while the holder works.
 * - A caller that does not get the lock (the loser) returns its input unchanged.
 * - The summary is taken from a snapshot; at commit the rows appended after the snapshot's
 *   watermark are carried into the new child session (watermark carry), the parent is ended.
 * - The head of a lineage is its newest session that has not ended; appends go there.
 * Like the design it copies, the commit does not re-check the lease: a holder that lost its
 * lease while frozen still commits when it resumes.
 */
import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import type { Summariser } from '../src/activities/summariser';
import type { ChatMessage } from '../src/compaction/messages';

const REFERENCE_SCHEMA = `
create table if not exists ref_sessions (
  id text primary key, lineage_id text not null, parent_id text, watermark integer,
  created_at timestamptz not null default clock_timestamp(), ended_at timestamptz);
create index if not exists ref_sessions_lineage on ref_sessions (lineage_id);
create table if not exists ref_messages (
  id bigserial primary key, session_id text not null references ref_sessions(id), seq integer not null,
  role text not null, content text not null, lineage_seq integer, unique (session_id, seq));
create table if not exists ref_locks (session_id text primary key, holder text not null, expires_at timestamptz not null);
create table if not exists ref_lineage_counters (lineage_id text primary key, appended integer not null default 0);
`;

/** How many rows at the end of the snapshot are kept verbatim (the rest is summarised). */
const KEPT_TAIL = 4;

export type ReferenceOutcome = { outcome: 'compacted'; sessionId: string; previousSessionId: string } | { outcome: 'unchanged'; sessionId: string };

export interface ReferenceDesign {
  migrate(): Promise<void>;
  createSession(id: string): Promise<void>;
  head(lineageId: string): Promise<string>;
  append(lineageId: string, batch: ChatMessage[]): Promise<{ sessionId: string; lineageSeqs: number[] }>;
  compact(sessionId: string): Promise<ReferenceOutcome>;
  audit(lineageIds?: string[]): Promise<ReferenceAudit>;
}

export interface ReferenceAudit {
  /** Parents with more than one child. */
  forks: number;
  /** Children of a forked parent that are not on the chain of the lineage's current head. */
  orphans: number;
  committedCompactions: number;
  /** Appended rows (by lineage sequence) that the current head neither holds nor summarised. */
  lostMessages: number;
  duplicatedMessages: number;
}

const text = (m: ChatMessage) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));

export function createReferenceDesign(pool: Pool, summariser: Summariser, options: { leaseTtlMs: number }): ReferenceDesign {
  const tx = async <T>(fn: (c: PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const result = await fn(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  const lineageOf = async (sessionId: string) =>
    String((await pool.query('select lineage_id from ref_sessions where id = $1', [sessionId])).rows[0].lineage_id);
  const head = async (lineageId: string) =>
    String(
      (await pool.query('select id from ref_sessions where lineage_id = $1 and ended_at is null order by created_at desc limit 1', [lineageId])).rows[0].id,
    );

  return {
    async migrate() {
      await pool.query(REFERENCE_SCHEMA);
    },
    async createSession(id) {
      await tx(async (c) => {
        await c.query('insert into ref_sessions (id, lineage_id) values ($1, $1)', [id]);
        await c.query('insert into ref_lineage_counters (lineage_id) values ($1)', [id]);
      });
    },
    head,
    async append(lineageId, batch) {
      return tx(async (c) => {
        const sessionId = await head(lineageId);
        await c.query('select 1 from ref_sessions where id = $1 for update', [sessionId]);
        const { rows } = await c.query('update ref_lineage_counters set appended = appended + $2 where lineage_id = $1 returning appended', [
          lineageId,
          batch.length,
        ]);
        const last = Number(rows[0].appended);
        const next = Number((await c.query('select coalesce(max(seq), 0) as s from ref_messages where session_id = $1', [sessionId])).rows[0].s);
        const lineageSeqs = batch.map((_, i) => last - batch.length + 1 + i);
        for (const [i, m] of batch.entries()) {
          await c.query('insert into ref_messages (session_id, seq, role, content, lineage_seq) values ($1, $2, $3, $4, $5)', [
            sessionId,
            next + 1 + i,
            m.role,
            text(m),
            lineageSeqs[i],
          ]);
        }
        return { sessionId, lineageSeqs };
      });
    },
    async compact(sessionId) {
      const holder = randomUUID();
      const ttl = `${options.leaseTtlMs} milliseconds`;
      const acquired = await pool.query(
        `insert into ref_locks (session_id, holder, expires_at) values ($1, $2, now() + $3::interval)
         on conflict (session_id) do update set holder = excluded.holder, expires_at = excluded.expires_at
         where ref_locks.expires_at < now() returning holder`,
        [sessionId, holder, ttl],
      );
      if (acquired.rowCount === 0) return { outcome: 'unchanged', sessionId };
      const refresher = setInterval(
        () => {
          void pool
            .query('update ref_locks set expires_at = now() + $3::interval where session_id = $1 and holder = $2', [sessionId, holder, ttl])
            .catch(() => undefined);
        },
        Math.max(100, Math.floor(options.leaseTtlMs / 3)),
      );
      try {
        const snapshot = (await pool.query('select seq, role, content, lineage_seq from ref_messages where session_id = $1 order by seq', [sessionId]))
          .rows as Array<{ seq: number; role: ChatMessage['role']; content: string; lineage_seq: number | null }>;
        if (snapshot.length <= KEPT_TAIL + 1) return { outcome: 'unchanged', sessionId };
        const watermark = snapshot[snapshot.length - 1].seq;
        const lines = snapshot.slice(0, -KEPT_TAIL).map((r) => `${r.role}: ${r.content}`);
        const summary = await summariser.summarise(
          { lines, force: false, chunk: { index: 1, count: 1 }, cut: false },
          { signal: new AbortController().signal, onProgress: () => undefined },
        );
        const lineageId = await lineageOf(sessionId);
        const child = `${sessionId}~${holder.slice(0, 8)}`;
        await tx(async (c) => {
          await c.query('insert into ref_sessions (id, lineage_id, parent_id, watermark) values ($1, $2, $3, $4)', [child, lineageId, sessionId, watermark]);
          await c.query('update ref_sessions set ended_at = clock_timestamp() where id = $1', [sessionId]);
          const kept = [{ role: 'system', content: summary.text, lineage_seq: null }, ...snapshot.slice(-KEPT_TAIL)];
          // The watermark carry: rows appended to the parent after the snapshot.
          const carried = (
            await c.query('select role, content, lineage_seq from ref_messages where session_id = $1 and seq > $2 order by seq', [sessionId, watermark])
          ).rows;
          for (const [i, r] of [...kept, ...carried].entries()) {
            await c.query('insert into ref_messages (session_id, seq, role, content, lineage_seq) values ($1, $2, $3, $4, $5)', [
              child,
              i + 1,
              r.role,
              r.content,
              r.lineage_seq,
            ]);
          }
        });
        return { outcome: 'compacted', sessionId: child, previousSessionId: sessionId };
      } finally {
        clearInterval(refresher);
        await pool.query('delete from ref_locks where session_id = $1 and holder = $2', [sessionId, holder]).catch(() => undefined);
      }
    },
    async audit(lineageIds) {
      const filter = lineageIds ? 'where lineage_id = any($1)' : '';
      const args = lineageIds ? [lineageIds] : [];
      const sessions = (await pool.query(`select id, lineage_id, parent_id, watermark, ended_at, created_at from ref_sessions ${filter}`, args)).rows as Array<{
        id: string;
        lineage_id: string;
        parent_id: string | null;
        watermark: number | null;
        ended_at: Date | null;
        created_at: Date;
      }>;
      const children = new Map<string, string[]>();
      for (const s of sessions) if (s.parent_id) children.set(s.parent_id, [...(children.get(s.parent_id) ?? []), s.id]);
      const forks = [...children.values()].filter((c) => c.length > 1).length;
      const byId = new Map(sessions.map((s) => [s.id, s]));
      let orphans = 0;
      let lost = 0;
      let duplicated = 0;
      const lineages = [...new Set(sessions.map((s) => s.lineage_id))];
      for (const lineageId of lineages) {
        const headId = await head(lineageId);
        const chain: string[] = [];
        for (let s: string | null = headId; s; s = byId.get(s)!.parent_id) chain.unshift(s);
        const onChain = new Set(chain);
        orphans += sessions.filter((s) => s.lineage_id === lineageId && s.parent_id && !onChain.has(s.id)).length;
        const appended = Number((await pool.query('select appended from ref_lineage_counters where lineage_id = $1', [lineageId])).rows[0].appended);
        const kept = new Map<number, number>();
        const rows = (await pool.query('select session_id, seq, lineage_seq from ref_messages where session_id = any($1) and lineage_seq is not null', [chain]))
          .rows as Array<{ session_id: string; seq: number; lineage_seq: number }>;
        const nextOnChain = new Map(chain.slice(0, -1).map((s, i) => [s, chain[i + 1]]));
        const headSeqs = new Map<number, number>();
        for (const r of rows) {
          if (r.session_id === headId) headSeqs.set(r.lineage_seq, (headSeqs.get(r.lineage_seq) ?? 0) + 1);
          else if (r.seq <= (byId.get(nextOnChain.get(r.session_id)!)!.watermark ?? 0)) kept.set(r.lineage_seq, 1); // summarised by the chain
        }
        for (let k = 1; k <= appended; k++) if (!kept.has(k) && !headSeqs.has(k)) lost++;
        for (const n of headSeqs.values()) if (n > 1) duplicated += n - 1;
      }
      return { forks, orphans, committedCompactions: sessions.filter((s) => s.parent_id).length, lostMessages: lost, duplicatedMessages: duplicated };
    },
  };
}
