/**
 * The lease: the summarise activity's heartbeat is the lease refresh and its heartbeat
 * timeout the TTL. A slow summary that keeps heartbeating keeps its lease; a dead worker's
 * attempt is retried after the TTL; a lost attempt that finishes late never commits twice.
 */
import { Context } from '@temporalio/activity';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { auditRows } from '../../src/db/session-store';
import { conversation, startTestStack, type TestStack, uniqueId } from '../support/stack';
import { stateQuery } from '../../src/workflows/contract';
import { startFakeLlm } from '../support/fake-llm';
import { startTcpProxy } from '../support/tcp-proxy';

/** No lease shorter than 3 s: a loaded 2-core machine must not expire a healthy one. */
const TTL_MS = 3000;
let stack: TestStack | undefined;

afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

async function newSession(s: TestStack): Promise<string> {
  const sessionId = uniqueId('l');
  await s.client.createSession({ sessionId });
  await s.client.append(sessionId, conversation(15));
  return sessionId;
}

async function childCount(s: TestStack, parent: string): Promise<number> {
  const rows = await s.db.db.execute(sql`select count(*)::int as n from sessions where parent_session_id = ${parent}`);
  return (rows.rows[0] as { n: number }).n;
}

describe('the summariser lease', () => {
  it('a summary that streams for several TTLs keeps its lease and completes in one attempt', async () => {
    stack = await startTestStack({ env: { COMPACTION_LEASE_TTL_MS: String(TTL_MS) } });
    const root = await newSession(stack);
    stack.llm.script({ chunks: 20, chunkDelayMs: 750 }); // about 5 TTLs
    const started = Date.now();
    const result = await stack.client.compact(root);
    expect(Date.now() - started).toBeGreaterThan(4 * TTL_MS);
    expect(result.outcome).toBe('compacted');
    expect(stack.llm.requests).toHaveLength(1);
    const [row] = await auditRows(stack.db.db, root);
    expect(row).toMatchObject({ outcome: 'compacted', attempts: 1 });
  });

  it('an attempt whose worker process died is retried after the TTL and commits once', async () => {
    stack = await startTestStack({ env: { COMPACTION_LEASE_TTL_MS: String(TTL_MS) }, noWorker: true });
    const s = stack;
    const doomed = await s.spawnWorkerProcess();
    const root = await newSession(s);
    s.llm.script({ delayMs: 60_000 }); // the first attempt is mid-summary when its worker dies
    const pending = s.client.compact(root);
    await s.llm.waitForRequests(1);
    doomed.kill('SIGKILL');
    const killedAt = Date.now();
    await s.startWorker();
    const result = await pending;
    expect(result).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g1` });
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(TTL_MS * 0.9);
    expect(s.llm.requests).toHaveLength(2);
    expect(await childCount(s, root)).toBe(1);
    const [row] = await auditRows(s.db.db, root);
    expect(row).toMatchObject({ outcome: 'compacted', attempts: 2 });
  });

  it('a lost attempt that finishes after the retry committed writes nothing', async () => {
    const phases: Array<{ attempt: number; phase: string; alreadyCommitted?: boolean }> = [];
    stack = await startTestStack({
      // The stall guard must not end the lost attempt early: it has to get its late result.
      env: { COMPACTION_LEASE_TTL_MS: String(TTL_MS), COMPACTION_STALL_TIMEOUT_MS: '30000' },
      worker: {
        // Attempt 1 acts like a partitioned worker: it works on but its heartbeats never arrive.
        heartbeat: (details) => {
          const { attempt } = Context.current().info;
          phases.push({ attempt, ...(details as { phase: string; alreadyCommitted?: boolean }) });
          if (attempt > 1) Context.current().heartbeat(details);
        },
      },
    });
    const s = stack;
    const root = await newSession(s);
    s.llm.script({ delayMs: 2 * TTL_MS, text: 'Late summary from the lost attempt.' }, { text: 'Summary from the retry.' });
    const result = await s.client.compact(root);
    expect(result.outcome).toBe('compacted');
    expect(result.messages.some((m) => typeof m.content === 'string' && m.content.includes('Summary from the retry.'))).toBe(true);

    const deadline = Date.now() + 20_000;
    while (!phases.some((p) => p.attempt === 1 && p.phase === 'committed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(phases.find((p) => p.attempt === 1 && p.phase === 'committed')).toMatchObject({ alreadyCommitted: true });
    expect(await childCount(s, root)).toBe(1);
    const transcript = await s.client.transcript(root);
    expect(transcript.messages).toEqual(result.messages);
    expect(JSON.stringify(transcript.messages)).not.toContain('Late summary');
    expect(await s.client.operator.audit()).toMatchObject({ forks: 0, orphans: 0 });
  });

  it("an attempt frozen before its first write past the TTL writes nothing when it wakes; callers get the retry's commit", async () => {
    // A frozen worker may also hold a later attempt it had polled for: leave room for retries.
    stack = await startTestStack({ env: { COMPACTION_LEASE_TTL_MS: String(TTL_MS) }, noWorker: true, settings: { maxAttempts: 10 } });
    const s = stack;
    // Worker A reaches Postgres through a proxy the test can pause (A stalls at its first
    // write) and has an LLM of its own, so anything it summarises is seen.
    const database = new URL(s.workerDatabaseUrl);
    const proxy = await startTcpProxy({ host: database.hostname, port: Number(database.port) });
    const llmOfA = await startFakeLlm();
    try {
      database.port = String(proxy.port);
      // One activity slot: once A holds attempt 1, it polls for no other attempt while frozen.
      const frozen = await s.spawnWorkerProcess({ DATABASE_URL: database.toString(), OPENAI_BASE_URL: llmOfA.baseURL, WORKER_MAX_CONCURRENT_ACTIVITIES: '1' });
      const root = await newSession(s);
      // The run's first task (its closed-lineage check reads Postgres) is done: what the proxy
      // holds next is the summarise activity's first write.
      await (await s.client.operator.workflowHandle(root)).query(stateQuery);
      proxy.pause();
      s.llm.setDefault({ chunks: 8, chunkDelayMs: TTL_MS / 4 }); // the retry is still summarising (streaming) when A wakes
      const pending = s.client.compact(root);
      const deadline = Date.now() + 30_000;
      while (proxy.held() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(proxy.held()).toBeGreaterThan(0); // A's first statements are held: the fault landed
      frozen.kill('SIGSTOP');
      await s.startWorker(); // a later attempt, once A's lease expires
      await s.llm.waitForRequests(1, 90_000);
      frozen.kill('SIGCONT');
      proxy.resume();

      const result = await pending;
      expect(result).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g1` });
      const woke = Date.now() + 30_000;
      while (!frozen.output().includes('attempt superseded before its first write') && Date.now() < woke) await new Promise((r) => setTimeout(r, 50));
      expect(frozen.output()).toContain('attempt superseded before its first write');
      // A's frozen attempt wrote nothing: no summary was asked of A's LLM by any attempt that lost.
      expect(frozen.output()).toMatch(/attempt superseded before its first write[^]*?attempt: 1,/);
      expect(llmOfA.requests).toHaveLength(0);
      expect(await childCount(s, root)).toBe(1);
      const [row] = await auditRows(s.db.db, root);
      expect(row).toMatchObject({ outcome: 'compacted', childSessionId: `${root}--g1` });
      expect(row.attempts).toBeGreaterThanOrEqual(2);
      expect((await s.client.operator.audit()).lostMessages).toBe(0);
    } finally {
      await proxy.close();
      await llmOfA.close();
    }
  });
});
