/**
 * A lineage's compaction events (issue 37 §5) on the real stack: what a UI that shows
 * "compacting…" reads through SessionsClient.compactionEvents (SQL session_compaction_events
 * over the log migration 0024 keeps from the job rows). It sees in_progress, then completed
 * with the summary the head holds; failed for a refused job; cancelled when the service drops a
 * job (the lineage closed while it summarised, erased while it is followed, a job left running
 * by a run that ended); resuming from a cursor, in another client, gets exactly the rest; every
 * wait ends at its bound.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { SessionsClient, type CompactionEvent, type CompactionEventsOptions } from '../../src/client';
import { SUMMARY_PREFIX } from '../../src/compaction/messages';
import { closeLineage } from '../../src/db/session-store';
import { InvalidInputError, SessionNotFoundError } from '../../src/errors';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

async function sessionWith(turns: number): Promise<string> {
  const sessionId = uniqueId('ev');
  await stack().client.createSession({ sessionId });
  await stack().client.append(sessionId, conversation(turns));
  return sessionId;
}

/** Every event until `done` says so, or the stream ends (idle 5 s by default). */
async function collect(
  sessionId: string,
  options: CompactionEventsOptions & { done?: (events: CompactionEvent[]) => boolean; client?: SessionsClient } = {},
): Promise<CompactionEvent[]> {
  const { done, client = stack().client, ...rest } = options;
  const events: CompactionEvent[] = [];
  for await (const event of client.compactionEvents(sessionId, { pollIntervalMs: 50, idleTimeoutMs: 5000, ...rest })) {
    events.push(event);
    if (done?.(events)) break;
  }
  return events;
}

const statuses = (events: CompactionEvent[]) => events.map((e) => e.status);

describe('compactionEvents', () => {
  it('shows a UI in_progress while the job runs, then completed with the summary the head holds', async () => {
    const root = await sessionWith(12);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    stack().llm.script({ text: 'Goal: migrate modules. Completed: 28 modules.', until: () => released });
    const requestId = uniqueId('req');
    const compacted = stack().client.compact(root, { requestId });
    // The consumer sees the job in progress while the summariser is still held.
    const seen: CompactionEvent[] = [];
    for await (const event of stack().client.compactionEvents(root, { pollIntervalMs: 50, idleTimeoutMs: 20_000 })) {
      seen.push(event);
      if (event.status === 'in_progress') release();
      else break;
    }
    const result = await compacted;
    expect(result.outcome).toBe('compacted');
    expect(statuses(seen)).toEqual(['in_progress', 'completed']);
    const [started, completed] = seen;
    expect(started).toMatchObject({
      sessionUpdate: 'compaction_update',
      _meta: { lineageId: root, requestIds: [requestId], generation: 1, parentSessionId: root },
    });
    expect(started.summary).toBeUndefined();
    expect(started._meta.tokensAfter).toBeUndefined();
    expect(completed.compactionId).toBe(started.compactionId);
    expect(completed._meta).toMatchObject({ outcome: 'compacted', rung: 'summary', sessionId: result.sessionId, requestIds: [requestId] });
    expect(completed._meta.tokensBefore).toBeGreaterThan(completed._meta.tokensAfter!);
    expect(completed.error).toBeUndefined();
    // The summary is the head's summary message, marker removed.
    const summaryMessage = result.messages.find((m) => typeof m.content === 'string' && m.content.startsWith(SUMMARY_PREFIX));
    expect(completed.summary).toEqual([{ type: 'text', text: (summaryMessage!.content as string).slice(SUMMARY_PREFIX.length).trim() }]);
    expect(completed.summary![0].text).toContain('Goal: migrate modules.');
  });

  it('shows a refused job as failed, with its reason as the error', async () => {
    const root = await sessionWith(12);
    stack().llm.script({ text: 'an unhelpfully long summary. '.repeat(2000) });
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('refused');
    const events = await collect(root, { done: (e) => e.length === 2 });
    expect(statuses(events)).toEqual(['in_progress', 'failed']);
    expect(events[1].error).toBe(result.reason);
    expect(events[1]._meta).toMatchObject({ outcome: 'refused', reason: result.reason });
    expect(events[1].summary).toBeUndefined();
  });

  it('shows cancelled when the service drops the job: the lineage closed while it summarised', async () => {
    const root = await sessionWith(12);
    stack().llm.script({ until: () => closeLineage(stack().db.db, root) });
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('stale');
    const events = await collect(root, { done: (e) => e.length === 2 });
    expect(statuses(events)).toEqual(['in_progress', 'cancelled']);
    expect(events[1]._meta).toMatchObject({ outcome: 'stale', reason: 'the lineage was closed' });
    expect(events[1].error).toBeUndefined();
  });

  it('ends with cancelled for the job in progress when the lineage is erased while followed', async () => {
    const root = await sessionWith(12);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    stack().llm.script({ until: () => released });
    await stack().client.requestCompaction(root);
    const seen: CompactionEvent[] = [];
    try {
      for await (const event of stack().client.compactionEvents(root, { pollIntervalMs: 50, idleTimeoutMs: 20_000 })) {
        seen.push(event);
        if (event.status === 'in_progress') await stack().client.deleteLineage(root);
      }
    } finally {
      release();
    }
    expect(statuses(seen)).toEqual(['in_progress', 'cancelled']);
    expect(seen[1]).toMatchObject({ compactionId: seen[0].compactionId, cursor: seen[0].cursor, _meta: { reason: 'the lineage was erased' } });
  });

  it('logs a job left running by a run that ended as cancelled when the next job starts', async () => {
    const root = await sessionWith(12);
    // What a terminated run leaves: a job row still running, that nothing will decide.
    await stack().db.db.execute(
      sql`insert into compactions (id, lineage_id, parent_session_id, generation, request_ids, trigger, outcome) values (${`${root}/orphan`}, ${root}, ${root}, 1, '["r-orphan"]'::jsonb, 'signal', 'running')`,
    );
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('compacted');
    const events = await collect(root, { done: (e) => e.length === 4 });
    expect(events.map((e) => [e.compactionId === `${root}/orphan` ? 'orphan' : 'job', e.status])).toEqual([
      ['orphan', 'in_progress'],
      ['orphan', 'cancelled'],
      ['job', 'in_progress'],
      ['job', 'completed'],
    ]);
    expect(events[1]._meta.reason).toMatch(/a later job of the lineage started/);
    expect(events[1]._meta.outcome).toBeUndefined();
  });

  it('resumes from a cursor, in another client after a restart, with exactly the events after it', async () => {
    const root = await sessionWith(12);
    // The ledger: every request sent, and what it was answered.
    const ledger = new Map<string, string>();
    const compactOnce = async (refuse = false) => {
      const requestId = uniqueId('req');
      if (refuse) stack().llm.script({ text: 'an unhelpfully long summary. '.repeat(2000) });
      const { sessionId: head } = await stack().client.transcript(root);
      const result = await stack().client.compact(head, { requestId });
      ledger.set(requestId, result.outcome);
      await stack().client.append(root, conversation(12).slice(1));
    };
    await compactOnce();
    await compactOnce(true);
    // A consumer reads one event at a time and disconnects after three.
    const first = await collect(root, { limit: 1, done: (e) => e.length === 3 });
    expect(first).toHaveLength(3);
    const cursor = first[2].cursor;
    await compactOnce();
    await compactOnce();
    // Another client, as after a restart, resumes from the cursor it kept.
    const restarted = await SessionsClient.connect({ config: stack().config });
    let rest: CompactionEvent[];
    try {
      const lastJob = [...ledger.keys()].at(-1)!;
      rest = await collect(root, {
        client: restarted,
        after: cursor,
        limit: 2,
        done: (e) => e.some((x) => x._meta.requestIds.includes(lastJob) && x.status !== 'in_progress'),
      });
    } finally {
      await restarted.close();
    }
    const all = [...first, ...rest];
    // No loss, no duplicate: two events per request, in the order the jobs ran.
    const keys = all.map((e) => `${e.compactionId}:${e.status}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(all.map((e) => [e._meta.requestIds, e.status])).toEqual(
      [...ledger].flatMap(([requestId, outcome]) => [
        [[requestId], 'in_progress'],
        [[requestId], outcome === 'compacted' ? 'completed' : 'failed'],
      ]),
    );
    // The same as one read of the whole log, and the cursors keep their order.
    const whole = await stack().client.readCompactionEvents(root, { limit: 1000 });
    expect(whole.events.map((e) => e.cursor)).toEqual(all.map((e) => e.cursor));
    expect(whole).toMatchObject({ lineageId: root, cursor: all.at(-1)!.cursor, more: false });
    // Read from the last cursor: nothing more.
    expect(await stack().client.readCompactionEvents(root, { after: whole.cursor! })).toMatchObject({ events: [], cursor: whole.cursor, more: false });
    // A page that stops at its limit says there is more.
    expect(await stack().client.readCompactionEvents(root, { limit: 3 })).toMatchObject({ cursor: all[2].cursor, more: true });
  });

  it('never hands out a cursor past an event whose transaction is still open (no loss when an older writer commits late)', async () => {
    const root = await sessionWith(2);
    const job = (n: number) => `${root}/job-${n}`;
    for (const n of [1, 2])
      await stack().db.pool.query(
        `insert into compactions (id, lineage_id, parent_session_id, generation, request_ids, trigger, outcome) values ($1, $2, $2, 1, '[]'::jsonb, 'signal', 'stale')`,
        [job(n), root],
      );
    const early = await stack().db.pool.connect();
    try {
      // An older writer: its event is written first, and committed last.
      await early.query('begin');
      await early.query(`update compactions set outcome = 'refused', reason = 'late' where id = $1`, [job(1)]);
      await stack().db.pool.query(`update compactions set outcome = 'refused', reason = 'early' where id = $1`, [job(2)]);
      const before = await stack().client.readCompactionEvents(root);
      // The younger writer's event waits behind the open one: the cursor stays before both.
      expect(before.events.map((e) => [e.compactionId, e.status])).toEqual([
        [job(1), 'cancelled'],
        [job(2), 'cancelled'],
      ]);
      await early.query('commit');
      const after = await stack().client.readCompactionEvents(root, { after: before.cursor! });
      expect(after.events.map((e) => [e.compactionId, e.status, e.error])).toEqual([
        [job(1), 'failed', 'late'],
        [job(2), 'failed', 'early'],
      ]);
    } finally {
      await early.query('rollback').catch(() => undefined);
      early.release();
    }
  });

  it('ends every wait at its bound: idle, overall timeout, abort; reads answer at once', async () => {
    const root = await sessionWith(2);
    expect(await stack().client.readCompactionEvents(root)).toEqual({ lineageId: root, events: [], cursor: null, more: false });
    const timed = async (options: CompactionEventsOptions) => {
      const started = Date.now();
      const events = await collect(root, { idleTimeoutMs: undefined, ...options });
      return { events, ms: Date.now() - started };
    };
    const idle = await timed({ idleTimeoutMs: 300 });
    expect(idle.events).toEqual([]);
    expect(idle.ms).toBeGreaterThanOrEqual(250);
    expect(idle.ms).toBeLessThan(5000);
    const overall = await timed({ timeoutMs: 300 });
    expect(overall.events).toEqual([]);
    expect(overall.ms).toBeLessThan(5000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const aborted = await timed({ signal: controller.signal });
    expect(aborted.events).toEqual([]);
    expect(aborted.ms).toBeLessThan(5000);
  });

  it('refuses a wrong cursor, limit or bound, and an unknown session', async () => {
    const root = await sessionWith(2);
    await expect(stack().client.readCompactionEvents(root, { after: 'not-a-cursor' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(stack().client.readCompactionEvents(root, { limit: 0 })).rejects.toBeInstanceOf(InvalidInputError);
    expect(() => stack().client.compactionEvents(root, { pollIntervalMs: 1 })).toThrow(InvalidInputError);
    await expect(stack().client.readCompactionEvents(uniqueId('missing'))).rejects.toBeInstanceOf(SessionNotFoundError);
    // The SQL function checks for every client language too.
    await expect(stack().db.pool.query(`select session_compaction_events($1, 'x', 10)`, [root])).rejects.toThrow(/invalid after/);
    await expect(stack().db.pool.query(`select session_compaction_events($1, null, 1001)`, [root])).rejects.toThrow(/invalid limit/);
  });
});
