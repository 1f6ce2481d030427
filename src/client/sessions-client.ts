/**
 * SessionsClient: the library services use to create sessions, append messages, compact and
 * read transcripts. Appends and reads go to Postgres (the data plane); compaction requests go
 * to the lineage's workflow as an Update (answered with the committed result) or a signal.
 */
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  type GrpcRetryOptions,
  makeGrpcRetryInterceptor,
  isGrpcServiceError,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import * as queries from '../db/lineage-queries';
import { type CompactionProgress, progressFromPendingActivity } from './progress';
import { clientTracingInterceptors, installTracingFromConfig } from '../tracing';
import { type MessageLimits, parseMessages } from '../compaction/message-schema';
import { checkText, codePointLength } from '../compaction/text';
import { isJsonObject } from '../compaction/json';
import { type Ledger, ledgerFrom } from '../compaction/ledger';
import { encryptedDataConverter } from '../codec/aes-gcm-codec';
import { type Config, loadConfig } from '../config';
import { clientConnectionOptions } from '../temporal-connection';
import { type DatabaseHandle, openDatabase, readWithRetry } from '../db/database';
import { rowToMessage } from '../db/schema';
import * as store from '../db/session-store';
import { LineagePoller } from './answer-poller';
import * as retention from './retention';
import type { RetentionOptions } from './retention';
import type { RetentionPolicy, RetentionTotals } from '../workflows/retention';
import { BackgroundCompactionRejectedError, CallTimeoutError, InvalidInputError, LineageClosedError } from '../errors';
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
  type CompactResult,
  lineageWorkflowId,
  requestResultQuery,
  requestStatusQuery,
  type SessionLineageInput,
  type LineageState,
  stateQuery,
} from '../workflows/contract';
import { CompactionCount, SessionHead, SessionLineage, SessionSource } from '../workflows/search-attributes';
import { DEFAULT_LINEAGE_SETTINGS, type LineageSettings } from '../workflows/settings';
import type { sessionLineageWorkflow } from '../workflows/session-lineage';
import { type Dialect, dialectOf, type DialectName, type Message } from '../compaction/dialects';
import { contextWindowOf, type TokenCounter, tokenCounterFor, type TokenizerName, tokenizerFor } from '../compaction/token-counter';

const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_NOT_FOUND = 5;

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
export interface LineageStateWithProgress extends LineageState {
  progress?: CompactionProgress;
}

/** What `compact` answers: the wire result, and the transcript to continue the conversation with. */
export interface CompactResultWithTranscript extends CompactResult {
  /** The transcript of `sessionId`, the head after the call, exactly as stored. */
  messages: Message[];
}

/**
 * True for the server's refusal of an Update beyond the per-workflow in-flight limit, and
 * nothing else (not other rate limits): RESOURCE_EXHAUSTED with the in-flight Update message.
 */
export function isUpdateLimitError(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    const message = String((e as { message?: unknown }).message ?? '') + String((e as { details?: unknown }).details ?? '');
    if (code === GRPC_RESOURCE_EXHAUSTED && /in-flight update|inflight update/i.test(message)) return true;
  }
  return false;
}

/** True when the workflow run an Update was sent to ended (completed or continued as new) before answering it. */
function isRunEndedError(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const name = (e as Error).name;
    const message = String((e as { message?: unknown }).message ?? '');
    const type = (e as { type?: unknown }).type;
    if (name === 'WorkflowNotFoundError' || type === 'AcceptedUpdateCompletedWorkflow') return true;
    if (/workflow execution already completed|completed before the update completed|continued as new|continuedasnew/i.test(message)) return true;
  }
  return false;
}

const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/** True for errors of reaching the server (it restarts, the network blips) or a workflow whose task is being retried: safe to resend. */
function isTransientConnectionError(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED) return true;
    if ((e as Error).name === 'WorkflowUpdateRPCTimeoutOrCancelledError') return true;
    // The server will not take an Update while the workflow's last task failed or timed out
    // (its worker froze or died); the task is retried on another worker, so resend.
    if (/workflow task in failed state/i.test(String((e as { message?: unknown }).message ?? ''))) return true;
  }
  return false;
}

/** Maps a failure from the workflow (an Update validator) back to the typed error it was. */
function userErrorFrom(error: unknown, lineageId: string): Error {
  if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
    const { type, message } = error.cause;
    if (type === 'BackgroundCompactionRejectedError') return new BackgroundCompactionRejectedError();
    if (type === 'InvalidInputError') return new InvalidInputError('request', message.replace(/^invalid request: /, ''));
    if (type === 'LineageClosedError') return new LineageClosedError(lineageId);
  }
  return error as Error;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long an append waits to send the compaction request it decided on; past it, the next append sends it. */
const AUTO_REQUEST_TIMEOUT_MS = 30_000;

/** Turns `compactAt` (tokens, or a percentage of the context window) into tokens. */
/** The largest token count Postgres' integer columns hold. */
const MAX_TOKENS = 2_147_483_647;

function resolveThreshold(compactAt: number | string | undefined, contextWindow: number | undefined): number | undefined {
  if (compactAt === undefined) return undefined;
  if (typeof compactAt === 'number') {
    if (!Number.isInteger(compactAt) || compactAt < 1 || compactAt > MAX_TOKENS)
      throw new InvalidInputError('compactAt', `must be a whole number of tokens from 1 to ${MAX_TOKENS} or a percentage such as "80%"`);
    return compactAt;
  }
  const match = /^(\d+(?:\.\d+)?)%$/.exec(typeof compactAt === 'string' ? compactAt.trim() : '');
  if (!match) {
    const tokens = Number(compactAt);
    if (typeof compactAt === 'string' && /^\d+$/.test(compactAt.trim()) && tokens >= 1 && tokens <= MAX_TOKENS) return tokens;
    throw new InvalidInputError('compactAt', `must be a whole number of tokens from 1 to ${MAX_TOKENS} or a percentage such as "80%"`);
  }
  const percent = Number(match[1]);
  if (percent <= 0 || percent > 100) throw new InvalidInputError('compactAt', 'a percentage must be above 0 and at most 100');
  if (contextWindow === undefined) {
    throw new InvalidInputError('compactAt', 'a percentage needs the context window: pass contextWindow, or a model whose window is known');
  }
  return Math.max(1, Math.floor((contextWindow * percent) / 100));
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
    private readonly owned: { connection?: Connection; database?: DatabaseHandle },
    private readonly settings: LineageSettings,
    private readonly messageLimits: MessageLimits,
    requestLostAfterMs: number,
    unreachableTimeoutMs = 120_000,
  ) {
    this.unreachableTimeoutMs = unreachableTimeoutMs;
    this.requestLostAfterMs = requestLostAfterMs;
  }

  static async connect(options: SessionsClientOptions = {}): Promise<SessionsClient> {
    const config = options.config ?? loadConfig();
    const retry = defaultGrpcRetryOptions();
    // The server refuses an 11th concurrent Update on one workflow with RESOURCE_EXHAUSTED.
    // compact() handles that itself (see below), at once rather than after gRPC backoff.
    // Lazy: the connection is made on the first call to Temporal, so the commands that read
    // only Postgres (transcript, lineage, list, history, audit) work while Temporal is down.
    const connection =
      options.connection ??
      Connection.lazy({
        ...clientConnectionOptions(config.temporal),
        interceptors: [
          makeGrpcRetryInterceptor({
            ...retry,
            retryableDecider: (...[attempt, status]: Parameters<GrpcRetryOptions['retryableDecider']>) =>
              // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- grpc-js's Status enum is not our dependency; 8 is RESOURCE_EXHAUSTED
              !(status.code === GRPC_RESOURCE_EXHAUSTED && /update/i.test(status.details)) && retry.retryableDecider(attempt, status),
          }),
        ],
      });
    const database = options.database ?? openDatabase(config.databaseUrl);
    const encrypted = encryptedDataConverter(config.payloadEncryptionKeys);
    installTracingFromConfig(config);
    const tracing = clientTracingInterceptors();
    const temporal = new Client({
      connection,
      namespace: config.temporal.namespace,
      ...(encrypted ? { dataConverter: encrypted } : {}),
      ...(tracing ? { interceptors: { workflow: tracing } } : {}),
    });
    // Every setting is fixed in the lineage's start input, so a later change of a default
    // cannot change how an open lineage's history replays.
    const settings: LineageSettings = {
      ...DEFAULT_LINEAGE_SETTINGS,
      leaseTtlMs: config.compaction.leaseTtlMs,
      attemptTimeoutMs: config.compaction.attemptTimeoutMs,
      maxAttempts: config.compaction.maxAttempts,
      ...options.settings,
    };
    return new SessionsClient(
      config,
      temporal,
      database,
      { connection: options.connection ? undefined : connection, database: options.database ? undefined : database },
      settings,
      options.messageLimits ?? config.messageLimits,
      options.requestLostAfterMs ?? 30_000,
    );
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
  }> {
    const sessionId = checkNewSessionId(options.sessionId);
    const mode = options.mode ?? 'rotate';
    if (!COMPACTION_MODES.includes(mode)) throw new InvalidInputError('mode', `must be one of ${COMPACTION_MODES.join(', ')}`);
    if (options.source !== undefined && (typeof options.source !== 'string' || options.source.length === 0 || codePointLength(options.source) > 100)) {
      throw new InvalidInputError('source', 'must be a string of 1 to 100 characters');
    }
    if (options.source !== undefined) checkText(options.source, 'source');
    const { model } = options;
    if (model !== undefined && (typeof model !== 'string' || model.length === 0 || codePointLength(model) > 200)) {
      throw new InvalidInputError('model', 'must be a string of 1 to 200 characters');
    }
    if (model !== undefined) checkText(model, 'model');
    const contextWindow = options.contextWindow ?? contextWindowOf(model);
    if (contextWindow !== undefined && (!Number.isInteger(contextWindow) || contextWindow < 1 || contextWindow > MAX_TOKENS)) {
      throw new InvalidInputError('contextWindow', `must be a whole number from 1 to ${MAX_TOKENS}`);
    }
    const dialect = dialectOf(options.dialect).name;
    const compactAtTokens = resolveThreshold(options.compactAt ?? options.compactAtTokens, contextWindow);
    const lineage = await store.createSession(this.database.db, { sessionId, source: options.source, mode, dialect, compactAtTokens, model, contextWindow });
    await this.temporal.workflow.start('sessionLineageWorkflow', { ...this.startOptions(lineage), workflowIdConflictPolicy: 'USE_EXISTING' });
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
   */
  async append(sessionId: string, messages: unknown, options: { appendKey?: string } = {}): Promise<AppendOutcome> {
    checkSessionId(sessionId);
    const { appendKey } = options;
    if (appendKey !== undefined && (typeof appendKey !== 'string' || appendKey.length === 0 || codePointLength(appendKey) > 200)) {
      throw new InvalidInputError('appendKey', 'must be a string of 1 to 200 characters');
    }
    if (appendKey !== undefined) checkText(appendKey, 'appendKey');
    const { counter, dialect } = await this.lineageFormat(sessionId);
    const batch = parseMessages(messages, this.messageLimits, dialect);
    const send = () =>
      store.appendMessages(
        this.database.db,
        sessionId,
        batch,
        batch.map((m) => counter.count(m)),
        this.config.autoCompaction,
        { appendKey },
      );
    // With a key, a batch whose answer was lost to a connection error is sent again: the key
    // makes the resend store nothing twice. Without one, a resend could, so it is not made.
    return this.requestAutoCompaction(appendKey ? await readWithRetry(send) : await send());
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
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || codePointLength(key) > 200)) {
      throw new InvalidInputError('key', 'must be a string of 1 to 200 characters');
    }
    if (key !== undefined) checkText(key, 'key');
    const { expected } = options;
    if (expected !== undefined && (!Array.isArray(expected) || !expected.every(isJsonObject)))
      throw new InvalidInputError('expected', 'must be an array of messages');
    const { counter, dialect } = await this.lineageFormat(sessionId);
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
      await this.withDeadline(Date.now() + AUTO_REQUEST_TIMEOUT_MS, undefined, requestId, () =>
        this.requestCompaction(appended.sessionId, { requestId, trigger: 'threshold' }),
      );
      return { ...appended, compactionRequestId: requestId };
    } catch (error) {
      // The messages are stored: an error here must not make the caller append them again.
      const lineage = await store.lineageOf(this.database.db, appended.sessionId).catch(() => undefined);
      if (lineage) await store.releaseAutoCompaction(this.database.db, lineage.lineageId, requestId).catch(() => undefined);
      return { ...appended, compactionRequestError: `could not request the compaction: ${(error as Error).message}` };
    }
  }

  /** A lineage's model and dialect never change, so its token counter and dialect are remembered per session id. */
  private readonly formats = new Map<string, { counter: TokenCounter; dialect: Dialect }>();

  private async lineageFormat(sessionId: string): Promise<{ counter: TokenCounter; dialect: Dialect }> {
    const known = this.formats.get(sessionId);
    if (known) return known;
    const lineage = await readWithRetry(() => store.lineageOf(this.database.db, sessionId));
    const dialect = dialectOf(lineage.dialect);
    const format = { counter: tokenCounterFor(lineage.model, dialect), dialect };
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
    const { timeoutMs, signal, ...fields } = options;
    const request = checkRequestText(checkCompactRequest({ sessionId, ...fields, requestId: fields.requestId ?? randomUUID() }));
    const requestId = request.requestId!;
    const deadline = this.deadlineOf(timeoutMs);
    const lineage = await readWithRetry(() => store.lineageOf(this.database.db, request.sessionId));
    if (lineage.closed) throw new LineageClosedError(lineage.lineageId);
    const recorded = () =>
      fields.requestId ? readWithRetry(() => store.recordedAnswer(this.database.db, lineage.lineageId, requestId)) : Promise.resolve(undefined);
    // An operation object is single-use: each (re)send gets a fresh one.
    const startWorkflowOperation = () =>
      new WithStartWorkflowOperation<typeof sessionLineageWorkflow>('sessionLineageWorkflow', {
        ...this.startOptions(lineage),
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
    const result = await this.withDeadline(deadline, signal, requestId, async () => {
      let resends = 0;
      for (;;) {
        const known = await recorded();
        if (known) return known;
        try {
          return await this.resendWhileUnreachable(deadline, () =>
            this.temporal.workflow.executeUpdateWithStart(compactUpdate, { args: [request], startWorkflowOperation: startWorkflowOperation() }),
          );
        } catch (error) {
          if (isUpdateLimitError(error)) {
            this.stats.updateLimitFallbacks++;
            return this.compactBySignal(lineage, request, deadline, signal);
          }
          // The run ended (continued as new under load, or completed) before it answered:
          // send the same request id again; the next run answers it or runs it once.
          if (isRunEndedError(error) && Date.now() < deadline) {
            // Closed meanwhile? Then the run ended for good: say so instead of starting runs.
            const now = await readWithRetry(() => store.lineageOf(this.database.db, lineage.lineageId));
            if (now.closed) throw new LineageClosedError(lineage.lineageId);
            this.stats.resentAfterRunEnded++;
            await sleep(Math.min(1000, 100 * 2 ** resends++));
            continue;
          }
          throw userErrorFrom(error, lineage.lineageId);
        }
      }
    });
    // The compaction is done whatever happens now; a database restart must not turn its
    // answer into an error, so the read of the new head is retried.
    const rows = await readWithRetry(() => store.sessionMessages(this.database.db, result.sessionId));
    return { ...result, messages: rows.map(rowToMessage) };
  }

  /** The absolute deadline of a call: `timeoutMs` from now, or the configured default. */
  private deadlineOf(timeoutMs: number | undefined): number {
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0))
      throw new InvalidInputError('timeoutMs', 'must be a positive number of milliseconds');
    return Date.now() + (timeoutMs ?? this.config.compaction.callTimeoutMs);
  }

  /**
   * Runs `fn` with every Temporal call in it bounded by the deadline and the caller's signal;
   * either ending turns into CallTimeoutError.
   */
  private async withDeadline<T>(deadline: number, signal: AbortSignal | undefined, requestId: string | undefined, fn: () => Promise<T>): Promise<T> {
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
      return await Promise.race([this.temporal.connection.withAbortSignal(controller.signal, fn), aborted]);
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Resends a request while the Temporal server cannot be reached (a restart, a network
   * blip), for up to `unreachableTimeoutMs` and never past the deadline. Safe because every
   * request carries its id: the workflow answers a known id with its first answer and never
   * runs it twice.
   */
  private async resendWhileUnreachable<T>(deadline: number, send: () => Promise<T>): Promise<T> {
    const until = Math.min(deadline, Date.now() + this.unreachableTimeoutMs);
    for (let delay = 200; ; delay = Math.min(delay * 2, 5000)) {
      try {
        return await send();
      } catch (error) {
        if (!isTransientConnectionError(error) || Date.now() + delay > until) throw error;
        this.stats.resentWhileUnreachable++;
        await sleep(delay);
      }
    }
  }

  /**
   * The fallback when the workflow already has the server's maximum of in-flight Updates:
   * the same request as a signal-with-start (not limited, and it starts a run if the last one
   * just ended), then its answer from the shared poll.
   */
  private async compactBySignal(
    lineage: store.LineageInfo,
    request: ReturnType<typeof checkCompactRequest>,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<CompactResult> {
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
    const request = checkRequestText(checkCompactRequest({ sessionId, ...options, requestId }));
    const lineage = await store.lineageOf(this.database.db, request.sessionId);
    if (lineage.closed) throw new LineageClosedError(lineage.lineageId);
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
    const deadline = this.deadlineOf(options.timeoutMs);
    const lineage = await store.lineageOf(this.database.db, checkSessionId(sessionId));
    if (lineage.closed) return;
    const handle = this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
    await this.withDeadline(deadline, options.signal, undefined, async () => {
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
    const deadline = this.deadlineOf(options.timeoutMs);
    const lineage = await readWithRetry(() => store.lineageOf(this.database.db, sessionId));
    await store.closeLineage(this.database.db, lineage.lineageId);
    const workflowRuns = await this.withDeadline(deadline, options.signal, undefined, () => this.deleteWorkflowRuns(lineageWorkflowId(lineage.lineageId)));
    const erased = await store.eraseLineageRows(this.database.db, lineage.lineageId);
    // The id may come back as another lineage (another dialect or model).
    this.formats.clear();
    return { ...erased, workflowRuns };
  }

  /** Runs retention once, now (src/client/retention.ts), and answers what it pruned. */
  runRetention(policy: RetentionPolicy, options: RetentionOptions = {}): Promise<RetentionTotals> {
    return retention.runRetention(this.temporal, this.config.temporal.taskQueue, policy, options);
  }

  /** Has Temporal run retention every `every` ('24h'): a Temporal Schedule, created or updated. */
  scheduleRetention(policy: RetentionPolicy, options: RetentionOptions & { every: string }) {
    return retention.scheduleRetention(this.temporal, this.config.temporal.taskQueue, policy, options);
  }

  /** Stops scheduled retention (false when none was scheduled). */
  unscheduleRetention(): Promise<boolean> {
    return retention.unscheduleRetention(this.temporal);
  }

  /** Terminates a lineage's workflow and deletes each of its runs from Temporal; answers how many runs were deleted. */
  private async deleteWorkflowRuns(workflowId: string): Promise<number> {
    const notFound = (error: unknown) =>
      // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- grpc-js's Status enum is not our dependency; 5 is NOT_FOUND
      error instanceof WorkflowNotFoundError || (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND);
    await this.temporal.workflow
      .getHandle(workflowId)
      .terminate('session lineage erased')
      .catch((error: unknown) => {
        if (!notFound(error)) throw error;
      });
    const runs = new Set<string>();
    for await (const run of this.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.add(run.runId);
    const { namespace } = this.config.temporal;
    const remove = (runId?: string) =>
      this.temporal.workflowService.deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, ...(runId ? { runId } : {}) } }).then(
        () => true,
        (error: unknown) => {
          if (notFound(error)) return false;
          throw error;
        },
      );
    let deleted = 0;
    for (const runId of runs) if (await remove(runId)) deleted++;
    // Visibility lags: a run the list does not show yet is the latest one.
    if (runs.size === 0 && (await remove())) deleted++;
    return deleted;
  }

  /**
   * Waits for the answer to a request sent with requestCompaction (or by an append's
   * threshold), at most `timeoutMs` (CallTimeoutError). A request the workflow never got, or
   * whose run ended without it, is RequestLostError: send it again with the same id.
   */
  async waitForResult(sessionId: string, requestId: string, options: WaitOptions = {}): Promise<CompactResult> {
    const deadline = this.deadlineOf(options.timeoutMs);
    const lineage = await readWithRetry(() => store.lineageOf(this.database.db, checkSessionId(sessionId)));
    return this.awaitAnswer(lineage.lineageId, requestId, deadline, options.signal);
  }

  async result(sessionId: string, requestId: string): Promise<CompactResult | null> {
    const lineage = await store.lineageOf(this.database.db, checkSessionId(sessionId));
    return this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId)).query(requestResultQuery, requestId);
  }

  /** The workflow's state query, plus `progress` of the compaction in flight (from its heartbeats). */
  async state(sessionId: string): Promise<LineageStateWithProgress> {
    const lineage = await store.lineageOf(this.database.db, checkSessionId(sessionId));
    const handle = this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
    const [state, progress] = await Promise.all([handle.query(stateQuery), this.progressOfWorkflow(lineage.lineageId)]);
    return progress ? { ...state, progress } : state;
  }

  /**
   * The progress of the lineage's running compaction, or undefined when none runs. Read from
   * the workflow's description: the pending compactSession activity's last heartbeat details,
   * decoded with this client's data converter (so encrypted details decode too).
   */
  async progress(sessionId: string): Promise<CompactionProgress | undefined> {
    const lineage = await store.lineageOf(this.database.db, checkSessionId(sessionId));
    return this.progressOfWorkflow(lineage.lineageId);
  }

  private async progressOfWorkflow(lineageId: string): Promise<CompactionProgress | undefined> {
    const { raw } = await this.temporal.workflow.getHandle(lineageWorkflowId(lineageId)).describe();
    const converter = this.temporal.options.loadedDataConverter;
    for (const activity of raw.pendingActivities ?? []) {
      let details: unknown;
      try {
        details = activity.heartbeatDetails?.payloads?.length ? await decodeFromPayloadsAtIndex(converter, 0, activity.heartbeatDetails.payloads) : undefined;
      } catch {
        details = undefined; // Undecodable (a key this client lacks): show the phase as unknown.
      }
      const progress = progressFromPendingActivity(
        {
          activityId: activity.activityId,
          activityType: activity.activityType?.name,
          details,
          attempt: activity.attempt,
          maximumAttempts: activity.maximumAttempts,
          lastStartedTime: optionalTsToDate(activity.lastStartedTime),
          lastHeartbeatTime: optionalTsToDate(activity.lastHeartbeatTime),
          lastFailure: activity.lastFailure?.message,
        },
        Date.now(),
      );
      if (progress) return progress;
    }
    return undefined;
  }

  /** Lineages, a page at a time (Postgres only). */
  async listLineages(options: queries.ListLineagesOptions = {}): Promise<queries.LineagePage> {
    return readWithRetry(() => queries.listLineages(this.database.db, options));
  }

  /** The lineage of a session with every compaction, oldest first (Postgres only). */
  async history(sessionId: string): Promise<queries.LineageDetail> {
    checkSessionId(sessionId);
    return readWithRetry(() => queries.lineageDetail(this.database.db, sessionId));
  }

  /** One compaction with the parent transcript and what it produced (Postgres only). */
  async compaction(compactionId: string): Promise<queries.CompactionDetail> {
    if (typeof compactionId !== 'string' || compactionId.length === 0 || compactionId.length > 300)
      throw new InvalidInputError('compactionId', 'must be a string of 1 to 300 characters');
    return readWithRetry(() => queries.compactionDetail(this.database.db, compactionId));
  }

  /** The namespace and workflow id of a lineage, for links to the Temporal Web UI. */
  workflowLocation(lineageId: string): { namespace: string; workflowId: string } {
    return { namespace: this.config.temporal.namespace, workflowId: lineageWorkflowId(lineageId) };
  }

  /**
   * The ledger the lineage's head carries (src/compaction/ledger.ts): the user's requests and
   * corrections, files, commands, open errors and identifiers its compactions kept, as JSON;
   * null before the first compaction (Postgres only).
   */
  async ledger(sessionId: string): Promise<Ledger | null> {
    checkSessionId(sessionId);
    const stored = await readWithRetry(() => store.sessionLedger(this.database.db, sessionId));
    return stored === null ? null : ledgerFrom(stored);
  }

  /** The integrity audit of one lineage (Postgres only). */
  async auditLineage(sessionId: string): Promise<store.AuditReport & { lineageId: string }> {
    checkSessionId(sessionId);
    return queries.auditLineage(this.database.db, sessionId);
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

  async lineage(sessionId: string) {
    checkSessionId(sessionId);
    return readWithRetry(() => store.lineageSessions(this.database.db, sessionId));
  }

  async audit(): Promise<store.AuditReport> {
    return store.audit(this.database.db);
  }

  /** The workflow handle of a session's lineage, for operators and tests. */
  async workflowHandle(sessionId: string) {
    const lineage = await store.lineageOf(this.database.db, checkSessionId(sessionId));
    return this.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
  }

  async close(): Promise<void> {
    await this.owned.database?.close();
    await this.owned.connection?.close();
  }

  private startOptions(lineage: store.LineageInfo) {
    const input: SessionLineageInput = {
      lineageId: lineage.lineageId,
      headSessionId: lineage.headSessionId,
      generation: lineage.generation,
      mode: lineage.mode,
      ...(lineage.source ? { source: lineage.source } : {}),
      settings: this.settings,
    };
    return {
      workflowId: lineageWorkflowId(lineage.lineageId),
      taskQueue: this.config.temporal.taskQueue,
      args: [input] as [SessionLineageInput],
      staticSummary: `Session lineage ${lineage.lineageId}${lineage.source ? ` (${lineage.source})` : ''}, ${lineage.mode}`,
      staticDetails: `Compactions of session lineage \`${lineage.lineageId}\` run here one at a time. Transcripts live in Postgres; see the state query for head and queue.`,
      typedSearchAttributes: [
        { key: SessionLineage, value: lineage.lineageId },
        { key: SessionHead, value: lineage.headSessionId },
        { key: CompactionCount, value: lineage.generation },
        ...(lineage.source ? [{ key: SessionSource, value: lineage.source }] : []),
      ],
    };
  }
}
