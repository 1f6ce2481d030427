/**
 * Summariser failures through the real openai client: final errors abort without retry and
 * leave the transcript untouched; transient ones are retried with backoff; the queue never
 * wedges. Also a commit that cannot create the child leaves nothing half done.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { auditRows } from '../../src/db/session-store';
import { conversation, startTestStack, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack({
  env: { COMPACTION_LEASE_TTL_MS: '3000', COMPACTION_MAX_ATTEMPTS: '3' },
  settings: { retryInitialIntervalMs: 100, retryMaximumIntervalMs: 300 },
});

async function newSession(): Promise<{ root: string; before: unknown[] }> {
  const root = uniqueId('f');
  await stack().client.createSession({ sessionId: root });
  await stack().client.append(root, conversation(15));
  return { root, before: (await stack().client.transcript(root)).messages };
}

describe('final summariser errors abort at once and keep the transcript', () => {
  it.each([
    ['auth (401)', { status: 401 }, /401/],
    ['quota (429 insufficient_quota)', { status: 429, errorCode: 'insufficient_quota' }, /429/],
    ['invalid request (400)', { status: 400 }, /400/],
  ])('%s', async (_name, behaviour, reason) => {
    const { root, before } = await newSession();
    stack().llm.script(behaviour);
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('aborted');
    expect(result.reason).toMatch(reason);
    expect(result.sessionId).toBe(root);
    expect(stack().llm.requests).toHaveLength(1);
    expect((await stack().client.transcript(root)).messages).toEqual(before);
    const [row] = await auditRows(stack().db.db, root);
    expect(row).toMatchObject({ outcome: 'aborted', attempts: 1 });

    // The queue goes on: the next request runs and compacts.
    const next = await stack().client.compact(root);
    expect(next.outcome).toBe('compacted');
  });
});

describe('transient summariser errors are retried', () => {
  it.each([
    ['server errors (500, 503)', [{ status: 500 }, { status: 503 }], 3],
    ['a dropped connection', [{ reset: true }], 2],
    ['a stream that stalls longer than the TTL', [{ chunks: 4, stallAfterChunks: 1 }], 2],
  ])('%s', async (_name, failures, expectedRequests) => {
    const { root } = await newSession();
    stack().llm.script(...(failures as object[]));
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('compacted');
    expect(stack().llm.requests).toHaveLength(expectedRequests);
    const [row] = await auditRows(stack().db.db, root);
    expect(row).toMatchObject({ outcome: 'compacted', attempts: expectedRequests });
  });

  it('a rate limit (429) waits for retry-after before the next attempt', async () => {
    const { root } = await newSession();
    stack().llm.script({ status: 429, headers: { 'retry-after-ms': '1500' } });
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('compacted');
    expect(stack().llm.requests).toHaveLength(2);
    expect(stack().llm.requests[1].at - stack().llm.requests[0].at).toBeGreaterThanOrEqual(1400);
  });

  it('gives up after the configured attempts, reports aborted, and the queue goes on', async () => {
    const { root, before } = await newSession();
    stack().llm.script({ status: 500 }, { status: 500 }, { status: 500 });
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('aborted');
    expect(result.reason).toMatch(/500/);
    expect(stack().llm.requests).toHaveLength(3);
    expect((await stack().client.transcript(root)).messages).toEqual(before);
    expect(await stack().client.compact(root)).toMatchObject({ outcome: 'compacted' });
  });
});

describe('a non-streamed summary', () => {
  it('that hangs is abandoned after the request timeout and retried', async () => {
    const own = await startTestStack({ env: { COMPACTION_STREAM: 'false', COMPACTION_REQUEST_TIMEOUT_MS: '1000' }, settings: { retryInitialIntervalMs: 100 } });
    try {
      const root = uniqueId('ns');
      await own.client.createSession({ sessionId: root });
      await own.client.append(root, conversation(15));
      own.llm.script({ delayMs: 10_000 });
      const started = Date.now();
      const result = await own.client.compact(root);
      expect(result.outcome).toBe('compacted');
      expect(Date.now() - started).toBeLessThan(8000); // did not wait out the hung request
      expect(own.llm.requests).toHaveLength(2);
      expect(own.llm.requests.every((r) => !r.body.stream)).toBe(true);
      const [row] = await auditRows(own.db.db, root);
      expect(row).toMatchObject({ outcome: 'compacted', attempts: 2 });
    } finally {
      await own.close();
    }
  });
});

describe('a commit that cannot create the child', () => {
  it('leaves the parent live, the lineage where it was, and no rows written', async () => {
    const { root, before } = await newSession();
    // A writer that bypassed the service took the child's id in another lineage.
    await stack().db.db.execute(sql`insert into lineages (id, head_session_id, mode) values (${`${root}--g1`}, ${`${root}--g1`}, 'rotate')`);
    await stack().db.db.execute(sql`insert into sessions (id, lineage_id) values (${`${root}--g1`}, ${`${root}--g1`})`);
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('aborted');
    expect(result.sessionId).toBe(root);
    const lineage = await stack().client.lineage(root);
    expect(lineage.sessions).toEqual([expect.objectContaining({ sessionId: root, endedAt: null, messageCount: before.length })]);
    expect((await stack().client.transcript(root)).messages).toEqual(before);
    const written = await stack().db.db.execute(sql`select count(*)::int as n from messages where session_id = ${`${root}--g1`}`);
    expect((written.rows[0] as { n: number }).n).toBe(0);
  });
});
