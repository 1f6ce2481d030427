/**
 * followCompactionEvents (src/client/compaction-events.ts) over a fake read: it pages with the
 * last cursor, reads again at once while a page says `more`, holds no more than a page, ends at
 * its idle bound, its overall timeout and its signal, checks its options when called, and ends a
 * lineage erased mid-stream with `cancelled` for the job it saw in progress.
 */
import { describe, expect, it } from 'vitest';
import {
  checkReadOptions,
  type CompactionEvent,
  type CompactionEventPage,
  type CompactionEventStatus,
  ERASED_REASON,
  followCompactionEvents,
} from '../../src/client/compaction-events';
import { InvalidInputError, SessionNotFoundError } from '../../src/errors';

const event = (n: number, status: CompactionEventStatus, job = `job-${Math.ceil(n / 2)}`): CompactionEvent => ({
  sessionUpdate: 'compaction_update',
  compactionId: job,
  status,
  cursor: `100.${n}`,
  _meta: { lineageId: 'l', requestIds: [`r-${job}`], trigger: 'update', generation: 1, parentSessionId: 'l', startedAt: 't', at: 't' },
});

/** A log read like the SQL function: events after the cursor, at most `limit`, `more` when cut. */
function fakeLog(log: CompactionEvent[] | (() => CompactionEvent[])) {
  const reads: Array<{ after?: string; limit: number }> = [];
  const read = async ({ after, limit }: { after?: string; limit: number }): Promise<CompactionEventPage> => {
    reads.push({ after, limit });
    const all = typeof log === 'function' ? log() : log;
    const from = after === undefined ? 0 : all.findIndex((e) => e.cursor === after) + 1;
    const events = all.slice(from, from + limit);
    return { lineageId: 'l', events, cursor: events.at(-1)?.cursor ?? after ?? null, more: from + limit < all.length };
  };
  return { read, reads };
}

async function drain(iterator: AsyncIterable<CompactionEvent>): Promise<CompactionEvent[]> {
  const events: CompactionEvent[] = [];
  for await (const e of iterator) events.push(e);
  return events;
}

describe('followCompactionEvents', () => {
  it('pages from the last cursor, at once while there is more, and ends when idle', async () => {
    const log = [event(1, 'in_progress'), event(2, 'completed'), event(3, 'in_progress'), event(4, 'failed'), event(5, 'in_progress')];
    const { read, reads } = fakeLog(log);
    const started = Date.now();
    const events = await drain(followCompactionEvents(read, { limit: 2, idleTimeoutMs: 100, pollIntervalMs: 20 }, 60_000));
    expect(events.map((e) => e.cursor)).toEqual(log.map((e) => e.cursor));
    expect(reads.slice(0, 3)).toEqual([
      { after: undefined, limit: 2 },
      { after: '100.2', limit: 2 },
      { after: '100.4', limit: 2 },
    ]);
    expect(reads.every((r) => r.limit === 2)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('resumes after a cursor with exactly the rest', async () => {
    const log = [1, 2, 3, 4].map((n) => event(n, n % 2 ? 'in_progress' : 'completed'));
    const { read } = fakeLog(log);
    const events = await drain(followCompactionEvents(read, { after: '100.2', idleTimeoutMs: 0 }, 60_000));
    expect(events.map((e) => e.cursor)).toEqual(['100.3', '100.4']);
  });

  it('sees events that come while it waits, and ends at its timeout or its signal', async () => {
    const log: CompactionEvent[] = [];
    const { read } = fakeLog(() => log);
    setTimeout(() => log.push(event(1, 'in_progress')), 50);
    const started = Date.now();
    const events = await drain(followCompactionEvents(read, { timeoutMs: 300, pollIntervalMs: 20 }, 60_000));
    expect(events.map((e) => e.status)).toEqual(['in_progress']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(2000);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const abortedAt = Date.now();
    expect(await drain(followCompactionEvents(read, { after: '100.1', signal: controller.signal, pollIntervalMs: 20 }, 60_000))).toEqual([]);
    expect(Date.now() - abortedAt).toBeLessThan(2000);
  });

  it('ends with cancelled for a job seen in progress when the lineage is erased', async () => {
    let erased = false;
    const { read: readLog } = fakeLog([event(1, 'in_progress'), event(2, 'completed'), event(3, 'in_progress')]);
    const read = async (options: { after?: string; limit: number }) => {
      if (erased) throw new SessionNotFoundError('l');
      const page = await readLog(options);
      if (!page.more) erased = true;
      return page;
    };
    const events = await drain(followCompactionEvents(read, { pollIntervalMs: 20 }, 60_000));
    expect(events.map((e) => [e.compactionId, e.status])).toEqual([
      ['job-1', 'in_progress'],
      ['job-1', 'completed'],
      ['job-2', 'in_progress'],
      ['job-2', 'cancelled'],
    ]);
    expect(events[3]).toMatchObject({ cursor: '100.3', _meta: { reason: ERASED_REASON } });
    // An unknown session on the first read is the caller's error.
    const missing = async (): Promise<CompactionEventPage> => {
      throw new SessionNotFoundError('x');
    };
    await expect(drain(followCompactionEvents(missing, {}, 60_000))).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it('checks its options when called', () => {
    const { read } = fakeLog([]);
    expect(() => followCompactionEvents(read, { pollIntervalMs: 5 }, 60_000)).toThrow(InvalidInputError);
    expect(() => followCompactionEvents(read, { timeoutMs: 0 }, 60_000)).toThrow(InvalidInputError);
    expect(() => followCompactionEvents(read, { limit: 1001 }, 60_000)).toThrow(InvalidInputError);
    expect(() => checkReadOptions({ after: '1.2.3' })).toThrow(InvalidInputError);
    expect(checkReadOptions({ after: '761.12' })).toEqual({ after: '761.12', limit: 100 });
  });
});
