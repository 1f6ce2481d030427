/**
 * The workflow alone prevents forks. Production keeps two database guards: the unique-child
 * index `sessions_one_child_per_parent` and the ended-session trigger
 * `messages_live_sessions_only`. Here both are DROPPED from a scratch database (this file's
 * own clone, and the storm's private Postgres), and the 50-caller concurrency scenario and a
 * storm of appends and compactions across several worker processes run against it. Still
 * no fork, no orphan, nothing lost, and exactly one summariser call per compaction job,
 * counted at the local LLM. The summariser is called before any commit check, so one call
 * per job shows that the workflow never ran two jobs on one head: the single-threaded
 * workflow is the lock, and the constraints are a second line (they stay in production, for
 * writers that bypass the workflow), not the lock.
 */
import { describe, expect, it } from 'vitest';
import { expectIntact } from '../chaos/checks';
import { guardsPresent, workerStorm } from '../chaos/scenarios';
import { summariserCallsPerHead } from '../support/fake-llm';
import { AppendLedger, ledgerProblems } from '../support/ledger';
import { childrenOf, conversation, uniqueId, useTestStack } from '../support/stack';

// A long lease: no healthy attempt is expired by a loaded machine, so every summariser call
// belongs to exactly one job and the counts below are exact.
const stack = useTestStack({ env: { COMPACTION_LEASE_TTL_MS: '15000' } });

async function dropGuards() {
  const pool = stack().db.pool;
  await pool.query('drop index if exists sessions_one_child_per_parent');
  await pool.query('drop trigger if exists messages_live_sessions_only on messages');
}

describe('with the fork guards dropped from the database', () => {
  it('the guards are really gone: a rogue second child would now be accepted', async () => {
    await dropGuards();
    expect(await guardsPresent(stack().db.pool)).toEqual([]);
    const root = uniqueId('g');
    await stack().client.createSession({ sessionId: root });
    await stack().client.append(root, conversation(15));
    const { sessionId: child } = await stack().client.compact(root);
    // Inside a transaction we roll back: without the index, a parent takes a second child.
    const client = await stack().db.pool.connect();
    try {
      await client.query('begin');
      await client.query('insert into sessions (id, lineage_id, parent_session_id, generation) values ($1, $2, $2, 1)', [`${root}-rogue`, root]);
      const { rows } = await client.query<{ n: number }>('select count(*)::int as n from sessions where parent_session_id = $1', [root]);
      expect(rows[0].n).toBe(2);
      // Without the trigger, a raw writer can write into the ended parent.
      await client.query(
        `insert into messages (session_id, seq, role, body, token_estimate) values ($1, 100000, 'user', '{"role":"user","content":"late"}', 1)`,
        [root],
      );
    } finally {
      await client.query('rollback');
      client.release();
    }
    expect(await childrenOf(stack(), root)).toEqual([child]);
  });

  it('50 concurrent callers (Updates and signals) with appends racing: one rotation, one summariser call, nothing lost', async () => {
    await dropGuards();
    expect(await guardsPresent(stack().db.pool)).toEqual([]);
    const ledger = new AppendLedger();
    const root = uniqueId('g');
    await stack().client.createSession({ sessionId: root, source: 'slack' });
    const history = conversation(15);
    ledger.record(root, history, await stack().client.append(root, history));
    stack().llm.setDefault({ delayMs: 1500, tagCalls: true });

    // Appends keep arriving through the client while the 50 callers wait on one summary.
    let appending = true;
    const appender = (async () => {
      for (let n = 0; appending; n++) {
        const batch = [{ role: 'user', content: `${root} racing append ${n}` }];
        ledger.record(root, batch, await stack().client.append(root, batch));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const updates = [];
    const signals = [];
    for (let i = 0; i < 50; i++) {
      if (i % 3 === 2) signals.push(stack().client.requestCompaction(root, { requestId: `sig-${i}` }));
      else updates.push(stack().client.compact(root, { requestId: `upd-${i}` }));
    }
    const answers = await Promise.all(updates);
    appending = false;
    await appender;
    const child = `${root}--g1`;
    for (const answer of answers) expect(answer).toMatchObject({ outcome: 'compacted', sessionId: child, generation: 1 });
    for (const requestId of await Promise.all(signals)) {
      expect(await stack().client.waitForResult(root, requestId)).toMatchObject({ outcome: 'compacted', sessionId: child });
    }

    // Our own counts: one child, one job, one call at the LLM.
    expect(await childrenOf(stack(), root)).toEqual([child]);
    const jobs = await stack().db.pool.query<{ n: number }>('select count(distinct id)::int as n from compactions where lineage_id = $1', [root]);
    expect(jobs.rows[0].n).toBe(1);
    const calls = summariserCallsPerHead(stack().llm.requests);
    expect(calls).toMatchObject({ total: 1, fromFirstHead: 1 });

    // Nothing appended was lost or landed in the ended parent, by our ledger; the audit agrees.
    const report = await ledger.check(stack().db.pool, { prompts: AppendLedger.prompts(stack().llm.requests) });
    expect(ledgerProblems(report)).toEqual([]);
    expect(report.checked).toBeGreaterThan(history.length);
    const late = await stack().db.pool.query(
      `select m.id from messages m join sessions s on s.id = m.session_id where s.id = $1 and m.created_at > s.ended_at`,
      [root],
    );
    expect(late.rows).toEqual([]);
    expect(await stack().client.operator.audit()).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0, lostMessages: 0, duplicatedMessages: 0 });
  });

  it('a storm of appends and forced compactions over two worker processes: no fork, one summariser call per job', async () => {
    const sessions = 3;
    const row = await workerStorm({
      workers: 2,
      sessions,
      seconds: 12,
      seed: Number(process.env.CHAOS_SEED ?? 20261130),
      // No kills: a killed attempt's call is legitimately repeated. A long lease: no healthy
      // attempt is expired by a loaded machine, so every call belongs to exactly one job.
      kills: false,
      dropGuards: true,
      tagCalls: true,
      env: { COMPACTION_LEASE_TTL_MS: '15000' },
    });
    console.log(
      `storm without guards: ${row.compactionsCommitted} commits, ${row.childSessions} children, ${row.calls!.total} summariser calls for ${row.summarisedJobs} jobs ` +
        `(${row.refusedAfterSummary} refused after summarising), at most ${row.calls!.maxFromOneHead} call(s) from one head, ${row.acknowledgedAppends} appends, ledger ${row.ledgerChecked} checked`,
    );
    expect(row.guardsDropped).toBe(true);
    // The tags travel: later calls name the call whose summary their head holds.
    expect(Object.keys(row.calls!.fromHeadOf).length).toBeGreaterThan(0);
    expectIntact(row);
    expect(row.appendErrors).toBe(0);
    expect(row.missingAppends).toBe(0);
    expect(row.compactionsCommitted).toBeGreaterThan(sessions);
    // Our own count of rotations (children in the sessions table) matches the commits.
    expect(row.childSessions).toBe(row.compactionsCommitted);
    // One summariser call per job that summarised, counted at the LLM.
    expect(row.calls!.total).toBe(row.summarisedJobs);
    if (row.refusedAfterSummary === 0) {
      // No head was summarised twice, and each lineage's first head once.
      expect(row.calls!.maxFromOneHead).toBe(1);
      expect(row.calls!.fromFirstHead).toBe(sessions);
      expect(row.calls!.total).toBe(row.childSessions);
    }
  });
});
