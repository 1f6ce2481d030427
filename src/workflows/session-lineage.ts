/**
 * One long-lived workflow per session lineage. Compaction requests arrive as Updates
 * (request/response) and signals (fire-and-forget) and go into one queue; the main loop
 * drains it one job at a time. The workflow's single-threaded execution is the lock: two
 * compactions of one lineage can never run at once, so the lineage can never fork.
 *
 * Requests for the head that arrive while that head is being compacted join the running job
 * and get its result. Requests naming a session that is no longer the head are answered
 * `stale` with the current head, and never compact. Transcripts never pass through this
 * workflow's history: the activity reads and writes them in Postgres.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  metricMeter,
  patched,
  proxyActivities,
  proxyLocalActivities,
  rootCause,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { CompactionActivities, CompactSessionResult } from '../activities/compaction';
import { LineageClosedError } from '../errors';
import {
  type CarriedState,
  checkCompactRequest,
  closeSignal,
  compactSignal,
  compactUpdate,
  type CompactRequest,
  type CompactResult,
  type CompactionOutcome,
  type CompactionTrigger,
  type LineageState,
  requestResultQuery,
  type SessionLineageInput,
  stateQuery,
  WORKFLOW_ID_PREFIX,
} from './contract';
import { CompactionCount, SessionHead } from './search-attributes';
import { DEFAULT_LINEAGE_SETTINGS, type LineageSettings } from './settings';

type QueuedRequest = CarriedState['queue'][number];

interface Job {
  jobId: string;
  sessionId: string;
  requests: QueuedRequest[];
}

/** Patch ids: each guards a change to workflow commands (see README, Changing workflow code). */
export const PATCH_CLOSE_MARKS_LINEAGE = 'close-marks-lineage-closed';

/** Results remembered for deduplication across continue-as-new. */
const REMEMBERED_RESULTS = 1000;

export async function sessionLineageWorkflow(input: SessionLineageInput): Promise<void> {
  // Metrics are emitted only when code runs for the first time, never on replay.
  const compactionsByOutcome = metricMeter.createCounter('session_compactions', 'jobs', 'Compaction jobs by outcome');
  const queueDepth = metricMeter.createHistogram('session_compaction_queue_depth', 'int', 'requests', 'Requests answered by a job plus requests still waiting, at each job');
  const settings: LineageSettings = { ...DEFAULT_LINEAGE_SETTINGS, ...input.settings };
  const { lineageId, mode } = input;
  let head = input.headSessionId;
  let generation = input.generation;
  let queue: QueuedRequest[] = [...(input.carried?.queue ?? [])];
  const results = new Map<string, CompactResult>((input.carried?.answered ?? []).map((r) => [r.requestId, r]));
  let jobCounter = input.carried?.jobCounter ?? 0;
  // Committed compactions are the lineage's generation (Postgres' count): it survives an idle
  // completion, where a counter of this workflow's own would restart at 0.
  let commitsThisRun = 0;
  let inFlight: Job | undefined;
  let lastOutcome: CompactionOutcome | undefined;
  let lastReason: string | undefined;
  let closeRequested = false;

  const { recordAbortedCompaction, markLineageClosed } = proxyLocalActivities<CompactionActivities>({ startToCloseTimeout: '30s' });

  const childPrefix = `${lineageId}--g`;
  const isLineageMember = (sessionId: string) =>
    sessionId === lineageId || (sessionId.startsWith(childPrefix) && /^\d+$/.test(sessionId.slice(childPrefix.length)));

  const isKnown = (requestId: string) =>
    results.has(requestId) || queue.some((q) => q.requestId === requestId) || (inFlight?.requests.some((q) => q.requestId === requestId) ?? false);

  function answer(request: QueuedRequest, result: Omit<CompactResult, 'requestId'>): void {
    results.set(request.requestId, { ...result, requestId: request.requestId });
  }

  function staleResult(): Omit<CompactResult, 'requestId'> {
    return { outcome: 'stale', sessionId: head, generation, reason: 'the session is no longer the head of its lineage' };
  }

  /** Puts a valid request into the queue, into the running job, or answers it at once. */
  function admit(request: CompactRequest, via: CompactionTrigger): string {
    const requestId = request.requestId ?? uuid4();
    if (isKnown(requestId)) return requestId; // a retry: answered once, never run twice
    const queued: QueuedRequest = { ...request, requestId, trigger: request.trigger ?? via };
    if (inFlight && queued.sessionId === inFlight.sessionId) inFlight.requests.push(queued);
    // While a job runs, Postgres may already have a newer head than `head`: wait for the
    // job's answer before judging a request for another session stale.
    else if (queued.sessionId !== head && !inFlight) answer(queued, staleResult());
    else queue.push(queued);
    showProgress();
    return requestId;
  }

  function validate(request: CompactRequest): void {
    const checked = checkCompactRequest(request);
    if (!isLineageMember(checked.sessionId)) {
      throw ApplicationFailure.nonRetryable(`session ${checked.sessionId} does not belong to lineage ${lineageId}`, 'InvalidInputError');
    }
    if (closeRequested) throw new LineageClosedError(lineageId);
  }

  setHandler(
    compactUpdate,
    async (request) => {
      const requestId = admit(request, 'update');
      await condition(() => results.has(requestId));
      return results.get(requestId)!;
    },
    {
      validator: validate,
      description: 'Compact the session if it is still the head; answers with the committed result (or stale, refused, aborted).',
    },
  );

  setHandler(
    compactSignal,
    (request) => {
      try {
        validate(request);
      } catch (error) {
        // A signal cannot be rejected; a bad or background request is dropped, never run.
        log.warn('ignored compaction signal', { reason: error instanceof Error ? error.message : String(error) });
        return;
      }
      admit(request, 'signal');
    },
    { description: 'Request a compaction without waiting; the result can be read with the requestResult query.' },
  );

  setHandler(closeSignal, () => void (closeRequested = true), {
    description: 'Close the lineage: finish the queue, mark the lineage closed in Postgres, complete.',
  });

  setHandler(stateQuery, () => currentState(), { description: 'Head, generation, queue and the running compaction of this lineage.' });
  setHandler(requestResultQuery, (requestId) => results.get(requestId) ?? null, {
    description: 'The result of a compaction request by its request id, or null while it is pending or unknown.',
  });

  function currentState(): LineageState {
    return {
      lineageId,
      headSessionId: head,
      generation,
      mode,
      compactions: generation,
      queue: queue.map(({ requestId, sessionId, trigger }) => ({ requestId, sessionId, trigger })),
      inFlight: inFlight && { jobId: inFlight.jobId, sessionId: inFlight.sessionId, requestIds: inFlight.requests.map((r) => r.requestId) },
      lastOutcome,
      lastReason,
      closed: closeRequested,
    };
  }

  function showProgress(): void {
    const lines = [
      `**Head:** ${head} (generation ${generation}, ${mode})`,
      `**Compactions:** ${generation}`,
      `**Queue:** ${queue.length} waiting${inFlight ? `, compacting ${inFlight.sessionId} for ${inFlight.requests.length} request(s)` : ''}`,
    ];
    if (lastOutcome) lines.push(`**Last outcome:** ${lastOutcome}${lastReason ? `: ${lastReason}` : ''}`);
    setCurrentDetails(lines.join('\n\n'));
  }

  async function runJob(job: Job): Promise<Omit<CompactResult, 'requestId'>> {
    const first = job.requests[0];
    const base = {
      jobId: job.jobId,
      lineageId,
      parentSessionId: job.sessionId,
      generation,
      requestIds: job.requests.map((r) => r.requestId),
      trigger: first.trigger,
    };
    const { compactSession } = proxyActivities<CompactionActivities>({
      activityId: job.jobId,
      summary: `summarise ${job.sessionId} (generation ${generation} -> ${generation + 1}) for ${job.requests.length} request(s)`,
      heartbeatTimeout: settings.leaseTtlMs,
      startToCloseTimeout: settings.attemptTimeoutMs,
      retry: {
        initialInterval: settings.retryInitialIntervalMs,
        backoffCoefficient: 2,
        maximumInterval: settings.retryMaximumIntervalMs,
        maximumAttempts: settings.maxAttempts,
        nonRetryableErrorTypes: ['SummariserAuthError', 'SummariserQuotaError', 'SummariserInvalidRequest', 'SessionNotFoundError'],
      },
    });
    let result: CompactSessionResult;
    try {
      result = await compactSession({
        ...base,
        mode,
        // Joined requests share the job: the first one's focus, forced if any asked for force.
        focusTopic: job.requests.find((r) => r.focusTopic)?.focusTopic,
        force: job.requests.some((r) => r.force === true),
      });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const cause = rootCause(error) ?? 'unknown failure';
      const reason = `summariser failed: ${cause}`;
      const settled = await recordAbortedCompaction({ ...base, requestIds: job.requests.map((r) => r.requestId), reason });
      // A lost attempt may have committed before the abort was recorded: Postgres decides.
      // (Histories recorded before this returned a value replay with `settled` undefined.)
      if (settled) {
        head = settled.headSessionId;
        generation = settled.generation;
        if (settled.outcome === 'compacted') {
          commitsThisRun++;
          return { outcome: 'compacted', sessionId: head, previousSessionId: mode === 'rotate' ? job.sessionId : undefined, generation };
        }
      }
      return { outcome: 'aborted', sessionId: head, generation, reason };
    }
    head = result.headSessionId;
    generation = result.generation;
    if (result.outcome === 'compacted') {
      commitsThisRun++;
    }
    return {
      outcome: result.outcome,
      sessionId: result.headSessionId,
      previousSessionId: result.previousSessionId,
      generation: result.generation,
      reason: result.reason,
      ...(result.gate ? { gate: result.gate } : {}),
      tokensBefore: result.tokensBefore,
      tokensAfter: result.tokensAfter,
      messagesBefore: result.messagesBefore,
      messagesAfter: result.messagesAfter,
    };
  }

  const shouldContinueAsNew = () => workflowInfo().continueAsNewSuggested || commitsThisRun >= settings.maxCompactionsPerRun;

  const idle = () => queue.length === 0 && !closeRequested && !shouldContinueAsNew();
  showProgress();
  for (;;) {
    const woke = settings.idleTimeoutMs > 0 ? await condition(() => !idle(), settings.idleTimeoutMs) : (await condition(() => !idle()), true);
    if (queue.length === 0) {
      // Nothing waits: handlers still running are Updates about to read their answers.
      await condition(() => allHandlersFinished() || queue.length > 0);
      if (queue.length > 0) continue;
      if (closeRequested) {
        // Added after the first release: histories recorded before it replay the old path.
        if (patched(PATCH_CLOSE_MARKS_LINEAGE)) await markLineageClosed(lineageId);
        return;
      }
      // Quiet for the idle timeout: complete; the lineage stays open and the next request
      // starts a new run from Postgres' state.
      if (!woke) return;
      const answered = [...results.values()].slice(-REMEMBERED_RESULTS);
      await continueAsNew<typeof sessionLineageWorkflow>({
        ...input,
        settings,
        headSessionId: head,
        generation,
        carried: { queue, answered, jobCounter },
      });
    }
    const next = queue.shift()!;
    if (next.sessionId !== head) {
      answer(next, staleResult());
      continue;
    }
    const job: Job = {
      jobId: `${WORKFLOW_ID_PREFIX}${lineageId}/${workflowInfo().firstExecutionRunId}/${++jobCounter}`,
      sessionId: head,
      requests: [next, ...queue.filter((q) => q.sessionId === head)],
    };
    queue = queue.filter((q) => q.sessionId !== head);
    inFlight = job;
    queueDepth.record(job.requests.length + queue.length);
    showProgress();
    const result = await runJob(job);
    inFlight = undefined;
    lastOutcome = result.outcome;
    lastReason = result.reason;
    for (const request of job.requests) answer(request, result);
    compactionsByOutcome.add(1, { outcome: result.outcome });
    upsertSearchAttributes([
      { key: SessionHead, value: head },
      { key: CompactionCount, value: generation },
    ]);
    showProgress();
  }
}
