/** The shared poll for signalled requests, against a scripted workflow: no Temporal needed to prove its rules. */
import { describe, expect, it } from 'vitest';
import { LineagePoller, type PollTarget } from '../../src/client/answer-poller';
import { isUpdateLimitError } from '../../src/client/rpc-errors';
import { CallTimeoutError, RequestLostError } from '../../src/errors';
import type { CompactResult, RequestStatus } from '../../src/workflows/contract';

const answer = (requestId: string): CompactResult => ({ requestId, outcome: 'compacted', sessionId: 's--g1', generation: 1 });

function scripted(
  options: { answerAfterPolls?: number; known?: (id: string) => boolean; running?: boolean; recorded?: (id: string) => CompactResult | undefined } = {},
) {
  const calls: string[][] = [];
  const target: PollTarget = {
    async statuses(ids) {
      calls.push(ids);
      return ids.map((requestId): RequestStatus => {
        if (!(options.known?.(requestId) ?? true)) return { requestId, status: 'unknown' };
        return calls.length >= (options.answerAfterPolls ?? 1)
          ? { requestId, status: 'answered', result: answer(requestId) }
          : { requestId, status: 'pending' };
      });
    },
    running: async () => options.running ?? true,
    recorded: async (id) => options.recorded?.(id),
  };
  return { target, calls };
}

describe('the shared poll', () => {
  it('asks once for all the requests waiting on a lineage, and answers each waiter', async () => {
    const { target, calls } = scripted({ answerAfterPolls: 3 });
    const poller = new LineagePoller(target, 10_000);
    const ids = Array.from({ length: 20 }, (_, i) => `r${i}`);
    const results = await Promise.all(ids.map((id) => poller.wait(id, Date.now() + 10_000)));
    expect(results.map((r) => r.requestId)).toEqual(ids);
    expect(calls.length).toBe(3); // one query a round for twenty waiters, not twenty
    expect(calls[0]).toEqual(ids);
    // Two callers of the same request id share its answer.
    const [a, b] = await Promise.all([poller.wait('same', Date.now() + 5000), poller.wait('same', Date.now() + 5000)]);
    expect(a).toEqual(b);
  });

  it('backs off while nothing changes', async () => {
    const { target, calls } = scripted({ answerAfterPolls: 6 });
    const at: number[] = [];
    const timed: PollTarget = { ...target, statuses: (ids) => (at.push(Date.now()), target.statuses(ids)) };
    await new LineagePoller(timed, 10_000).wait('r', Date.now() + 20_000);
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    expect(calls.length).toBe(6);
    expect(gaps.at(-1)!).toBeGreaterThan(gaps[0] * 4); // 50, 100, 200, 400, 800 ms
  });

  it('gives up at the deadline or on abort with CallTimeoutError, naming the request', async () => {
    const { target } = scripted({ answerAfterPolls: Number.POSITIVE_INFINITY });
    const poller = new LineagePoller(target, 60_000);
    await expect(poller.wait('slow', Date.now() + 300)).rejects.toMatchObject({ name: 'CallTimeoutError', requestId: 'slow' });
    const controller = new AbortController();
    const waiting = poller.wait('aborted', Date.now() + 60_000, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(CallTimeoutError);
    expect(poller.idle).toBe(true);
  });

  it('declares a request lost when the run ended without it, or never got it, instead of polling forever', async () => {
    const ended = scripted({ known: () => false, running: false });
    await expect(new LineagePoller(ended.target, 60_000).wait('gone', Date.now() + 60_000)).rejects.toBeInstanceOf(RequestLostError);
    const neverLanded = scripted({ known: () => false, running: true });
    const started = Date.now();
    await expect(new LineagePoller(neverLanded.target, 500).wait('lost', Date.now() + 60_000)).rejects.toThrow(/has not received it after 500 ms/);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('answers from Postgres a request an earlier run answered', async () => {
    const { target } = scripted({ known: () => false, running: false, recorded: (id) => (id === 'old' ? answer('old') : undefined) });
    await expect(new LineagePoller(target, 60_000).wait('old', Date.now() + 5000)).resolves.toEqual(answer('old'));
  });
});

describe('the in-flight Update limit', () => {
  it('is told apart from other rate limits', () => {
    const limit = Object.assign(new Error('limit on number of concurrent in-flight updates has been reached (10)'), { code: 8 });
    expect(isUpdateLimitError(limit)).toBe(true);
    expect(isUpdateLimitError(new Error('wrapped', { cause: limit }))).toBe(true);
    expect(isUpdateLimitError(Object.assign(new Error('namespace rate limit exceeded'), { code: 8 }))).toBe(false);
    expect(isUpdateLimitError(Object.assign(new Error('in-flight updates'), { code: 14 }))).toBe(false);
  });
});
