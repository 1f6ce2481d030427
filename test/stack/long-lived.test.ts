/**
 * Long-lived lineages: continue-as-new with requests arriving across the boundary, the idle
 * timeout and restart from Postgres' state, and closing.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { CompactionCount } from '../../src/workflows/search-attributes';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { conversation, uniqueId, useTestStack, withClient } from '../support/stack';

const stack = useTestStack();

async function runsOf(lineageId: string): Promise<Array<{ runId: string; status: string }>> {
  const runs: Array<{ runId: string; status: string }> = [];
  for await (const wf of stack().temporal.workflow.list({ query: `WorkflowId = '${lineageWorkflowId(lineageId)}'` }))
    runs.push({ runId: wf.runId, status: wf.status.name });
  return runs;
}

/** For each run after the first: how many queued requests its input carried. */
async function carriedQueuesOf(lineageId: string): Promise<number[]> {
  const queues: number[] = [];
  for (const run of await runsOf(lineageId)) {
    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(lineageId), run.runId).fetchHistory();
    const payload = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
    const input = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as { carried?: { queue: unknown[] } };
    if (input.carried) queues.push(input.carried.queue.length);
  }
  return queues;
}

describe('continue-as-new', () => {
  it('requests arriving across run boundaries are none lost, none run twice, retries answered from carried state', async () => {
    await withClient(stack(), { settings: { maxCompactionsPerRun: 2 } }, async (client) => {
      const root = uniqueId('can');
      await client.createSession({ sessionId: root });
      await client.append(root, conversation(10));
      stack().llm.setDefault({ delayMs: 50 });
      const answered = new Map<string, { outcome: string; sessionId: string }>();
      const signalled: Array<{ sessionId: string; requestId: string }> = [];
      let head = root;
      for (let round = 0; round < 8; round++) {
        const requestId = `main-${round}`;
        // The main request, a signal for the same head, and a retry of an earlier request id.
        const [main] = await Promise.all([
          client.compact(head, { requestId }),
          client.requestCompaction(head, { requestId: `sig-${round}` }).then((id) => signalled.push({ sessionId: head, requestId: id })),
          round > 0 ? client.compact(root, { requestId: `main-${round - 1}` }).then((r) => answered.set(`retry-${round}`, r)) : undefined,
        ]);
        answered.set(requestId, main);
        expect(main.outcome).toBe('compacted');
        head = main.sessionId;
        await client.append(head, conversation(10).slice(1));
      }
      // Every retry got the first answer of its request id, not a new compaction or a stale.
      for (let round = 1; round < 8; round++) {
        expect(answered.get(`retry-${round}`)).toMatchObject({ outcome: 'compacted', sessionId: answered.get(`main-${round - 1}`)!.sessionId });
      }
      for (const { sessionId, requestId } of signalled) expect((await client.waitForResult(sessionId, requestId)).outcome).toMatch(/compacted|stale/);

      const runs = await runsOf(root);
      expect(runs.length).toBeGreaterThanOrEqual(4);
      expect(runs.filter((r) => r.status === 'RUNNING')).toHaveLength(1);
      // Each request id appears in exactly one audit row; eight compactions, eight generations.
      const rows = (await stack().db.db.execute(sql`select request_ids, outcome, generation from compactions where lineage_id = ${root} order by started_at`))
        .rows as Array<{ request_ids: string[]; outcome: string; generation: number }>;
      const ids = rows.flatMap((r) => r.request_ids);
      expect(new Set(ids).size).toBe(ids.length);
      expect(rows.filter((r) => r.outcome === 'compacted').map((r) => r.generation)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(stack().llm.requests).toHaveLength(8);
      const state = await client.operator.state(root);
      expect(state).toMatchObject({ headSessionId: head, generation: 8, compactions: 8 });
    });
  });
});

describe('continue-as-new under sustained load', () => {
  it('continues as new at its limit even while requests wait, carrying them: every caller answered, nothing run twice', async () => {
    await withClient(stack(), { settings: { maxCompactionsPerRun: 3 } }, async (client) => {
      const root = uniqueId('load');
      await client.createSession({ sessionId: root });
      await client.append(root, conversation(10));
      stack().llm.setDefault({ delayMs: 150 }); // requests pile up while each job runs
      let calls = 0;
      const answers: Array<{ outcome: string }> = [];
      const errors: unknown[] = [];
      let generation = 0;
      // Each caller knows only the head its own answers told it: late callers name an older
      // head, and their requests wait in the queue while a job runs.
      const caller = async (c: number) => {
        let head = root;
        for (let n = 0; generation < 10; n++) {
          await client.append(head, conversation(4).slice(1));
          calls++;
          try {
            const result = await client.compact(head, { requestId: `c${c}-${n}`, timeoutMs: 60_000 });
            answers.push(result);
            head = result.sessionId;
            generation = Math.max(generation, result.generation);
          } catch (error) {
            errors.push(error);
            return;
          }
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5].map(caller));
      expect(errors).toEqual([]);
      expect(answers).toHaveLength(calls); // every caller got its answer

      // Several continue-as-new points.
      const carriedQueues = await carriedQueuesOf(root);
      expect(carriedQueues.length).toBeGreaterThanOrEqual(3);

      // Nothing run twice: each request id is in at most one job.
      const twice = await stack().db.db.execute(sql`
        select r.id from compactions c, jsonb_array_elements_text(c.request_ids) as r(id)
        where c.lineage_id = ${root} group by r.id having count(*) > 1`);
      expect(twice.rows).toEqual([]);
      expect(await client.operator.audit()).toMatchObject({ forks: 0, orphans: 0, lostMessages: 0, duplicatedMessages: 0 });
    });
  });
});

describe('continue-as-new with a queue', () => {
  it('carries the requests waiting when the run reaches its limit; their callers get their answers from the next run', async () => {
    await withClient(stack(), { settings: { maxCompactionsPerRun: 2 } }, async (client) => {
      const root = uniqueId('carry');
      await client.createSession({ sessionId: root });
      await client.append(root, conversation(10));
      const first = await client.compact(root);
      await client.append(first.sessionId, conversation(10).slice(1));
      // The second compaction reaches the limit; while it runs, requests naming other sessions wait in the queue.
      stack().llm.script({ chunks: 6, chunkDelayMs: 400 });
      const second = client.compact(first.sessionId, { requestId: 'limit' });
      await stack().llm.waitForRequests(2);
      const waiting = await Promise.all([
        client.compact(root, { requestId: 'old-head-update', timeoutMs: 60_000 }),
        client.requestCompaction(root, { requestId: 'old-head-signal' }).then((id) => client.waitForResult(root, id, { timeoutMs: 60_000 })),
        second,
      ]);
      expect(waiting[2]).toMatchObject({ outcome: 'compacted', generation: 2 });
      expect(waiting[0]).toMatchObject({ outcome: 'stale', sessionId: waiting[2].sessionId, requestId: 'old-head-update' });
      expect(waiting[1]).toMatchObject({ outcome: 'stale', sessionId: waiting[2].sessionId, requestId: 'old-head-signal' });
      const queues = await carriedQueuesOf(root);
      expect(queues.some((n) => n > 0)).toBe(true); // a run started with the waiting requests carried
    });
  });
});

describe('idle lineages', () => {
  it('complete after the idle timeout and start again from Postgres on the next request', async () => {
    await withClient(stack(), { settings: { idleTimeoutMs: 1000 } }, async (client) => {
      const root = uniqueId('idle');
      await client.createSession({ sessionId: root });
      await client.append(root, conversation(10));
      const first = await client.compact(root);
      const deadline = Date.now() + 15_000;
      while ((await runsOf(root)).some((r) => r.status === 'RUNNING') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      expect((await runsOf(root)).map((r) => r.status)).toEqual(['COMPLETED']);

      await client.append(first.sessionId, conversation(10).slice(1));
      const second = await client.compact(first.sessionId);
      expect(second).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g2`, previousSessionId: first.sessionId, generation: 2 });
      expect((await runsOf(root)).map((r) => r.status).sort()).toEqual(['COMPLETED', 'RUNNING']);
      // A caller still holding the old head is stale in the new run too.
      expect(await client.compact(root)).toMatchObject({ outcome: 'stale', sessionId: second.sessionId });
      // The count survives the restart: it is the lineage's generation, not a counter of the run.
      expect(await client.operator.state(root)).toMatchObject({ generation: 2, compactions: 2 });
      const handle = await client.operator.workflowHandle(root);
      const deadlineSa = Date.now() + 10_000;
      let count: unknown;
      while (Date.now() < deadlineSa) {
        count = (await handle.describe()).typedSearchAttributes.get(CompactionCount);
        if (count === 2) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(count).toBe(2);
    });
  });
});
