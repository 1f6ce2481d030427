/**
 * The wire contract of the session workflow: its type, id scheme, signal, Update and query
 * names and payloads. A service in any language can call the workflow with these names and
 * JSON shapes (see docs/wire-contract.md). Workflow-safe: no I/O, no Node built-ins.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { reservedTextIn } from '../compaction/summary-structure';
import { checkText, codePointLength } from '../compaction/text';
import { BackgroundCompactionRejectedError, InvalidInputError } from '../errors';
import type { LineageSettings } from './settings';

export const WORKFLOW_ID_PREFIX = 'session-lineage/';

/** One workflow per lineage; the lineage is named by its root (first) session id. */
export function lineageWorkflowId(lineageId: string): string {
  return `${WORKFLOW_ID_PREFIX}${lineageId}`;
}

/** Rotation ends the parent and creates a child; in-place keeps the id and archives rows. */
export type CompactionMode = 'rotate' | 'in_place';
export const COMPACTION_MODES: readonly CompactionMode[] = ['rotate', 'in_place'];

/** Children of a rotated session are named after the lineage root and their generation. */
export function childSessionId(lineageId: string, generation: number): string {
  return `${lineageId}--g${generation}`;
}

const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const MAX_SESSION_ID_LENGTH = 128;
const DERIVED_ID_SUFFIX = /--g\d+$/;

/** Whether a session id names the lineage's root or one of its rotation children (childSessionId). */
export function belongsToLineage(sessionId: string, lineageId: string): boolean {
  return sessionId.replace(DERIVED_ID_SUFFIX, '') === lineageId;
}

/** Checks a session id a caller refers to (created by them, or derived by a rotation). */
export function checkSessionId(value: unknown, field = 'sessionId'): string {
  if (typeof value !== 'string' || value.length === 0) throw new InvalidInputError(field, 'must be a non-empty string');
  const base = value.replace(DERIVED_ID_SUFFIX, '');
  if (base.length > MAX_SESSION_ID_LENGTH) {
    throw new InvalidInputError(field, `must be at most ${MAX_SESSION_ID_LENGTH} characters`);
  }
  if (!SESSION_ID_PATTERN.test(value)) {
    throw new InvalidInputError(field, 'may contain only letters, digits and . _ : - and must start with a letter or digit');
  }
  return value;
}

/** Checks the id of a new session: the `--gN` suffix is reserved for rotation children. */
export function checkNewSessionId(value: unknown, field = 'sessionId'): string {
  const id = checkSessionId(value, field);
  if (DERIVED_ID_SUFFIX.test(id)) throw new InvalidInputError(field, 'must not end in --g<number> (reserved for compaction children)');
  return id;
}

export type CompactionTrigger = 'update' | 'signal' | 'threshold';

export interface CompactRequest {
  /** Idempotency key: a request id answered before is answered again, never re-run. */
  requestId?: string;
  /** The session the caller believes is the head. */
  sessionId: string;
  focusTopic?: string;
  force?: boolean;
  /** Set by helper agents that share the session; such requests never compact. */
  background?: boolean;
  /** Why the request was made; defaults to how it arrived. */
  trigger?: CompactionTrigger;
}

export type CompactionOutcome = 'compacted' | 'stale' | 'refused' | 'aborted';

/**
 * What a compaction job decided: the answer every request it served gets, in every layer (the
 * job activities return it, the queue hands it out, the wire adds the request id). The head is
 * `sessionId` throughout.
 */
export interface Answer {
  outcome: CompactionOutcome;
  /** The head after the call. */
  sessionId: string;
  /** The session that was rotated away, when this call rotated one. */
  previousSessionId?: string;
  generation: number;
  reason?: string;
  /** The gate that refused the compaction (outcome refused), when one did: see docs/wire-contract.md. */
  gate?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  messagesBefore?: number;
  messagesAfter?: number;
  /**
   * A committed compaction that shrank the head but left it at or above the threshold (rows
   * appended while it ran): the follow-up request it queued, which runs next.
   */
  followUpRequestId?: string;
}

/** What a caller in any language gets for one request (docs/wire-contract.md). */
export interface CompactResult extends Answer {
  requestId: string;
}

export interface QueuedRequestView {
  requestId: string;
  sessionId: string;
  trigger: CompactionTrigger;
}

export interface LineageState {
  lineageId: string;
  headSessionId: string;
  generation: number;
  mode: CompactionMode;
  /** Committed compactions of the lineage: its generation. */
  compactions: number;
  queue: QueuedRequestView[];
  inFlight?: { jobId: string; sessionId: string; requestIds: string[] };
  lastOutcome?: CompactionOutcome;
  lastReason?: string;
  closed: boolean;
}

export interface SessionLineageInput {
  lineageId: string;
  headSessionId: string;
  generation: number;
  mode: CompactionMode;
  source?: string;
  settings?: Partial<LineageSettings>;
  /** State carried across continue-as-new. */
  carried?: CarriedState;
}

export interface CarriedState {
  queue: Array<Required<Pick<CompactRequest, 'requestId' | 'sessionId' | 'trigger'>> & Omit<CompactRequest, 'requestId' | 'sessionId' | 'trigger'>>;
  answered: CompactResult[];
  jobCounter: number;
  /** Read by nobody (the compaction count comes from the generation); optional so a carried state that still holds it type-checks. */
  compactions?: number;
}

export const compactUpdate = defineUpdate<CompactResult, [CompactRequest]>('compact');
export const compactSignal = defineSignal<[CompactRequest]>('requestCompaction');
export const closeSignal = defineSignal<[]>('close');
export const stateQuery = defineQuery<LineageState>('state');
export const requestResultQuery = defineQuery<CompactResult | null, [string]>('requestResult');

/**
 * Where a request stands in this run: `answered` (with its result), `pending` (queued or in
 * the running job), or `unknown` (this run never got it: a signal that has not landed yet,
 * or one sent to a run that ended). Answers several request ids at once, so the callers
 * waiting on one lineage share one poll.
 */
export type RequestStatus = { requestId: string; status: 'answered'; result: CompactResult } | { requestId: string; status: 'pending' | 'unknown' };
export const requestStatusQuery = defineQuery<RequestStatus[], [string[]]>('requestStatus');

const MAX_FOCUS_TOPIC_LENGTH = 1000;
const MAX_REQUEST_ID_LENGTH = 200;
const REQUEST_FIELDS = new Set(['requestId', 'sessionId', 'focusTopic', 'force', 'background', 'trigger']);

/**
 * Validates a compaction request. Used by the Update validator (so a bad request never
 * reaches history), by the signal handler (which drops bad requests) and by the client.
 */
export function checkCompactRequest(raw: unknown, options: { codePoints?: boolean } = {}): CompactRequest {
  // Sizes in code points, as every client measures them (src/compaction/text.ts); histories
  // recorded before measured UTF-16 units, which the signal handler keeps for them.
  const size = (value: string) => (options.codePoints === false ? value.length : codePointLength(value));
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidInputError('request', 'must be an object');
  const r = raw as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!REQUEST_FIELDS.has(key)) throw new InvalidInputError(key, 'is not a known field');
  const sessionId = checkSessionId(r.sessionId);
  if (r.requestId !== undefined && (typeof r.requestId !== 'string' || r.requestId.length === 0 || size(r.requestId) > MAX_REQUEST_ID_LENGTH)) {
    throw new InvalidInputError('requestId', `must be a string of 1 to ${MAX_REQUEST_ID_LENGTH} characters`);
  }
  if (r.focusTopic !== undefined && (typeof r.focusTopic !== 'string' || size(r.focusTopic) > MAX_FOCUS_TOPIC_LENGTH)) {
    throw new InvalidInputError('focusTopic', `must be a string of at most ${MAX_FOCUS_TOPIC_LENGTH} characters`);
  }
  for (const flag of ['force', 'background'] as const) {
    if (r[flag] !== undefined && typeof r[flag] !== 'boolean') throw new InvalidInputError(flag, 'must be a boolean');
  }
  if (r.trigger !== undefined && r.trigger !== 'update' && r.trigger !== 'signal' && r.trigger !== 'threshold') {
    throw new InvalidInputError('trigger', 'must be one of update, signal, threshold');
  }
  if (r.background === true) throw new BackgroundCompactionRejectedError();
  return {
    sessionId,
    requestId: r.requestId as string | undefined,
    focusTopic: r.focusTopic as string | undefined,
    force: r.force as boolean | undefined,
    trigger: r.trigger as CompactionTrigger | undefined,
  };
}

/**
 * The text rule (src/compaction/text.ts) on a request's strings: a request id or focus with a
 * NUL or a lone surrogate can be stored nowhere, so it is refused before it is admitted. The
 * Update validator and the clients run it, and the signal handler does behind a patch (a
 * signal dropped by it would change what an old history replays).
 *
 * A focus topic may also not hold a summary's structure (the summary marker, a ledger heading,
 * the ledger's closing line: src/compaction/summary-structure.ts), which only the service
 * writes. The clients and the Update validator refuse it; the signal handler passes
 * `focusStructure: false` (a signal it would now drop was admitted by the code that recorded
 * an older history), and the compaction activity removes what a signal's focus holds of it.
 */
export function checkRequestText(request: CompactRequest, options: { focusStructure?: boolean } = {}): CompactRequest {
  if (request.requestId !== undefined) checkText(request.requestId, 'requestId');
  if (request.focusTopic !== undefined) {
    checkText(request.focusTopic, 'focusTopic');
    const reserved = options.focusStructure === false ? undefined : reservedTextIn(request.focusTopic);
    if (reserved) throw new InvalidInputError('focusTopic', `may not contain ${reserved}: only the service writes a summary's structure`);
  }
  return request;
}

/** The job the workflow hands each compaction activity (its wire shape: recorded histories hold `parentSessionId`). */
export interface CompactionJob {
  jobId: string;
  lineageId: string;
  /** The head the workflow believes current, and its generation. */
  parentSessionId: string;
  generation: number;
  requestIds: string[];
  trigger: string;
  /**
   * The lineage incarnation the job began on, once an attempt learnt it (sc_compaction_begin
   * answers it; a retried attempt has it from its predecessor's heartbeat): a lineage erased
   * and created again meanwhile is not this job's, and the job writes nothing to it.
   */
  incarnation?: string;
}
