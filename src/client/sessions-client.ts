/**
 * SessionsClient: the library services use to create sessions, append messages, compact and
 * read transcripts. Appends and reads go to Postgres (the data plane); compaction requests go
 * to the lineage's workflow as an Update (answered with the committed result) or a signal.
 * What an operator reads (state, history, audit, retention, ...) is on `sessions.operator`
 * (src/client/operator-client.ts).
 */
import { randomUUID } from 'node:crypto';
import { type Client, type Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { closeOwned, connectCore, type OwnedConnections, withCallerErrors } from './client-core';
import { OperatorClient } from './operator-client';
import { deleteWorkflowRuns } from './lineage-workflow';
import { type MessageLimits, parseMessages } from '../compaction/message-schema';
import { checkText, codePointLength } from '../compaction/text';
import { isJsonObject } from '../compaction/json';
import type { Config } from '../config';
import { type DatabaseHandle, readWithRetry } from '../db/database';
import * as store from '../db/session-store';
import { LineagePoller } from './answer-poller';
import {
  type CompactionEvent,
  type CompactionEventPage,
  type CompactionEventsOptions,
  followCompactionEvents,
  readCompactionEventPage,
  type ReadCompactionEventsOptions,
} from './compaction-events';
import { InvalidInputError, LineageClosedError, LineageErasedError } from '../errors';
import { deadlineOf, resendWhileUnreachable, runEndedResendDelay, sleep, withDeadline } from './deadline';
import { isRunEndedError, isUpdateLimitError, typedErrorFrom } from './rpc-errors';
import { JOIN_RUNNING_WORKFLOW, lineageStartOptions } from './start-options';
import { resolveContextWindow, resolveThreshold } from './thresholds';
import {
  checkCompactRequest,
  checkRequestText,
  checkNewSessionId,
  checkSessionId,
  closeSignal,
  COMPACTION_MODES,
  compactSignal,
  compactUpdate,
  type CompactionMode,
  type CompactRequest,
  type CompactResult,
  lineageWorkflowId,
  requestResultQuery,
  requestStatusQuery,
} from '../workflows/contract';
import { DEFAULT_LINEAGE_SETTINGS, type LineageSettings } from '../workflows/settings';
import type { sessionLineageWorkflow } from '../workflows/session-lineage';
import { type Dialect, dialectOf, type DialectName, type Message } from '../compaction/dialects';
import { type TokenCounter, tokenCounterFor, type TokenizerName, tokenizerFor } from '../compaction/token-counter';

export interface SessionsClientOptions {
  config?: Config;
  connection?: Connection;
  database?: DatabaseHandle;
  settings?: Partial<LineageSettings>;
  messageLimits?: MessageLimits;
  /** How long a request may stay unknown to a running workflow before waiting for it fails with RequestLostError (default 30 s). */
  requestLostAfterMs?: number;
}

export interface CreateSessionOptions {
  sessionId: string;
  source?: string;
  mode?: CompactionMode;
  /**
   * The auto-compaction threshold: tokens, or a percentage of the model's context window
   * (`'80%'`). An append that leaves the head at or above it requests a compaction, unless
   * one is pending or a cooldown after a refused or aborted job runs.
   */
  compactAt?: number | `${number}%`;
  /** The same threshold in tokens (kept for existing callers). */
  compactAtTokens?: number;
  /** The model the agent talks to: token counts use its tokenizer, and its context window when known. */
  model?: string;
  /** The model's context window in tokens, if it is not known from the model name. */
  contextWindow?: number;
  /**
   * The provider API format of the lineage's messages: `openai-chat` (default),
   * `openai-responses`, `anthropic` or `gemini`. Messages are stored and returned in it.
   */
  dialect?: DialectName;
  /**
   * The rungs the lineage's compactions may use (`masking`, `native`, `summary`, `trim`; docs/compaction.md,
   * "Which rungs a lineage uses"); the others pass as not enabled. Absent: the worker's default
   * (COMPACTION_RUNGS, every rung when unset). An unknown name, an empty list or the trim alone
   * is an InvalidInputError and nothing is written.
   */
  rungs?: string[];
}

/** How `transcript` shapes the head: as stored (exactly as appended), or normalised for the provider's next call. */
export interface TranscriptOptions {
  includeArchived?: boolean;
  /** `'provider'`: the head as the agent sends it (each dialect's provider view); default: as stored. */
  for?: 'stored' | 'provider';
}

export interface AppendOutcome extends Omit<store.AppendResult, 'autoCompactionRequestId'> {
  /** The request id of the compaction this append requested (the head is at or above the threshold). */
  compactionRequestId?: string;
  /** Set when the append should have requested a compaction but could not; the next append tries again. */
  compactionRequestError?: string;
}

/** Every call that waits has a deadline. */
export interface WaitOptions {
  /** Give up after this long (default COMPACTION_CALL_TIMEOUT_MS) with CallTimeoutError. */
  timeoutMs?: number;
  /** Give up when this aborts, with CallTimeoutError. */
  signal?: AbortSignal;
}

export interface CompactOptions extends WaitOptions {
  focusTopic?: string;
  force?: boolean;
  requestId?: string;
  background?: boolean;
}

/** The state query's answer, with the progress of the compaction in flight (from its heartbeats). */
/** What `compact` answers: the wire result, and the transcript to continue the conversation with. */
export interface CompactResultWithTranscript extends CompactResult {
  /** The transcript of `sessionId`, the head after the call, exactly as stored. */
  messages: Message[];
}

/** How long an append waits to send the compaction request it decided on; past it, the next append sends it. */
const AUTO_REQUEST_TIMEOUT_MS = 30_000;

/** An optional caller-chosen name (source, model, key) under the text rule: a string of 1 to `most` code points. */
function checkName(value: unknown, field: string, most: number): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value.length === 0 || codePointLength(value) > most) {
    throw new InvalidInputError(field, `must be a string of 1 to ${most} characters`);
  }
  checkText(value, field);
}

export class SessionsClient {
  /** How often compact() met the server's in-flight Update limit and went by signal instead. */
  readonly stats = { updateLimitFallbacks: 0, resentWhileUnreachable: 0, resentAfterRunEnded: 0 };
  /** How long compact() keeps resending while Temporal is unreachable. */
  private readonly unreachableTimeoutMs: number;
  /** How long a request may stay unknown to a running workflow before it counts as lost. */
  private readonly requestLostAfterMs: number;

  private constructor(
    private readonly config: Config,
    private readonly temporal: Client,
    private readonly database: DatabaseHandle,
    private readonly owned: OwnedConnections,
    private readonly settings: LineageSettings,
    private readonly messageLimits: MessageLimits,
    requestLostAfterMs: number,
    unreachableTimeoutMs = 120_000,
  ) {
    this.unreachableTimeoutMs = unreachableTimeoutMs;
    this.requestLostAfterMs = requestLostAfterMs;
    this.operator = new OperatorClient({ config, temporal, database });
  }

  /** The operator's reads and retention (OperatorClient), over this client's connections. */
  readonly operator: OperatorClient;

  static async connect(options: SessionsClientOptions = {}): Promise<SessionsClient> {
    const { config, temporal, database, owned } = connectCore(options);
    // Every setting is fixed in the lineage's start input, so a later change of a default
    // cannot change how an open lineage's history replays.
    const settings: LineageSettings = {
      ...DEFAULT_LINEAGE_SETTINGS,
      leaseTtlMs: config.compaction.leaseTtlMs,
      attemptTimeoutMs: config.compaction.attemptTimeoutMs,
      maxAttempts: config.compaction.maxAttempts,
      ...options.settings,
    };
    return new SessionsClient(config, temporal, database, owned, settings, options.messageLimits ?? config.messageLimits, options.requestLostAfterMs ?? 30_000);
  }

  /** Creates a session (the root of a new lineage) and starts its workflow. Idempotent. */
  async createSession(options: CreateSessionOptions): Promise<{
    sessionId: string;
    lineageId: string;
    mode: CompactionMode;
    dialect: DialectName;
    /** How the lineage's tokens are counted: a model's real tokenizer, or `estimate` (about four characters a token). */
    tokenizer: TokenizerName;
    source?: string;
    compactAtTokens?: number;
    model?: string;
    contextWindow?: number;
    rungs?: string[];
  }> {
    const sessionId = checkNewSessionId(options.sessionId);
    const { rungs } = options;
    if (rungs !== undefined && (!Array.isArray(rungs) || rungs.some((r) => typeof r !== 'string'))) {
      throw new InvalidInputError('rungs', 'must be a list of rung names');
    }
    const mode = options.mode ?? 'rotate';
    if (!COMPACTION_MODES.includes(mode)) throw new InvalidInputError('mode', `must be one of ${COMPACTION_MODES.join(', ')}`);
    checkName(options.source, 'source', 100);
    const { model } = options;
    checkName(model, 'model', 200);
    const contextWindow = resolveContextWindow(options.contextWindow, model);
    const dialect = dialectOf(options.dialect).name;
    const compactAtTokens = resolveThreshold(options.compactAt ?? options.compactAtTokens, contextWindow);
    const lineage = await store.createSession(this.database.db, {
      sessionId,
      source: options.source,
      mode,
      dialect,
      compactAtTokens,
      model,
      contextWindow,
      rungs,
    });
    // From now on this client writes to this incarnation of the lineage (see `append`).
    this.hold(lineage.lineageId, lineage.incarnation, true);
    await this.temporal.workflow.start('sessionLineageWorkflow', { ...this.startOptions(lineage), ...JOIN_RUNNING_WORKFLOW });
    return {
      sessionId,
      lineageId: lineage.lineageId,
      mode,
      dialect,
      tokenizer: tokenizerFor(model),
      ...(options.source ? { source: options.source } : {}),
      ...(compactAtTokens ? { compactAtTokens } : {}),
      ...(model ? { model } : {}),
      ...(contextWindow ? { contextWindow } : {}),
      ...(lineage.rungs ? { rungs: lineage.rungs } : {}),
    };
  }

  /**
   * Appends to the head of the session's lineage (a batch is all or nothing); answers with
   * the head it landed in. Token counts use the lineage model's tokenizer. An append that
   * leaves the head at or above the lineage's threshold may request a compaction by signal
   * (see AutoCompactionPolicy); if the signal fails, the next append sends it again.
   * With `appendKey`, a batch resent after a lost answer is stored once: the resend gets the
   * first append's answer with `replayed: true`, and the client itself resends a keyed batch
   * whose answer a connection error lost.
   *
   * The client holds the incarnation of each lineage it writes to, learnt at createSession or
   * at its first use of the lineage: once that lineage is erased (by any client), every append
   * of this client to it, resends included, is a LineageErasedError and writes nothing, even
   * after the id was created again (so are its replaceTail, compact and requestCompaction); createSession (or deleteLineage) through this client
   * moves it to the lineage the id has now.
   */
  async append(sessionId: string, messages: unknown, options: { appendKey?: string } = {}): Promise<AppendOutcome> {
    checkSessionId(sessionId);
    const { appendKey } = options;
    checkName(appendKey, 'appendKey', 200);
    const { counter, dialect, lineageId } = await this.lineageFormat(sessionId);
    const batch = parseMessages(messages, this.messageLimits, dialect);
    const incarnation = this.heldFor(lineageId);
    const send = () =>
      store.appendMessages(
        this.database.db,
        sessionId,
        batch,
        batch.map((m) => counter.count(m)),
        this.config.autoCompaction,
        { appendKey, incarnation },
      );
    // With a key, a batch whose answer was lost to a connection error is sent again: the key
    // makes the resend store nothing twice. Without one, a resend could, so it is not made.
    return this.requestAutoCompaction(appendKey ? await readWithRetry(send) : await send());
  }

  /**
   * The batch an `append` stored under `appendKey` in the session's lineage, exactly as
   * appended (compactions since do not change it), or null when the key stored nothing: what
   * a retried step reads to learn what its first attempt appended before it failed.
   */
  async appendedUnder(sessionId: string, appendKey: string): Promise<Message[] | null> {
    checkSessionId(sessionId);
    checkName(appendKey, 'appendKey', 200);
    return readWithRetry(() => store.messagesUnderAppendKey(this.database.db, sessionId, appendKey));
  }

  /**
   * Takes back the last messages of the session's head and appends `replacement` in their
   * place, in one transaction: what the agent frameworks' sessions call pop, clear and
   * "replace this exact suffix". `count` of them (default 1, `'all'` for every live message
   * of the head), or exactly `expected`: the head must end with these messages (JSON-equal),
   * else HistoryMismatchError and nothing changes. With `key` the operation is stored once per
   * lineage, in the namespace of append keys: sent again, it answers the first call
   * (`replayed: true`); a key used for anything else is refused. Messages taken back stay in
   * Postgres, archived (the audit counts them as taken back); a compaction whose summary read
   * one of them does not commit, so none comes back.
   */
  async replaceTail(
    sessionId: string,
    options: { count?: number | 'all'; expected?: unknown; replacement?: unknown; key?: string } = {},
  ): Promise<Omit<store.ReplaceTailResult, 'appended'> & { appended: AppendOutcome | null }> {
    checkSessionId(sessionId);
    const { count = 1, key } = options;
    if (count !== 'all' && (!Number.isInteger(count) || count < 0)) throw new InvalidInputError('count', "must be a whole number, 0 or more, or 'all'");
    checkName(key, 'key', 200);
    const { expected } = options;
    if (expected !== undefined && (!Array.isArray(expected) || !expected.every(isJsonObject)))
      throw new InvalidInputError('expected', 'must be an array of messages');
    const { counter, dialect, lineageId } = await this.lineageFormat(sessionId);
    const replacement =
      options.replacement === undefined || (Array.isArray(options.replacement) && options.replacement.length === 0)
        ? []
        : parseMessages(options.replacement, this.messageLimits, dialect);
    const send = () =>
      store.replaceTail(this.database.db, sessionId, {
        count: count === 'all' ? undefined : count,
        expected: expected as Message[] | undefined,
        replacement,
        tokens: replacement.map((m) => counter.count(m)),
        key,
        incarnation: this.heldFor(lineageId),
      });
    const result = key ? await readWithRetry(send) : await send();
    if (!result.appended || result.replayed) return { ...result, appended: result.appended && { ...result.appended, replayed: result.replayed } };
    return { ...result, appended: await this.requestAutoCompaction(result.appended) };
  }

  /** Sends the automatic compaction request an append's answer carries, if any (bounded; the append stands either way). */
  private async requestAutoCompaction(answer: store.AppendResult): Promise<AppendOutcome> {
    const { autoCompactionRequestId: requestId, ...appended } = answer;
    // A replayed keyed append already sent its request (or released it when that failed).
    if (!requestId || (appended as { replayed?: boolean }).replayed) return appended;
    try {
      // Bounded: the messages are stored, and a Temporal that stopped answering must not hold the append.
      await withDeadline(this.temporal.connection, Date.now() + AUTO_REQUEST_TIMEOUT_MS, undefined, requestId, () =>
        this.requestCompaction(appended.sessionId, { requestId, trigger: 'threshold' }),
      );
      return { ...appended, compactionRequestId: requestId };
    } catch (error) {
      // The messages are stored: an error here must not make the caller append them again.
      const lineage = await store.lineageState(this.database.db, appended.sessionId).catch(() => undefined);
      if (lineage) await store.releaseAutoCompaction(this.database.db, lineage.lineageId, requestId).catch(() => undefined);
      return { ...appended, compactionRequestError: `could not request the compaction: ${(error as Error).message}` };
    }
  }

  /** A lineage's model and dialect never change, so its token counter and dialect are remembered per session id. */
  private readonly formats = new Map<string, { counter: TokenCounter; dialect: Dialect; lineageId: string }>();
  /**
   * The incarnation of each lineage this client writes to, by lineage id (see `append`), the
   * most recently used last. At most `maxHeld`: past that the least recently used lineage is
   * forgotten with its formats, and learnt again (as it is then) at its next use.
   */
  private readonly held = new Map<string, string>();
  private readonly maxHeld = 10_000;

  /** Holds a lineage's incarnation: the first one seen, or (`replace`, at create) this one. */
  private hold(lineageId: string, incarnation: string, replace = false): void {
    if (!replace && this.held.has(lineageId)) return;
    this.held.delete(lineageId);
    while (this.held.size >= this.maxHeld) {
      const oldest = this.held.keys().next().value as string;
      this.held.delete(oldest);
      for (const [sessionId, format] of this.formats) if (format.lineageId === oldest) this.formats.delete(sessionId);
    }
    this.held.set(lineageId, incarnation);
  }

  /** The incarnation this client holds for a lineage it is about to write to, now its most recently used. */
  private heldFor(lineageId: string): string | undefined {
    const incarnation = this.held.get(lineageId);
    if (incarnation !== undefined) {
      this.held.delete(lineageId);
      this.held.set(lineageId, incarnation);
    }
    return incarnation;
  }

  /** A compaction asked by a client that wrote to an erased incarnation would compact the new lineage: LineageErasedError. */
  private checkHeld(lineage: store.LineageInfo, sessionId: string): void {
    const held = this.held.get(lineage.lineageId);
    if (held !== undefined && held !== lineage.incarnation) throw new LineageErasedError(sessionId);
  }

  private async lineageFormat(sessionId: string): Promise<{ counter: TokenCounter; dialect: Dialect; lineageId: string }> {
    const known = this.formats.get(sessionId);
    if (known) return known;
    const lineage = await readWithRetry(() => store.lineageState(this.database.db, sessionId));
    this.hold(lineage.lineageId, lineage.incarnation);
    const dialect = dialectOf(lineage.dialect);
    const format = { counter: tokenCounterFor(lineage.model, dialect), dialect, lineageId: lineage.lineageId };
    if (this.formats.size >= 10_000) this.formats.clear();
    this.formats.set(sessionId, format);
    return format;
  }

  /**
   * Compacts the session if it is still its lineage's head. Concurrent callers of one head
   * share one compaction and its result. A request id answered before is answered again the
   * same way (from the workflow, or from Postgres once the run that answered it is gone),
   * never re-run. Waits at most `timeoutMs` (default COMPACTION_CALL_TIMEOUT_MS) or until
   * `signal` aborts: CallTimeoutError, with the request id to wait for again.
   */
  async compact(sessionId: string, options: CompactOptions = {}): Promise<CompactResultWithTranscript> {
    const result = await this.compactAnswer(sessionId, options);
    // The compaction is done whatever happens now; a database restart must not turn its
    // answer into an error, so the read of the new head is retried.
    const messages = await readWithRetry(() => store.sessionMessageBodies(this.database.db, result.sessionId));
    return { ...result, messages };
  }

  /**
   * `compact` without reading the new head: the wire answer only, for a caller that keeps its
   * own copy of the transcript (or reads it later with `transcript`).
   */
  async compactAnswer(sessionId: string, options: CompactOptions = {}): Promise<CompactResult> {
    const { timeoutMs, signal, ...fields } = options;
    const asked = checkRequestText(checkCompactRequest({ sessionId, ...fields, requestId: fields.requestId ?? randomUUID() }));
    const deadline = this.callDeadline(timeoutMs);
    const lineage = await readWithRetry(() => store.lineageState(this.database.db, asked.sessionId));
    // The workflow knows sessions by their stored names (with tenants, `<tenant>:<id>`).
    const request = { ...asked, sessionId: lineage.sessionId };
    if (lineage.closed) throw new LineageClosedError(lineage.lineageId);
    this.checkHeld(lineage, request.sessionId);
    // Only a caller's own request id can have been answered before; a fresh one cannot.
    const answeredBefore = fields.requestId !== undefined;
    return withDeadline(this.temporal.connection, deadline, signal, request.requestId, () =>
      this.compactByUpdate(lineage, request, { answeredBefore, deadline, signal }),
    );
  }

  /**
   * The compact Update (with start), until it is answered: by signal at the in-flight Update
   * limit; sent again with the same request id when the run ended before it answered
   * (continued as new under load, or completed), since the next run answers it or runs it
   * once; answered from Postgres when a run that is gone answered it.
   */
  private async compactByUpdate(
    lineage: store.LineageInfo,
    request: CompactRequest,
    wait: { answeredBefore: boolean; deadline: number; signal?: AbortSignal },
  ): Promise<CompactResult> {
    for (let resends = 0; ; resends++) {
      const recorded = wait.answeredBefore
        ? await readWithRetry(() => store.recordedAnswer(this.database.db, lineage.lineageId, request.requestId!))
        : undefined;
      if (recorded) return recorded;
      try {
        return await this.resendWhileUnreachable(wait.deadline, () =>
          this.temporal.workflow.executeUpdateWithStart(compactUpdate, { args: [request], startWorkflowOperation: this.startOperation(lineage) }),
        );
      } catch (error) {
        if (isUpdateLimitError(error)) {
          this.stats.updateLimitFallbacks++;
          return this.compactBySignal(lineage, request, wait.deadline, wait.signal);
        }
        if (!isRunEndedError(error) || Date.now() >= wait.deadline) throw typedErrorFrom(error, lineage.lineageId);
        // Closed meanwhile? Then the run ended for good: say so instead of starting runs.
        const now = await readWithRetry(() => store.lineageState(this.database.db, lineage.lineageId));
        if (now.closed) throw new LineageClosedError(lineage.lineageId);
        this.stats.resentAfterRunEnded++;
        await sleep(runEndedResendDelay(resends));
      }
    }
  }

  /** The absolute deadline of a call: `timeoutMs` from now, or COMPACTION_CALL_TIMEOUT_MS. */
  private callDeadline(timeoutMs: number | undefined): number {
    return deadlineOf(timeoutMs, this.config.compaction.callTimeoutMs);
  }

  /** A new update-with-start operation: an operation object is single-use, so each (re)send gets a fresh one. */
  private startOperation(lineage: store.LineageInfo) {
    return new WithStartWorkflowOperation<typeof sessionLineageWorkflow>('sessionLineageWorkflow', { ...this.startOptions(lineage), ...JOIN_RUNNING_WORKFLOW });
  }

  /** Resends while Temporal is unreachable (src/client/deadline.ts), for up to `unreachableTimeoutMs` and never past the deadline. */
  private resendWhileUnreachable<T>(deadline: number, send: () => Promise<T>): Promise<T> {
    return resendWhileUnreachable(Math.min(deadline, Date.now() + this.unreachableTimeoutMs), send, () => this.stats.resentWhileUnreachable++);
  }

  /**
   * The fallback when the workflow already has the server's maximum of in-flight Updates:
   * the same request as a signal-with-start (not limited, and it starts a run if the last one
   * just ended), then its answer from the shared poll.
   */
  private async compactBySignal(lineage: store.LineageInfo, request: CompactRequest, deadline: number, signal?: AbortSignal): Promise<CompactResult> {
    await this.resendWhileUnreachable(deadline, () =>
      this.temporal.workflow.signalWithStart('sessionLineageWorkflow', {
        ...this.startOptions(lineage),
        signal: compactSignal,
        signalArgs: [{ ...request, trigger: 'update' }],
      }),
    );
    return this.awaitAnswer(lineage.lineageId, request.requestId!, deadline, signal);
  }

  private readonly pollers = new Map<string, LineagePoller>();

  /** Waits for a request's answer; callers of one lineage share one poll (see LineagePoller). */
  private awaitAnswer(lineageId: string, requestId: string, deadline: number, signal?: AbortSignal): Promise<CompactResult> {
    let poller = this.pollers.get(lineageId);
    if (!poller) {
      const handle = this.temporal.workflow.getHandle(lineageWorkflowId(lineageId));
      // The shared poll must not inherit one caller's deadline: it runs under its own signal.
      const unbounded = <T>(fn: () => Promise<T>) => this.temporal.connection.withAbortSignal(new AbortController().signal, fn);
      const far = () => Date.now() + this.unreachableTimeoutMs;
      poller = new LineagePoller(
        {
          statuses: (ids) => unbounded(() => this.resendWhileUnreachable(far(), () => handle.query(requestStatusQuery, ids))),
          running: async () => (await unbounded(() => this.resendWhileUnreachable(far(), () => handle.describe()))).status.name === 'RUNNING',
          recorded: (id) => readWithRetry(() => store.recordedAnswer(this.database.db, lineageId, id)),
        },
        this.requestLostAfterMs,
      );
      this.pollers.set(lineageId, poller);
    }
    const settled = poller.wait(requestId, deadline, signal);
    const forget = () => {
      if (poller!.idle && this.pollers.get(lineageId) === poller) this.pollers.delete(lineageId);
    };
    settled.then(forget, forget);
    return settled;
  }

  /**
   * Fire-and-forget compaction request; wait for its answer with `waitForResult`. A closed
   * lineage refuses it (LineageClosedError) before anything is sent, and a request id that
   * was answered already is not sent again.
   */
  async requestCompaction(
    sessionId: string,
    options: Omit<CompactOptions, 'timeoutMs' | 'signal'> & { trigger?: 'signal' | 'threshold' } = {},
  ): Promise<string> {
    const requestId = options.requestId ?? randomUUID();
    const asked = checkRequestText(checkCompactRequest({ sessionId, ...options, requestId }));
    const lineage = await store.lineageState(this.database.db, asked.sessionId);
    const request = { ...asked, sessionId: lineage.sessionId };
    if (lineage.closed) throw new LineageClosedError(lineage.lineageId);
    this.checkHeld(lineage, request.sessionId);
    // A request id answered by a run that is gone is answered from Postgres, never run again
    // (the next run would not know it). waitForResult reads that answer.
    if (options.requestId && (await readWithRetry(() => store.recordedAnswer(this.database.db, lineage.lineageId, requestId)))) return requestId;
    await this.temporal.workflow.signalWithStart('sessionLineageWorkflow', {
      ...this.startOptions(lineage),
      signal: compactSignal,
      signalArgs: [request],
    });
    return requestId;
  }

  /**
   * Closes the session's lineage: the workflow finishes its queue, marks the lineage closed
   * in Postgres and completes. Afterwards appends and compactions are refused. Waits at most
   * `timeoutMs` (default COMPACTION_CALL_TIMEOUT_MS) or until `signal` aborts.
   */
  async closeSession(sessionId: string, options: WaitOptions = {}): Promise<void> {
    const deadline = this.callDeadline(options.timeoutMs);
    const lineage = await store.lineageState(this.database.db, checkSessionId(sessionId));
    if (lineage.closed) return;
    const handle = this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
    await withDeadline(this.temporal.connection, deadline, options.signal, undefined, async () => {
      await this.temporal.workflow.signalWithStart('sessionLineageWorkflow', { ...this.startOptions(lineage), signal: closeSignal, signalArgs: [] });
      await handle.result();
    });
  }

  /**
   * Erases the session's lineage: every row of it in Postgres (sessions, messages, audit
   * rows, append keys, pruned ranges) and every run of its workflow in Temporal. The lineage
   * is closed first, so a request racing the erase gets LineageClosedError (or, once the rows
   * are gone, SessionNotFoundError), never a half-erased lineage; then its workflow is
   * terminated and its runs deleted; then its rows go, in one transaction. An erase that
   * failed midway leaves a closed lineage: call it again. Afterwards the same id can be
   * created again, as a new and empty lineage.
   */
  async deleteLineage(sessionId: string, options: WaitOptions = {}): Promise<store.ErasedRows & { workflowRuns: number }> {
    checkSessionId(sessionId);
    const deadline = this.callDeadline(options.timeoutMs);
    const lineage = await readWithRetry(() => store.lineageState(this.database.db, sessionId));
    await store.closeLineageOf(this.database.db, lineage.lineageId);
    const workflowRuns = await withDeadline(this.temporal.connection, deadline, options.signal, undefined, () =>
      deleteWorkflowRuns(this.temporal, this.config.temporal.namespace, lineageWorkflowId(lineage.lineageId)),
    );
    // Closed above; `close` too, so an erase resumed after a failure never meets an open lineage.
    const erased = await store.eraseLineageRows(this.database.db, lineage.lineageId, { close: true });
    // The id may come back as another lineage (another dialect or model): this client learns it anew.
    this.formats.clear();
    this.held.delete(lineage.lineageId);
    return { ...erased, workflowRuns };
  }

  /**
   * Waits for the answer to a request sent with requestCompaction (or by an append's
   * threshold), at most `timeoutMs` (CallTimeoutError). A request the workflow never got, or
   * whose run ended without it, is RequestLostError: send it again with the same id.
   */
  async waitForResult(sessionId: string, requestId: string, options: WaitOptions = {}): Promise<CompactResult> {
    const deadline = this.callDeadline(options.timeoutMs);
    const lineage = await readWithRetry(() => store.lineageState(this.database.db, checkSessionId(sessionId)));
    return this.awaitAnswer(lineage.lineageId, requestId, deadline, options.signal);
  }

  async result(sessionId: string, requestId: string): Promise<CompactResult | null> {
    const lineage = await store.lineageState(this.database.db, checkSessionId(sessionId));
    return this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId)).query(requestResultQuery, requestId);
  }

  /**
   * The head of the session's lineage: its messages exactly as appended (JSON-equal), or with
   * `{ for: 'provider' }` the provider-ready view the agent sends on its next call (openai-chat:
   * no `annotations`, no null `function_call`, `audio` as `{id}`; openai-responses: ids whose
   * reasoning was summarised away stripped; anthropic and gemini: as stored).
   */
  async transcript(sessionId: string, options: TranscriptOptions = {}) {
    checkSessionId(sessionId);
    if (options.for !== undefined && options.for !== 'stored' && options.for !== 'provider')
      throw new InvalidInputError('for', 'must be "stored" or "provider"');
    const transcript = await readWithRetry(() => store.headTranscript(this.database.db, sessionId, { includeArchived: options.includeArchived }));
    if (options.for !== 'provider') return transcript;
    return { ...transcript, messages: dialectOf(transcript.dialect).forProvider(transcript.messages) };
  }

  /**
   * One read of the compaction events of the session's lineage (any session id of it) after
   * `after`, at most `limit` (default 100): see compactionEvents. Answers at once, with no
   * events when none is new.
   */
  async readCompactionEvents(sessionId: string, options: ReadCompactionEventsOptions = {}): Promise<CompactionEventPage> {
    checkSessionId(sessionId);
    return readWithRetry(() => readCompactionEventPage(this.database.db, sessionId, options));
  }

  /**
   * The compaction events of the session's lineage as they happen, each an Agent Client
   * Protocol `compaction_update` (id, status in_progress / completed / failed / cancelled, the
   * summary, what the audit row knows in `_meta`) plus its `cursor`: `for await (const event of
   * client.compactionEvents(id, { signal }))`. From the first event of the lineage, or after
   * `after` (a cursor an earlier event gave, in this process or another: exactly the events
   * after it). Bounded: `limit` per read, a read every `pollIntervalMs` while nothing is new,
   * and it ends (without an error) after `idleTimeoutMs` with nothing new, at `timeoutMs`
   * (default COMPACTION_CALL_TIMEOUT_MS) or when `signal` aborts; resume with the last cursor.
   * src/client/compaction-events.ts says how each status is derived.
   */
  compactionEvents(sessionId: string, options: CompactionEventsOptions = {}): AsyncGenerator<CompactionEvent, void, undefined> {
    checkSessionId(sessionId);
    return followCompactionEvents((read) => this.readCompactionEvents(sessionId, read), options, this.config.compaction.callTimeoutMs);
  }

  async lineage(sessionId: string) {
    checkSessionId(sessionId);
    return readWithRetry(() => store.lineageSessions(this.database.db, sessionId));
  }

  async close(): Promise<void> {
    await closeOwned(this.owned);
  }

  private startOptions(lineage: store.LineageInfo) {
    return lineageStartOptions(lineage, this.settings, this.config.temporal.taskQueue);
  }
}

withCallerErrors(SessionsClient.prototype, (client) => (client as unknown as { config: Config }).config.databaseUrl);
