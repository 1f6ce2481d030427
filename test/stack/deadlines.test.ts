/**
 * Callers never wait forever and never get a second run or a wrong answer: deadlines and
 * AbortSignals on every wait, requests told apart as pending, unknown or answered, lost
 * requests as typed errors, answers that outlive workflow runs, closed lineages that stay
 * closed. Real Temporal, real Postgres.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { CallTimeoutError, LineageClosedError, RequestLostError } from '../../src/errors';
import { compactSignal, lineageWorkflowId, requestStatusQuery } from '../../src/workflows/contract';
import { conversation, latestRunStatus, uniqueId, useTestStack, withClient } from '../support/stack';

const stack = useTestStack();

async function newSession(turns = 12) {
  const id = uniqueId('dl');
  await stack().client.createSession({ sessionId: id });
  await stack().client.append(id, conversation(turns));
  return id;
}

describe('deadlines', () => {
  it('compact gives up at its deadline with CallTimeoutError, and the request can be waited for again', async () => {
    const id = await newSession();
    stack().llm.script({ chunks: 12, chunkDelayMs: 500 }); // about 6 s of streaming
    const requestId = uniqueId('req');
    const started = Date.now();
    const error = await stack()
      .client.compact(id, { requestId, timeoutMs: 1000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallTimeoutError);
    expect(error).toMatchObject({ requestId });
    expect(Date.now() - started).toBeLessThan(5000); // it did not wait for the summary
    // The compaction went on; its answer is there for the same id.
    expect(await stack().client.waitForResult(id, requestId, { timeoutMs: 60_000 })).toMatchObject({ outcome: 'compacted', requestId });
    expect(stack().llm.requests).toHaveLength(1);
  });

  it('an AbortSignal ends compact, waitForResult and closeSession waits', async () => {
    const id = await newSession();
    stack().llm.script({ chunks: 12, chunkDelayMs: 500 });
    const controller = new AbortController();
    const compacting = stack().client.compact(id, { signal: controller.signal });
    await stack().llm.waitForRequests(1);
    controller.abort();
    await expect(compacting).rejects.toBeInstanceOf(CallTimeoutError);

    const requestId = await stack().client.requestCompaction(id);
    const waiting = new AbortController();
    const waited = stack().client.waitForResult(id, requestId, { signal: waiting.signal });
    waiting.abort();
    await expect(waited).rejects.toBeInstanceOf(CallTimeoutError);

    // Closing waits for the queue; the running summary holds it past this deadline.
    await expect(stack().client.closeSession(id, { timeoutMs: 500 })).rejects.toBeInstanceOf(CallTimeoutError);
    await stack().client.closeSession(id, { timeoutMs: 60_000 });
  });

  it('a bad timeout is refused before anything is sent', async () => {
    const id = await newSession(2);
    await expect(stack().client.compact(id, { timeoutMs: -1 })).rejects.toMatchObject({ name: 'InvalidInputError', field: 'timeoutMs' });
    expect(stack().llm.requests).toHaveLength(0);
  });
});

describe('request status and lost requests', () => {
  it('the requestStatus query tells answered, pending and unknown apart', async () => {
    const id = await newSession();
    stack().llm.script({ chunks: 8, chunkDelayMs: 300 });
    const requestId = await stack().client.requestCompaction(id);
    await stack().llm.waitForRequests(1);
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(id));
    const during = await handle.query(requestStatusQuery, [requestId, 'never-sent']);
    expect(during).toEqual([
      { requestId, status: 'pending' },
      { requestId: 'never-sent', status: 'unknown' },
    ]);
    await stack().client.waitForResult(id, requestId, { timeoutMs: 60_000 });
    const [after] = await handle.query(requestStatusQuery, [requestId]);
    expect(after).toMatchObject({ requestId, status: 'answered', result: { outcome: 'compacted' } });
  });

  it('waiting for a request the workflow never got is RequestLostError, not an endless poll', async () => {
    await withClient(stack(), { requestLostAfterMs: 1500 }, async (client) => {
      const id = uniqueId('dl');
      await client.createSession({ sessionId: id });
      await expect(client.waitForResult(id, 'a-request-nobody-sent', { timeoutMs: 60_000 })).rejects.toBeInstanceOf(RequestLostError);
    });
  });

  it('waiting on a run that ended without the request is RequestLostError at once', async () => {
    const id = await newSession();
    await stack().client.closeSession(id);
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(id));
    // Another language's client signals the finished run's id: no run will answer.
    await expect(handle.signal(compactSignal, { sessionId: id, requestId: 'late' })).rejects.toThrow();
    await expect(stack().client.waitForResult(id, 'late', { timeoutMs: 60_000 })).rejects.toThrow(/run ended without it/);
  });
});

describe('answers outlive runs', () => {
  it('a request id answered by a run that completed while idle is answered the same way, never re-run', async () => {
    await withClient(stack(), { settings: { idleTimeoutMs: 1000 } }, async (client) => {
      const id = uniqueId('dl');
      await client.createSession({ sessionId: id });
      await client.append(id, conversation(12));
      const requestId = uniqueId('req');
      const first = await client.compact(id, { requestId });
      expect(first.outcome).toBe('compacted');
      expect(await latestRunStatus(stack(), id, 20_000)).not.toBe('RUNNING'); // the run that answered is gone

      const again = await client.compact(id, { requestId });
      expect(again).toMatchObject({ outcome: 'compacted', sessionId: first.sessionId, previousSessionId: id, generation: 1, requestId });
      expect(stack().llm.requests).toHaveLength(1);
      expect(await client.waitForResult(id, requestId, { timeoutMs: 10_000 })).toMatchObject({ outcome: 'compacted', sessionId: first.sessionId });
    });
  });
});

describe('a request id resent by signal after its run is gone', () => {
  it('is answered from Postgres, not run again, even when it names the head', async () => {
    await withClient(stack(), { settings: { idleTimeoutMs: 1000 } }, async (client) => {
      const id = uniqueId('resend');
      await client.createSession({ sessionId: id });
      await client.append(id, conversation(2)); // too short to summarise: refused, and the head stays
      const requestId = uniqueId('req');
      await client.requestCompaction(id, { requestId });
      expect(await client.waitForResult(id, requestId, { timeoutMs: 30_000 })).toMatchObject({ outcome: 'refused' });
      expect(await latestRunStatus(stack(), id, 20_000)).toBe('COMPLETED'); // the run that answered is gone

      // Now there is plenty to summarise: a second run of the same request id would compact.
      await client.append(id, conversation(12).slice(1));
      expect(await client.requestCompaction(id, { requestId })).toBe(requestId);
      expect(await client.waitForResult(id, requestId, { timeoutMs: 30_000 })).toMatchObject({ outcome: 'refused', sessionId: id, generation: 0 });
      // Our own ledger: the summariser was never called, and the head never moved.
      expect(stack().llm.requests).toHaveLength(0);
      expect((await client.transcript(id)).sessionId).toBe(id);
    });
  });
});

describe('a request that joined a running job', () => {
  it('is recorded with its job, so resent after its run is gone it is answered, not run again (in place)', async () => {
    await withClient(stack(), { settings: { idleTimeoutMs: 1000 } }, async (client) => {
      const id = uniqueId('joined');
      await client.createSession({ sessionId: id, mode: 'in_place' }); // the head keeps its id: a rerun would compact again
      await client.append(id, conversation(12));
      stack().llm.script({ chunks: 20, chunkDelayMs: 300 }); // ~6 s: room for the second caller to join
      const first = client.compact(id, { requestId: uniqueId('first') });
      await stack().llm.waitForRequests(1);
      const joinedId = uniqueId('joined-req');
      const joined = await client.compact(id, { requestId: joinedId });
      expect(joined).toMatchObject({ outcome: 'compacted', sessionId: id, generation: 1 });
      await first;
      expect(await latestRunStatus(stack(), id, 20_000)).toBe('COMPLETED'); // the run that answered is gone

      await client.append(id, conversation(12).slice(1)); // plenty to summarise again
      expect(await client.compact(id, { requestId: joinedId })).toMatchObject({ outcome: 'compacted', sessionId: id, generation: 1 });
      await client.requestCompaction(id, { requestId: joinedId });
      expect(await client.waitForResult(id, joinedId, { timeoutMs: 30_000 })).toMatchObject({ outcome: 'compacted', generation: 1 });
      // Our own ledger: one summariser call in all, and the joined id is in the job's row.
      expect(stack().llm.requests).toHaveLength(1);
      const rows = (await stack().db.db.execute(sql`select request_ids from compactions where lineage_id = ${id}`)).rows as Array<{ request_ids: string[] }>;
      expect(rows).toHaveLength(1);
      expect(rows[0].request_ids).toContain(joinedId);
    });
  });
});

describe('closed lineages stay closed', () => {
  it('requestCompaction is refused with LineageClosedError and nothing is sent', async () => {
    const id = await newSession();
    await stack().client.closeSession(id);
    await expect(stack().client.requestCompaction(id)).rejects.toBeInstanceOf(LineageClosedError);
    expect(stack().llm.requests).toHaveLength(0);
  });

  it('a signal-with-start from a starter that did not check completes at once, and no summary is paid', async () => {
    const id = await newSession();
    await stack().client.closeSession(id);
    // As another language's client might: start a fresh run with a compaction signal.
    const handle = await stack().temporal.workflow.signalWithStart('sessionLineageWorkflow', {
      workflowId: lineageWorkflowId(id),
      taskQueue: stack().config.temporal.taskQueue,
      args: [{ lineageId: id, headSessionId: id, generation: 0, mode: 'rotate' }],
      signal: compactSignal,
      signalArgs: [{ sessionId: id, requestId: 'from-elsewhere' }],
    });
    await handle.result();
    const { status } = await handle.describe();
    expect(status.name).toBe('COMPLETED');
    expect(stack().llm.requests).toHaveLength(0);
    const rows = await stack().db.db.execute(sql`select count(*)::int as n from compactions where lineage_id = ${id}`);
    expect((rows.rows[0] as { n: number }).n).toBe(0);
  });
});
