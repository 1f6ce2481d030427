/**
 * The lease: the summarise activity's heartbeat is the lease refresh and its heartbeat
 * timeout the TTL. A slow summary that keeps heartbeating keeps its lease; a dead worker's
 * attempt is retried after the TTL; a lost attempt that finishes late never commits twice.
 */
import { Context } from '@temporalio/activity';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { auditRows } from '../src/db/session-store';
import { conversation, startTestStack, type TestStack, uniqueId } from './support/stack';

const TTL_MS = 1000;
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
    stack.llm.script({ chunks: 20, chunkDelayMs: 250 }); // about 5 TTLs
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
    s.llm.script({ delayMs: 4 * TTL_MS, text: 'Late summary from the lost attempt.' }, { text: 'Summary from the retry.' });
    const result = await s.client.compact(root);
    expect(result.outcome).toBe('compacted');
    expect(result.messages.some((m) => typeof m.content === 'string' && m.content.includes('Summary from the retry.'))).toBe(true);

    const deadline = Date.now() + 20_000;
    while (!phases.some((p) => p.attempt === 1 && p.phase === 'committed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(phases.find((p) => p.attempt === 1 && p.phase === 'committed')).toMatchObject({ alreadyCommitted: true });
    expect(await childCount(s, root)).toBe(1);
    const transcript = await s.client.transcript(root);
    expect(transcript.messages.map(({ seq: _s, ...m }) => m)).toEqual(result.messages);
    expect(JSON.stringify(transcript.messages)).not.toContain('Late summary');
    expect(await s.client.audit()).toMatchObject({ forks: 0, orphans: 0 });
  });
});
