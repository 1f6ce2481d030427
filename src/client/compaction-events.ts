/**
 * A lineage's compaction events, for a caller that shows "compacting…" and then the summary
 * (issue 37 §5): each one in the shape of the Agent Client Protocol's `compaction_update`, read
 * from the job rows in Postgres through the data-plane SQL function `session_compaction_events`
 * (src/db/functions/session_compaction_events.sql; the log it reads is migration 0024's).
 *
 * `readCompactionEventPage` is one read; `followCompactionEvents` polls it into an async
 * iterator, bounded everywhere: at most `limit` events held at a time, a poll every
 * `pollIntervalMs`, an end after `idleTimeoutMs` without a new event, at `timeoutMs` and when
 * `signal` aborts (all three end the iteration without an error). Resumable: every event
 * carries a `cursor`; passed back as `after`, by this process or another, the reads continue
 * with exactly the events after it. Polling, not LISTEN/NOTIFY: a listener holds a connection
 * of its own per caller for as long as it waits, outside the pool, and a notification still
 * needs this read to be ordered; a poll is one indexed statement on a pooled connection.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../db/executor';
import { dataPlaneError } from '../db/postgres-errors';
import { InvalidInputError, SessionNotFoundError } from '../errors';
import type { CompactionOutcome } from '../workflows/contract';

/** The statuses of ACP's `compaction_update`. */
export type CompactionEventStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

/** What the job's audit row knows, beside ACP's fields (ACP's `_meta` is the place for it). */
export interface CompactionEventMeta {
  lineageId: string;
  /** The requests the job answers (joined ones included). */
  requestIds: string[];
  /** What asked for it: `update`, `signal`, `threshold`. */
  trigger: string;
  /** The generation the compaction makes (the head's generation + 1). */
  generation: number;
  parentSessionId: string;
  startedAt: string;
  /** When this event was recorded. */
  at: string;
  /** Once decided: the job's outcome (a job derived cancelled has none). */
  outcome?: CompactionOutcome;
  /** Why it ended as it did: a refusal's or abort's reason, a cancellation's, a commit's notes. */
  reason?: string;
  gate?: string;
  /** The rung that answered: `summary`, `masking`, `trim`, ... */
  rung?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  messagesBefore?: number;
  messagesAfter?: number;
  /** The new head (completed). */
  sessionId?: string;
  finishedAt?: string;
}

/**
 * One compaction event: everything but `cursor` is an ACP `compaction_update` (send it as the
 * `update` of a `session/update` notification). The first event of an id is where the
 * compaction sits in the timeline; later ones with the same id update it.
 */
export interface CompactionEvent {
  sessionUpdate: 'compaction_update';
  /** The job id, the same in every event of the job. */
  compactionId: string;
  status: CompactionEventStatus;
  /** The summary the new head holds, marker removed (completed, when the compaction wrote one). */
  summary?: Array<{ type: 'text'; text: string }>;
  /** Why it failed (failed only, as ACP wants). */
  error?: string;
  _meta: CompactionEventMeta;
  /** This event's place in the lineage's log: pass it as `after` to read on from here. */
  cursor: string;
}

/** One read: the events after `after`, oldest first. */
export interface CompactionEventPage {
  lineageId: string;
  events: CompactionEvent[];
  /** The last event's cursor, or the `after` read from (null: from the first). */
  cursor: string | null;
  /** More events are ready now (the read stopped at its limit). */
  more: boolean;
}

const DEFAULT_EVENT_LIMIT = 100;
const MAX_EVENT_LIMIT = 1000;
const DEFAULT_POLL_INTERVAL_MS = 250;

export interface ReadCompactionEventsOptions {
  /** The cursor of the last event the caller has (default: from the first event of the lineage). */
  after?: string;
  /** At most this many events per read: 1 to 1000 (default 100). */
  limit?: number;
}

export interface CompactionEventsOptions extends ReadCompactionEventsOptions {
  /** How often to read again while nothing is new (default 250 ms; 20 ms to 60 s). */
  pollIntervalMs?: number;
  /** End the iteration after this long without a new event (default: no such end). */
  idleTimeoutMs?: number;
  /** End the iteration after this long in all (default COMPACTION_CALL_TIMEOUT_MS). */
  timeoutMs?: number;
  /** End the iteration when this aborts. */
  signal?: AbortSignal;
}

const CURSOR = /^[0-9]{1,19}\.[0-9]{1,18}$/;

/** The read options, checked before anything is sent (the SQL function checks them too). */
export function checkReadOptions(options: ReadCompactionEventsOptions): { after: string | null; limit: number } {
  const { after, limit = DEFAULT_EVENT_LIMIT } = options;
  if (after !== undefined && (typeof after !== 'string' || !CURSOR.test(after)))
    throw new InvalidInputError('after', 'must be the cursor of a compaction event');
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENT_LIMIT)
    throw new InvalidInputError('limit', `must be a whole number from 1 to ${MAX_EVENT_LIMIT}`);
  return { after: after ?? null, limit };
}

function checkMs(value: number | undefined, field: string, least: number, most: number): void {
  if (value !== undefined && (!Number.isFinite(value) || value < least || value > most))
    throw new InvalidInputError(field, `must be a number of milliseconds from ${least} to ${most}`);
}

/** One read of the lineage's events after a cursor (SQL `session_compaction_events`), any session id of the lineage. */
export async function readCompactionEventPage(db: Executor, sessionId: string, options: ReadCompactionEventsOptions = {}): Promise<CompactionEventPage> {
  const { after, limit } = checkReadOptions(options);
  try {
    const { rows } = await db.execute(sql`select session_compaction_events(${sessionId}, ${after}::text, ${limit}::integer) as result`);
    return (rows[0] as { result: CompactionEventPage }).result;
  } catch (error) {
    throw dataPlaneError(error);
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The reason the events of a lineage erased mid-stream end with. */
export const ERASED_REASON = 'the lineage was erased';

/**
 * The lineage's events as they come, after `options.after`. `read` is one page read (its
 * errors end the iteration with them), `defaultTimeoutMs` the overall bound when the caller
 * gives none. A lineage erased while it is followed (its rows gone: SessionNotFoundError
 * after a first successful read) ends the iteration, after a `cancelled` event for each job
 * seen in progress and not seen ending (cursor: the last one read; the log is gone with the
 * rows, so nothing follows it).
 */
export function followCompactionEvents(
  read: (options: { after?: string; limit: number }) => Promise<CompactionEventPage>,
  options: CompactionEventsOptions,
  defaultTimeoutMs: number,
): AsyncGenerator<CompactionEvent, void, undefined> {
  // Checked now, not at the first `next()`: a wrong option fails the call that gave it.
  const { limit } = checkReadOptions(options);
  checkMs(options.pollIntervalMs, 'pollIntervalMs', 20, 60_000);
  checkMs(options.idleTimeoutMs, 'idleTimeoutMs', 0, MAX_TIMER_MS);
  checkMs(options.timeoutMs, 'timeoutMs', 1, MAX_TIMER_MS);
  return follow(read, { ...options, limit }, defaultTimeoutMs);
}

/** The longest a timer waits (setTimeout's bound). */
const MAX_TIMER_MS = 2 ** 31 - 1;

async function* follow(
  read: (options: { after?: string; limit: number }) => Promise<CompactionEventPage>,
  options: CompactionEventsOptions & { limit: number },
  defaultTimeoutMs: number,
): AsyncGenerator<CompactionEvent, void, undefined> {
  const { limit } = options;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const deadline = Date.now() + Math.min(options.timeoutMs ?? defaultTimeoutMs, MAX_TIMER_MS);
  // One signal for every end: the caller's, the overall deadline, the idle bound.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (options.signal?.aborted) stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const overall = setTimeout(() => stop.abort(), Math.max(0, deadline - Date.now()));
  let after = options.after;
  let lastNewAt = Date.now();
  let readOnce = false;
  /** Jobs seen in progress and not yet seen ending, by id: a lineage runs one job at a time, so this stays small. */
  const open = new Map<string, CompactionEvent>();
  try {
    while (!stop.signal.aborted) {
      let page: CompactionEventPage;
      try {
        page = await read({ after, limit });
      } catch (error) {
        if (!(error instanceof SessionNotFoundError) || !readOnce) throw error;
        for (const event of open.values()) {
          const { outcome: _outcome, ...meta } = event._meta;
          yield { ...event, status: 'cancelled', cursor: after ?? event.cursor, _meta: { ...meta, reason: ERASED_REASON, at: new Date().toISOString() } };
        }
        return;
      }
      readOnce = true;
      for (const event of page.events) {
        if (stop.signal.aborted) return;
        if (event.status === 'in_progress') open.set(event.compactionId, event);
        else open.delete(event.compactionId);
        after = event.cursor;
        yield event;
      }
      if (page.events.length > 0) lastNewAt = Date.now();
      if (page.more) continue;
      const idleLeft = options.idleTimeoutMs === undefined ? Infinity : lastNewAt + options.idleTimeoutMs - Date.now();
      if (idleLeft <= 0) return;
      await pause(Math.min(pollIntervalMs, idleLeft), stop.signal);
    }
  } finally {
    clearTimeout(overall);
    options.signal?.removeEventListener('abort', onAbort);
  }
}
