/**
 * Issue 41 §3: where one compaction's time goes, against floor (b). A compaction (or a
 * same-shape Update) is cut at points of one clock (everything runs on one machine): the
 * caller's start and answer, the client's statements, the workflow's history event times, and
 * the worker's SQL and LLM traces (bench/trace.ts). Consecutive points give parts that add up
 * to the caller's time. Pure: no I/O.
 */
import type { LlmTraceEntry, SqlTraceEntry } from './trace';

/** A history event as fetchHistory gives it (the fields read here). */
export interface HistoryEvent {
  eventId?: unknown;
  eventTime?: { seconds?: unknown; nanos?: number | null } | null;
  [attributes: string]: unknown;
}

/** One call as the caller saw it: its wall-clock start and time, and (ours) the client's statements meanwhile. */
export interface CallTiming {
  at: number;
  ms: number;
  clientSql?: SqlTraceEntry[];
}

/** Who a part belongs to: our code, Temporal (server, or the SDK in our processes), or a workflow task (SDK and our workflow code). */
export type Owner = 'ours' | 'temporal' | 'workflow task';

/** The parts, in the order they happen; each is the time between two consecutive points. */
export const PARTS: ReadonlyArray<{ key: string; label: string; owner: Owner; floorB: boolean }> = [
  { key: 'clientRead', label: "the client's read (the lineage row)", owner: 'ours', floorB: false },
  { key: 'updateToServer', label: 'the Update (with start) reaches the server: its workflow task scheduled', owner: 'temporal', floorB: true },
  { key: 'wftDispatch1', label: 'workflow task dispatch (the Update)', owner: 'temporal', floorB: true },
  { key: 'wft1', label: 'workflow task on the worker: accept the Update, schedule the activity', owner: 'workflow task', floorB: true },
  { key: 'activityDispatch', label: 'activity dispatch (server: workflow task completed to activity started)', owner: 'temporal', floorB: true },
  { key: 'activityStart', label: 'the worker starts the activity (to its first statement)', owner: 'temporal', floorB: false },
  { key: 'begin', label: 'the begin statement (sc_compaction_begin)', owner: 'ours', floorB: false },
  { key: 'snapshot', label: 'snapshot, plan and prompt (activity code)', owner: 'ours', floorB: false },
  { key: 'summariser', label: 'the summariser round trip (HTTP to the local LLM and back)', owner: 'ours', floorB: false },
  { key: 'gates', label: 'the gates and the new head (activity code)', owner: 'ours', floorB: false },
  { key: 'commit', label: 'the commit statement (sc_compaction_commit)', owner: 'ours', floorB: false },
  { key: 'activityCompletion', label: 'activity completion reaches the server', owner: 'temporal', floorB: false },
  { key: 'activity', label: 'floor (b): the activity (heartbeat, one INSERT transaction, completion)', owner: 'temporal', floorB: true },
  { key: 'wftDispatch2', label: 'workflow task dispatch (the activity result)', owner: 'temporal', floorB: true },
  { key: 'wft2', label: 'workflow task on the worker: the answer, search attributes and details', owner: 'workflow task', floorB: true },
  { key: 'answerEvents', label: 'server: the upsert and the Update completed (same workflow task completion)', owner: 'temporal', floorB: true },
  { key: 'answerToClient', label: 'the answer reaches the caller', owner: 'temporal', floorB: true },
];

const kindOf = (e: HistoryEvent) => Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k]) ?? '';
const idOf = (value: unknown) =>
  typeof value === 'object' && value !== null && 'toNumber' in value ? (value as { toNumber(): number }).toNumber() : Number(value);
const timeOf = (e: HistoryEvent) => idOf(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** The history's points of the Update accepted within [from, to]: its workflow tasks, its activity, its answer. */
function historyPoints(events: HistoryEvent[], from: number, to: number) {
  const accepted = events.findIndex((e) => kindOf(e) === 'workflowExecutionUpdateAcceptedEventAttributes' && timeOf(e) >= from && timeOf(e) <= to);
  if (accepted < 0) return undefined;
  const lastBefore = (index: number, kind: string) =>
    events
      .slice(0, index)
      .reverse()
      .find((e) => kindOf(e) === `${kind}EventAttributes`);
  const firstAfter = (index: number, kind: string) => events.slice(index + 1).find((e) => kindOf(e) === `${kind}EventAttributes`);
  const scheduled = firstAfter(accepted, 'activityTaskScheduled');
  if (!scheduled) return undefined;
  const ofActivity = (kind: string) =>
    events.find(
      (e) =>
        kindOf(e) === `${kind}EventAttributes` &&
        idOf((e[`${kind}EventAttributes`] as { scheduledEventId?: unknown }).scheduledEventId) === idOf(scheduled.eventId),
    );
  const started = ofActivity('activityTaskStarted');
  const completed = ofActivity('activityTaskCompleted');
  if (!started || !completed) return undefined;
  const done = events.indexOf(completed);
  const points = {
    wftScheduled1: lastBefore(accepted, 'workflowTaskScheduled'),
    wftStarted1: lastBefore(accepted, 'workflowTaskStarted'),
    wftCompleted1: lastBefore(accepted, 'workflowTaskCompleted'),
    activityStarted: started,
    activityCompleted: completed,
    wftStarted2: firstAfter(done, 'workflowTaskStarted'),
    wftCompleted2: firstAfter(done, 'workflowTaskCompleted'),
    updateCompleted: firstAfter(done, 'workflowExecutionUpdateCompleted'),
  };
  if (Object.values(points).some((e) => e === undefined)) return undefined;
  return Object.fromEntries(Object.entries(points).map(([k, e]) => [k, timeOf(e!)])) as Record<keyof typeof points, number>;
}

/** Floor (b)'s parts for one same-shape Update, or undefined when its events are not all found. */
export function floorBParts(events: HistoryEvent[], call: CallTiming): Record<string, number> | undefined {
  const end = call.at + call.ms;
  const h = historyPoints(events, call.at, end);
  if (!h) return undefined;
  return {
    updateToServer: h.wftScheduled1 - call.at,
    wftDispatch1: h.wftStarted1 - h.wftScheduled1,
    wft1: h.wftCompleted1 - h.wftStarted1,
    activityDispatch: h.activityStarted - h.wftCompleted1,
    activity: h.activityCompleted - h.activityStarted,
    wftDispatch2: h.wftStarted2 - h.activityCompleted,
    wft2: h.wftCompleted2 - h.wftStarted2,
    answerEvents: h.updateCompleted - h.wftCompleted2,
    answerToClient: end - h.updateCompleted,
  };
}

/**
 * Our parts for one compaction, from its lineage's history and the worker's traces (every
 * compaction of the section runs alone, so whatever the worker sent during the call is its).
 */
export function oursParts(
  events: HistoryEvent[],
  call: CallTiming,
  worker: { sql: SqlTraceEntry[]; llm: LlmTraceEntry[] },
): { parts: Record<string, number>; llmCalls: number; commitStatements: number; otherStatements: number } | undefined {
  const end = call.at + call.ms;
  const h = historyPoints(events, call.at, end);
  if (!h) return undefined;
  const during = <T extends { at: number }>(entries: T[]) => entries.filter((e) => e.at >= call.at && e.at <= end);
  const sql = during(worker.sql);
  const begin = sql.find((e) => e.sql.some((s) => /sc_compaction_begin/i.test(s)));
  const commits = sql.filter((e) => e.sql.some((s) => /sc_compaction_commit/i.test(s)));
  const llm = during(worker.llm);
  if (!begin || commits.length === 0 || llm.length === 0) return undefined;
  // The client's statements before the Update (the lineage read; a retried read is more than one).
  const read = (call.clientSql ?? []).filter((e) => e.at + e.ms <= h.wftScheduled1);
  const readEnd = read.length > 0 ? Math.max(...read.map((e) => e.at + e.ms)) : call.at;
  const lastCommit = commits[commits.length - 1];
  const lastLlm = llm[llm.length - 1];
  return {
    parts: {
      clientRead: readEnd - call.at,
      updateToServer: h.wftScheduled1 - readEnd,
      wftDispatch1: h.wftStarted1 - h.wftScheduled1,
      wft1: h.wftCompleted1 - h.wftStarted1,
      activityDispatch: h.activityStarted - h.wftCompleted1,
      activityStart: begin.at - h.activityStarted,
      begin: begin.ms,
      snapshot: llm[0].at - (begin.at + begin.ms),
      summariser: lastLlm.at + lastLlm.ms - llm[0].at,
      gates: commits[0].at - (lastLlm.at + lastLlm.ms),
      commit: lastCommit.at + lastCommit.ms - commits[0].at,
      activityCompletion: h.activityCompleted - (lastCommit.at + lastCommit.ms),
      wftDispatch2: h.wftStarted2 - h.activityCompleted,
      wft2: h.wftCompleted2 - h.wftStarted2,
      answerEvents: h.updateCompleted - h.wftCompleted2,
      answerToClient: end - h.updateCompleted,
    },
    llmCalls: llm.length,
    commitStatements: commits.reduce((n, c) => n + c.statements, 0),
    otherStatements: sql.filter((e) => e !== begin && !commits.includes(e)).length,
  };
}
