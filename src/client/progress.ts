/**
 * Progress of a running compaction, read from the heartbeat details of the workflow's pending
 * `compactSession` activity (workflow code cannot see them; the client reads them from the
 * workflow's description). Pure and tolerant: it understands the current details
 * (`{ phase, messages, chunks }`) and the richer shape (`{ phase, chunk, chunks,
 * streamedChars, elapsedMs }`), and ignores fields it does not know.
 */

type CompactionPhase = 'snapshot' | 'summarising' | 'gates' | 'committing' | 'committed' | 'scheduled' | 'unknown';

export interface CompactionProgress {
  activityId: string;
  phase: CompactionPhase;
  /** The chunk being summarised (1-based) and how many there are, when the activity says. */
  chunk?: number;
  chunks?: number;
  /** Characters (or stream chunks, in the older details) of summary streamed so far. */
  streamedChars?: number;
  /** Messages being summarised (older details). */
  messages?: number;
  /** Time since the attempt started: the activity's own figure, else from its start time. */
  elapsedMs?: number;
  attempt: number;
  maxAttempts?: number;
  lastHeartbeatAt?: string;
  /** The last failure of an earlier attempt, when this one is a retry. */
  lastFailure?: string;
}

const PHASES = new Set<CompactionPhase>(['snapshot', 'summarising', 'gates', 'committing', 'committed']);
const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

export interface PendingActivityView {
  activityId?: string | null;
  activityType?: string | null;
  details?: unknown;
  attempt?: number | null;
  maximumAttempts?: number | null;
  lastStartedTime?: Date | null;
  lastHeartbeatTime?: Date | null;
  lastFailure?: string | null;
}

/** The progress of a pending compaction activity, or undefined for another activity. */
export function progressFromPendingActivity(activity: PendingActivityView, now: number): CompactionProgress | undefined {
  if (activity.activityType && activity.activityType !== 'compactSession') return undefined;
  const d =
    activity.details && typeof activity.details === 'object' && !Array.isArray(activity.details) ? (activity.details as Record<string, unknown>) : undefined;
  const phase: CompactionPhase =
    d && PHASES.has(d.phase as CompactionPhase) ? (d.phase as CompactionPhase) : activity.lastStartedTime ? 'unknown' : 'scheduled';
  const started = activity.lastStartedTime?.getTime();
  const elapsedMs = num(d?.elapsedMs) ?? (started !== undefined ? Math.max(0, now - started) : undefined);
  const progress: CompactionProgress = { activityId: activity.activityId ?? '', phase, attempt: activity.attempt ?? 1 };
  const chunk = num(d?.chunk);
  const chunks = num(d?.chunks);
  const messages = num(d?.messages);
  // The older details (`{ phase, messages, chunks }`) count streamed pieces in `chunks`; the
  // newer ones count summary chunks there (`chunk` of `chunks`).
  const older = messages !== undefined && chunk === undefined && d?.streamedChars === undefined;
  if (chunk !== undefined) progress.chunk = chunk;
  if (chunks !== undefined && !older) progress.chunks = chunks;
  const streamed = num(d?.streamedChars) ?? (older ? chunks : undefined);
  if (streamed !== undefined) progress.streamedChars = streamed;
  if (messages !== undefined) progress.messages = messages;
  if (elapsedMs !== undefined) progress.elapsedMs = elapsedMs;
  if (activity.maximumAttempts) progress.maxAttempts = activity.maximumAttempts;
  if (activity.lastHeartbeatTime) progress.lastHeartbeatAt = activity.lastHeartbeatTime.toISOString();
  if (activity.lastFailure) progress.lastFailure = activity.lastFailure;
  return progress;
}

/** One line for a terminal: `summarising chunk 2/5, 1234 chars streamed, 12.3 s (attempt 2/5)`. */
export function formatProgress(progress: CompactionProgress | undefined): string {
  if (!progress) return 'waiting for the compaction to start';
  const parts: string[] = [progress.phase];
  if (progress.phase === 'summarising') {
    if (progress.chunk !== undefined) parts[0] += ` chunk ${progress.chunk}${progress.chunks !== undefined ? `/${progress.chunks}` : ''}`;
    if (progress.messages !== undefined) parts.push(`${progress.messages} message(s)`);
  }
  if (progress.streamedChars !== undefined) parts.push(`${progress.streamedChars} streamed`);
  if (progress.elapsedMs !== undefined) parts.push(`${(progress.elapsedMs / 1000).toFixed(1)} s`);
  let line = parts.join(', ');
  if (progress.attempt > 1) line += ` (attempt ${progress.attempt}${progress.maxAttempts ? `/${progress.maxAttempts}` : ''})`;
  return line;
}
