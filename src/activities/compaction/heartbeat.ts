/**
 * The attempt's heartbeat: the lease. It beats before any I/O, at every phase, and on a timer
 * while the summariser runs; its details are the progress the Web UI, `state` and the inspector
 * show, and the incarnation a retried attempt begins on.
 */
import { Context } from '@temporalio/activity';

/** What the activity reports in its heartbeats. */
export interface HeartbeatDetails {
  phase: 'snapshot' | 'summarising' | 'gates' | 'committing' | 'committed';
  chunk?: number;
  chunks?: number;
  streamedChars?: number;
  /** On `committed`: an earlier attempt had committed this job already, and this one wrote nothing. */
  alreadyCommitted?: boolean;
  /** The lineage incarnation the job began on (after the snapshot): a retried attempt begins only on it. */
  incarnation?: string;
  elapsedMs: number;
}

/** The incarnation a previous attempt of this job reported in its last heartbeat, if any. */
export function incarnationOfPreviousAttempt(): string | undefined {
  const details: unknown = Context.current().info.heartbeatDetails;
  const incarnation = details && typeof details === 'object' ? (details as { incarnation?: unknown }).incarnation : undefined;
  return typeof incarnation === 'string' ? incarnation : undefined;
}

/** One attempt's heartbeat: the last progress, sent again by `beat()` and on the summariser's timer. */
export class Heartbeat {
  private progress: HeartbeatDetails = { phase: 'snapshot', elapsedMs: 0 };
  private readonly started = Date.now();

  constructor(private readonly send: (details: unknown) => void) {}

  /** From now on every beat names the incarnation the job began on. */
  setIncarnation(incarnation: string): void {
    this.progress = { ...this.progress, incarnation };
  }

  /** Beats with `next` (or the last progress again). */
  beat(next: Omit<HeartbeatDetails, 'elapsedMs' | 'incarnation'> = this.progress): void {
    this.note(next);
    this.send(this.progress);
  }

  /** Records progress without beating (the summariser's stream; the timer sends it). */
  note(next: Omit<HeartbeatDetails, 'elapsedMs' | 'incarnation'>): void {
    this.progress = { incarnation: this.progress.incarnation, ...next, elapsedMs: Date.now() - this.started };
  }

  /** Beats every `intervalMs` while `work` runs. */
  async during<T>(intervalMs: number, work: () => Promise<T>): Promise<T> {
    const ticker = setInterval(() => this.beat(), intervalMs);
    try {
      return await work();
    } finally {
      clearInterval(ticker);
    }
  }
}
