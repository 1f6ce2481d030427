/**
 * Waits for the answers of compaction requests sent by signal (fire-and-forget, or the
 * fallback at the in-flight Update limit). Callers waiting on one lineage share one poll:
 * one `requestStatus` query asks for all their request ids, backing off while nothing
 * changes. Each waiter has its own deadline. A request the run does not know (its signal
 * never landed, or the run ended) is declared lost, never polled forever.
 */
import { CallTimeoutError, RequestLostError } from '../errors';
import type { CompactResult, RequestStatus } from '../workflows/contract';

export interface PollTarget {
  /** Asks the lineage's workflow where each request stands. */
  statuses(requestIds: string[]): Promise<RequestStatus[]>;
  /** Whether the lineage's workflow run is still running. */
  running(): Promise<boolean>;
  /** An answer recorded in Postgres by an earlier run, if any (answers outlive runs). */
  recorded(requestId: string): Promise<CompactResult | undefined>;
}

interface Waiter {
  resolve(result: CompactResult): void;
  reject(error: Error): void;
  unknownSince?: number;
}

const MIN_DELAY_MS = 50;
const MAX_DELAY_MS = 1000;

export class LineagePoller {
  private readonly waiters = new Map<string, Waiter[]>();
  private delay = MIN_DELAY_MS;
  private polling = false;

  constructor(
    private readonly target: PollTarget,
    /** How long a request may stay unknown to a running workflow before it counts as lost. */
    private readonly unknownGraceMs: number,
  ) {}

  get idle(): boolean {
    return this.waiters.size === 0;
  }

  /** Resolves with the request's answer; rejects at the deadline or when the request is lost. */
  wait(requestId: string, deadline: number, signal?: AbortSignal): Promise<CompactResult> {
    return new Promise<CompactResult>((resolve, reject) => {
      const waiter: Waiter = { resolve: () => undefined, reject: () => undefined };
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const list = this.waiters.get(requestId)?.filter((w) => w !== waiter) ?? [];
        if (list.length > 0) this.waiters.set(requestId, list);
        else this.waiters.delete(requestId);
      };
      waiter.resolve = (result) => {
        settle();
        resolve(result);
      };
      waiter.reject = (error) => {
        settle();
        reject(error);
      };
      const onAbort = () => waiter.reject(new CallTimeoutError(requestId, 'the caller aborted the wait'));
      const timer = setTimeout(
        () => waiter.reject(new CallTimeoutError(requestId, 'the deadline passed before the answer came')),
        Math.max(0, deadline - Date.now()),
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.set(requestId, [...(this.waiters.get(requestId) ?? []), waiter]);
      this.delay = MIN_DELAY_MS;
      if (!this.polling) {
        this.polling = true;
        void this.run();
      }
    });
  }

  private async run(): Promise<void> {
    // Let the callers that arrive together join the first poll.
    await new Promise((resolve) => setImmediate(resolve));
    for (;;) {
      // Checked and cleared in one synchronous step, so a caller arriving later starts a new loop.
      if (this.waiters.size === 0) return void (this.polling = false);
      try {
        await this.pollOnce();
      } catch (error) {
        // The query itself failed for good (not a blip the target already retried): tell everyone.
        for (const list of [...this.waiters.values()]) for (const w of list) w.reject(error as Error);
      }
      if (this.waiters.size === 0) return void (this.polling = false);
      await new Promise((resolve) => setTimeout(resolve, this.delay));
      this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    }
  }

  private async pollOnce(): Promise<void> {
    const ids = [...this.waiters.keys()];
    const statuses = await this.target.statuses(ids);
    let unknown: string[] = [];
    for (const status of statuses) {
      const waiting = this.waiters.get(status.requestId) ?? [];
      if (status.status === 'answered') {
        for (const w of waiting) w.resolve(status.result);
      } else if (status.status === 'unknown') {
        unknown.push(status.requestId);
      } else {
        for (const w of waiting) w.unknownSince = undefined;
      }
    }
    if (unknown.length === 0) return;
    // Unknown to this run: answered by an earlier one (Postgres remembers), not landed yet, or lost.
    for (const requestId of unknown) {
      const recorded = await this.target.recorded(requestId);
      if (recorded) for (const w of this.waiters.get(requestId) ?? []) w.resolve(recorded);
    }
    unknown = unknown.filter((id) => this.waiters.has(id));
    if (unknown.length === 0) return;
    const running = await this.target.running();
    const now = Date.now();
    for (const requestId of unknown) {
      for (const w of this.waiters.get(requestId) ?? []) {
        w.unknownSince ??= now;
        if (!running) w.reject(new RequestLostError(requestId, 'the lineage workflow run ended without it'));
        else if (now - w.unknownSince > this.unknownGraceMs)
          w.reject(new RequestLostError(requestId, `the lineage workflow has not received it after ${this.unknownGraceMs} ms`));
      }
    }
  }
}
