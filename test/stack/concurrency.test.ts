/**
 * The fork the reference agent suffered, attempted every way we can think of, against the
 * real Temporal server and Postgres: concurrent Updates and signals for one head, two
 * independent client processes racing, and writers that bypass the workflow entirely.
 */
import { sql } from 'drizzle-orm';
import { Pool } from 'pg';
import { describe, expect, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { auditRows } from '../../src/db/session-store';
import { childrenOf, conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

async function newSession(): Promise<string> {
  const sessionId = uniqueId('c');
  await stack().client.createSession({ sessionId, source: 'slack' });
  await stack().client.append(sessionId, conversation(15));
  return sessionId;
}

describe('concurrent compactions of one head', () => {
  it('50 requests at once, Updates and signals mixed: one rotation, every caller gets the committed result', async () => {
    const root = await newSession();
    // A summary that takes a while, as a real one does: every request arrives while it runs.
    stack().llm.setDefault({ delayMs: 1500 });
    const updates: Array<Promise<Awaited<ReturnType<SessionsClient['compact']>>>> = [];
    const signalIds: Array<Promise<string>> = [];
    for (let i = 0; i < 50; i++) {
      if (i % 3 === 2) signalIds.push(stack().client.requestCompaction(root, { requestId: `sig-${i}` }));
      else updates.push(stack().client.compact(root, { requestId: `upd-${i}` }));
    }
    const answers = await Promise.all(updates);
    // More Updates than the server admits at once (10): the rest went by signal, unseen by callers.
    expect(stack().client.stats.updateLimitFallbacks).toBeGreaterThan(0);
    const child = `${root}--g1`;
    expect(answers).toHaveLength(34);
    for (const answer of answers) {
      expect(answer).toMatchObject({ outcome: 'compacted', sessionId: child, previousSessionId: root, generation: 1 });
    }
    expect(new Set(answers.map((a) => JSON.stringify(a.messages))).size).toBe(1);
    for (const requestId of await Promise.all(signalIds)) {
      expect(await stack().client.waitForResult(root, requestId)).toMatchObject({ outcome: 'compacted', sessionId: child });
    }
    expect(await childrenOf(stack(), root)).toEqual([child]);
    // One job for all fifty; one summary per attempt of it (a spurious lease timeout on a loaded
    // machine may add an attempt, never a second job).
    const jobs = await auditRows(stack().db.db, root);
    expect(jobs).toHaveLength(1);
    expect(stack().llm.requests.length).toBeGreaterThanOrEqual(1);
    expect(stack().llm.requests.length).toBeLessThanOrEqual(jobs[0].attempts);
    expect(await stack().client.operator.audit()).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0 });
  });

  it('two independent clients (the reference incident: main turn and review fork) rotate at most once', async () => {
    const root = await newSession();
    stack().llm.setDefault({ delayMs: 300 });
    const other = await SessionsClient.connect({ config: stack().config });
    try {
      const [a, b] = await Promise.all([stack().client.compact(root), other.compact(root)]);
      expect(a.sessionId).toBe(b.sessionId);
      expect(await childrenOf(stack(), root)).toEqual([a.sessionId]);
      expect([a.outcome, b.outcome]).toEqual(['compacted', 'compacted']);
    } finally {
      await other.close();
    }
  });

  it('requests for successive heads run one after another, each on the head it names', async () => {
    const root = await newSession();
    const first = await stack().client.compact(root);
    await stack().client.append(first.sessionId, conversation(15).slice(1));
    const [second, late] = await Promise.all([stack().client.compact(first.sessionId), stack().client.compact(root)]);
    expect(second).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g2`, previousSessionId: first.sessionId });
    expect(late.outcome).toBe('stale');
    expect(await childrenOf(stack(), root)).toEqual([first.sessionId]);
    expect(await childrenOf(stack(), first.sessionId)).toEqual([second.sessionId]);
  });
});

describe('writers that bypass the workflow', () => {
  it('cannot give a parent a second child', async () => {
    const root = await newSession();
    const { sessionId: child } = await stack().client.compact(root);
    await expect(
      stack().db.db.execute(sql`insert into sessions (id, lineage_id, parent_session_id, generation) values (${`${root}-rogue`}, ${root}, ${root}, 1)`),
    ).rejects.toMatchObject({ cause: { constraint: 'sessions_one_child_per_parent' } });
    expect(await childrenOf(stack(), root)).toEqual([child]);
  });

  it('cannot write into an ended session', async () => {
    const root = await newSession();
    await stack().client.compact(root);
    await expect(
      stack().db.db.execute(
        sql`insert into messages (session_id, seq, role, body, token_estimate) values (${root}, 1000, 'user', '{"role":"user","content":"late"}', 3)`,
      ),
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/has ended/) } });
  });

  it('a raw SQL writer racing compaction commits never lands a message in an ended session', async () => {
    const root = await newSession();
    const pool = new Pool({ connectionString: stack().env.DATABASE_URL, max: 4 });
    const acked: Array<{ id: number; sessionId: string; seq: number }> = [];
    let refused = 0;
    let writing = true;
    // Writers that bypass the client: read the head, insert after its last row, no lineage lock.
    const writer = async (w: number) => {
      for (let n = 0; writing; n++) {
        const { rows } = await pool.query<{ head: string }>('select head_session_id as head from lineages where id = $1', [root]);
        try {
          const inserted = await pool.query<{ id: string; seq: number }>(
            `insert into messages (session_id, seq, role, body, token_estimate)
             select $1, coalesce(max(seq), 0) + 1, 'user', jsonb_build_object('role', 'user', 'content', $2::text), 30 from messages where session_id = $1
             returning id, seq`,
            [rows[0].head, `raw writer ${w} message ${n}: ${'filler '.repeat(15)}`],
          );
          acked.push({ id: Number(inserted.rows[0].id), sessionId: rows[0].head, seq: inserted.rows[0].seq });
        } catch (error) {
          const message = (error as Error).message;
          if (/has ended/.test(message)) refused++;
          else if (!/duplicate key/.test(message)) throw error;
        }
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    try {
      let head = root;
      for (let i = 0; i < 8; i++) {
        // Wait (with a deadline) until the writers gave this head something to summarise: on a
        // loaded machine they may be slower than the compactions, and a head that all fits in
        // the kept tail is refused, rightly ("nothing to summarise").
        const deadline = Date.now() + 30_000;
        const liveRows = async () =>
          Number((await pool.query('select count(*) as n from messages where session_id = $1 and archived_at is null', [head])).rows[0].n);
        while ((await liveRows()) < 16 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        const result = await stack().client.compact(head);
        expect(result, JSON.stringify(result)).toMatchObject({ outcome: 'compacted' });
        head = result.sessionId;
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    expect(acked.length).toBeGreaterThan(20);
    // Every acknowledged raw row is in a live session, or in the snapshot its compaction read
    // (at or below the watermark), or carried into the child: none stranded in an ended session.
    const stranded = (
      await pool.query(
        `select m.id from messages m join sessions s on s.id = m.session_id
         where m.id = any($1::bigint[]) and s.ended_at is not null
           and not exists (select 1 from compactions c where c.parent_session_id = m.session_id and c.outcome = 'compacted' and m.seq <= c.watermark_seq)
           and not exists (select 1 from messages copy where copy.origin_message_id = m.id)`,
        [acked.map((a) => a.id)],
      )
    ).rows;
    await pool.end();
    expect(stranded).toEqual([]);
    expect((await stack().client.operator.audit()).writesAfterEnd).toBe(0);
    // The race was exercised: some writes met a session that had just ended.
    expect(refused).toBeGreaterThan(0);
  });

  it('an append addressed to the rotated parent lands in the head', async () => {
    const root = await newSession();
    const { sessionId: head } = await stack().client.compact(root);
    const appended = await stack().client.append(root, [{ role: 'user', content: 'written to the old id' }]);
    expect(appended.sessionId).toBe(head);
    expect((await stack().client.transcript(head)).messages.at(-1)).toMatchObject({ role: 'user', content: 'written to the old id' });
  });
});
