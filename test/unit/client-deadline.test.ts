/** The bounds of the client's waits (src/client/deadline.ts): deadlines, their refusals, and the resends made under them. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deadlineOf, resendWhileUnreachable, runEndedResendDelay, unreachableResendDelay, withDeadline } from '../../src/client/deadline';
import { CallTimeoutError, InvalidInputError } from '../../src/errors';

const NOW = 1_000_000;

describe('deadlineOf', () => {
  it.each<[number | undefined, number]>([
    [undefined, NOW + 600_000],
    [1, NOW + 1],
    [0.5, NOW + 0.5],
    [30_000, NOW + 30_000],
  ])('timeoutMs %j ends at %d', (timeoutMs, deadline) => {
    expect(deadlineOf(timeoutMs, 600_000, NOW)).toBe(deadline);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses timeoutMs %j', (timeoutMs) => {
    expect(() => deadlineOf(timeoutMs, 600_000, NOW)).toThrow(new InvalidInputError('timeoutMs', 'must be a positive number of milliseconds'));
  });
});

describe('the resend delays', () => {
  it.each([
    [0, 200, 100],
    [1, 400, 200],
    [2, 800, 400],
    [3, 1600, 800],
    [4, 3200, 1000],
    [5, 5000, 1000],
    [20, 5000, 1000],
  ])('resend %d waits %d ms while unreachable, %d ms after a run ended', (resends, unreachable, runEnded) => {
    expect([unreachableResendDelay(resends), runEndedResendDelay(resends)]).toEqual([unreachable, runEnded]);
  });
});

describe('resendWhileUnreachable', () => {
  beforeEach(() => void vi.useFakeTimers({ now: NOW }));
  afterEach(() => void vi.useRealTimers());

  const unavailable = () => Object.assign(new Error('14 UNAVAILABLE: connection refused'), { code: 14 });
  const invalid = () => new InvalidInputError('request', 'must be an object');

  /** `failures` errors, then 'answer'; how the call ends when it may resend for `windowMs`. */
  async function run(failures: Array<() => Error>, windowMs: number) {
    let sent = 0;
    let resends = 0;
    const outcome = resendWhileUnreachable(
      NOW + windowMs,
      async () => {
        const failure = failures[sent++];
        if (failure) throw failure();
        return 'answer';
      },
      () => resends++,
    ).then(
      (answer) => answer,
      (error: Error) => error.message,
    );
    await vi.runAllTimersAsync();
    return { outcome: await outcome, sent, resends };
  }

  it.each([
    ['answered at once', [], 60_000, { outcome: 'answer', sent: 1, resends: 0 }],
    ['answered after two blips', [unavailable, unavailable], 60_000, { outcome: 'answer', sent: 3, resends: 2 }],
    ['an error that is not a blip is thrown at once', [invalid], 60_000, { outcome: 'invalid request: must be an object', sent: 1, resends: 0 }],
    [
      'no resend that would start past the window (200 + 400 ms fit, 800 ms do not)',
      [unavailable, unavailable, unavailable],
      1000,
      { outcome: '14 UNAVAILABLE: connection refused', sent: 3, resends: 2 },
    ],
    ['a window shorter than the first delay sends once', [unavailable], 100, { outcome: '14 UNAVAILABLE: connection refused', sent: 1, resends: 0 }],
  ] as const)('%s', async (_name, failures, windowMs, expected) => {
    expect(await run([...failures], windowMs)).toEqual(expected);
  });
});

describe('withDeadline', () => {
  const connection = { withAbortSignal: <T>(_signal: AbortSignal, fn: () => Promise<T>) => fn() };
  const never = () => new Promise<never>(() => undefined);

  it('answers what the call answers before the deadline', async () => {
    await expect(withDeadline(connection, Date.now() + 5000, undefined, 'r1', async () => 'answer')).resolves.toBe('answer');
  });

  it.each([
    ['the deadline passes', () => ({ deadline: Date.now() + 20, signal: undefined }), 'the deadline passed before the answer came'],
    ['the caller aborts', () => ({ deadline: Date.now() + 60_000, signal: AbortSignal.timeout(20) }), 'the caller aborted the wait'],
    ['the caller aborted already', () => ({ deadline: Date.now() + 60_000, signal: AbortSignal.abort() }), 'the caller aborted the wait'],
  ])('is CallTimeoutError naming the request when %s', async (_name, bounds, detail) => {
    const { deadline, signal } = bounds();
    await expect(withDeadline(connection, deadline, signal, 'r1', never)).rejects.toThrow(new CallTimeoutError('r1', detail));
  });

  it("passes the call's own error on", async () => {
    await expect(withDeadline(connection, Date.now() + 5000, undefined, undefined, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });
});
