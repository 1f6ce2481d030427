/**
 * The bounds of SessionsClient's waits: every call that waits has a deadline (the caller's
 * `timeoutMs`, or the configured default) and honours the caller's AbortSignal, either
 * ending as CallTimeoutError; and the resends a call makes while the server cannot be
 * reached or the run it asked ended, each under that deadline.
 */
import type { Connection } from '@temporalio/client';
import { CallTimeoutError, InvalidInputError } from '../errors';
import { isTransientConnectionError } from './rpc-errors';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The absolute deadline of a call: `timeoutMs` from `now`, or `defaultMs` from it. */
export function deadlineOf(timeoutMs: number | undefined, defaultMs: number, now = Date.now()): number {
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0))
    throw new InvalidInputError('timeoutMs', 'must be a positive number of milliseconds');
  return now + (timeoutMs ?? defaultMs);
}

/**
 * Runs `fn` with every Temporal call in it bounded by the deadline and the caller's signal;
 * either ending turns into CallTimeoutError (naming `requestId`, to wait for again).
 */
export async function withDeadline<T>(
  connection: Pick<Connection, 'withAbortSignal'>,
  deadline: number,
  signal: AbortSignal | undefined,
  requestId: string | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new CallTimeoutError(requestId, 'the deadline passed before the answer came')),
    Math.max(0, deadline - Date.now()),
  );
  const onAbort = () => controller.abort(new CallTimeoutError(requestId, 'the caller aborted the wait'));
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });
  // The abort cancels the gRPC calls made in `fn`; the race ends the wait even where the SDK
  // keeps polling on (an Update's result), so the caller is never held past its deadline.
  const aborted = new Promise<never>((_, reject) => {
    if (controller.signal.aborted) reject(controller.signal.reason);
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  aborted.catch(() => undefined);
  try {
    return await Promise.race([connection.withAbortSignal(controller.signal, fn), aborted]);
  } catch (error) {
    if (controller.signal.aborted) throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The pause before the next resend while the server is unreachable: 200 ms, doubling, at most 5 s. */
export const unreachableResendDelay = (resends: number) => Math.min(200 * 2 ** resends, 5000);

/** The pause before sending a request again after its run ended unanswered: 100 ms, doubling, at most 1 s. */
export const runEndedResendDelay = (resends: number) => Math.min(1000, 100 * 2 ** resends);

/**
 * Sends `send` again while the server cannot be reached (a restart, a network blip), until
 * `until` (a resend that would start after it is not made: the error is thrown). Safe
 * because every request carries its id: the workflow answers a known id with its first
 * answer and never runs it twice.
 */
export async function resendWhileUnreachable<T>(until: number, send: () => Promise<T>, onResend: () => void = () => undefined): Promise<T> {
  for (let resends = 0; ; resends++) {
    try {
      return await send();
    } catch (error) {
      const delay = unreachableResendDelay(resends);
      if (!isTransientConnectionError(error) || Date.now() + delay > until) throw error;
      onResend();
      await sleep(delay);
    }
  }
}
