/**
 * One long-lived workflow per session lineage. Compaction requests arrive as Updates
 * (request/response) and signals (fire-and-forget) and go into one queue; the main loop
 * drains it one job at a time. The workflow's single-threaded execution is the lock: two
 * compactions of one lineage can never run at once, so the lineage can never fork.
 *
 * Which request runs, joins a running job, or is answered `stale` is decided by
 * `LineageQueue` (lineage-queue.ts, pure); one job is `runCompactionJob` (compaction-job.ts).
 * Transcripts never pass through this workflow's history: the activity reads and writes them
 * in Postgres.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  metricMeter,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import { InvalidInputError, LineageClosedError } from '../errors';
import { lineageActivities, runCompactionJob } from './compaction-job';
import * as contract from './contract';
import { LineageQueue } from './lineage-queue';
import {
  PATCH_CHECK_CLOSED_AT_START,
  PATCH_CLOSE_MARKS_LINEAGE,
  PATCH_CONTINUE_AS_NEW_UNDER_LOAD,
  PATCH_FOLLOW_UP_COMPACTION,
  PATCH_TEXT_RULE_ON_SIGNALS,
} from './patches';
import { CompactionCount, SessionHead } from './search-attributes';
import { DEFAULT_LINEAGE_SETTINGS, type LineageSettings } from './settings';

export async function sessionLineageWorkflow(input: contract.SessionLineageInput): Promise<void> {
  // Metrics are emitted only when code runs for the first time, never on replay.
  const jobsByOutcome = metricMeter.createCounter('session_compactions', 'jobs', 'Compaction jobs by outcome');
  const queueDepth = metricMeter.createHistogram(
    'session_compaction_queue_depth',
    'int',
    'requests',
    'Requests answered by a job plus requests still waiting, at each job',
  );
  const settings: LineageSettings = { ...DEFAULT_LINEAGE_SETTINGS, ...input.settings };
  const { lineageId, mode } = input;
  const queue = new LineageQueue({ sessionId: input.headSessionId, generation: input.generation }, input.carried);
  // Commits of this run, for its continue-as-new limit (the lineage's count is its generation).
  let commitsThisRun = 0;
  const showProgress = () => setCurrentDetails(queue.details(mode));
  const admit = (request: contract.CompactRequest, via: contract.CompactionTrigger) => {
    const requestId = queue.admit(request, via, uuid4);
    showProgress();
    return requestId;
  };
  /**
   * `current`: the text rule and code-point sizes; histories of signals from before them replay without.
   * `focusStructure`: the focus topic may not hold a summary's structure (Updates; a signal's focus is cleaned by the activity).
   */
  const validate = (request: contract.CompactRequest, current = true, focusStructure = true) => {
    const checked = contract.checkCompactRequest(request, { codePoints: current });
    const { sessionId } = current ? contract.checkRequestText(checked, { focusStructure }) : checked;
    if (!contract.belongsToLineage(sessionId, lineageId)) {
      throw new InvalidInputError('sessionId', `session ${sessionId} does not belong to lineage ${lineageId}`);
    }
    if (queue.closed) throw new LineageClosedError(lineageId);
  };

  setHandler(
    contract.compactUpdate,
    async (request) => {
      const requestId = admit(request, 'update');
      await condition(() => queue.answerOf(requestId) !== undefined);
      return queue.answerOf(requestId)!;
    },
    {
      validator: validate,
      // At continue-as-new under load, Updates still waiting are abandoned on purpose: the
      // next run carries their requests, and callers resend the same request id.
      unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
      description: 'Compact the session if it is still the head; answers with the committed result (or stale, refused, aborted).',
    },
  );
  setHandler(
    contract.compactSignal,
    (request) => {
      try {
        validate(request, patched(PATCH_TEXT_RULE_ON_SIGNALS), false);
      } catch (error) {
        // A signal cannot be rejected; a bad or background request is dropped, never run.
        return log.warn('ignored compaction signal', { reason: error instanceof Error ? error.message : String(error) });
      }
      admit(request, 'signal');
    },
    { description: 'Request a compaction without waiting; the result can be read with the requestResult query.' },
  );
  setHandler(contract.closeSignal, () => queue.close(), { description: 'Close the lineage: finish the queue, mark the lineage closed in Postgres, complete.' });
  setHandler(contract.stateQuery, () => queue.view({ lineageId, mode }), {
    description: 'Head, generation, queue and the running compaction of this lineage.',
  });
  setHandler(contract.requestStatusQuery, (requestIds) => queue.status(requestIds), {
    description: 'Where each request stands in this run: answered (with its result), pending, or unknown.',
  });
  setHandler(contract.requestResultQuery, (requestId) => queue.answerOf(requestId) ?? null, {
    description: 'The result of a compaction request by its request id, or null while it is pending or unknown.',
  });

  const shouldContinueAsNew = () => workflowInfo().continueAsNewSuggested || commitsThisRun >= settings.maxCompactionsPerRun;
  const idle = () => !queue.hasWaiting && !queue.closed && !shouldContinueAsNew();
  /** The next run starts where this one stands: head, generation, queue, recent answers. */
  const continueWithState = () =>
    continueAsNew<typeof sessionLineageWorkflow>({ ...input, settings, headSessionId: queue.head, generation: queue.generation, carried: queue.carry() });

  showProgress();
  // A start or signal-with-start for a lineage closed in Postgres (by a starter that did not
  // check) must not leave a run that lives forever, nor pay for a compaction: complete at once.
  if (!input.carried && patched(PATCH_CHECK_CLOSED_AT_START) && (await lineageActivities.isLineageClosed(lineageId))) {
    queue.close();
    return log.info('lineage is closed in Postgres; completing at once', { lineageId });
  }
  for (;;) {
    const woke = settings.idleTimeoutMs > 0 ? await condition(() => !idle(), settings.idleTimeoutMs) : (await condition(() => !idle()), true);
    if (!queue.hasWaiting) {
      // Nothing waits: handlers still running are Updates about to read their answers.
      await condition(() => allHandlersFinished() || queue.hasWaiting);
      if (queue.hasWaiting) continue;
      if (queue.closed) {
        // Marked closed in Postgres before the run completes, so clients and any later run find
        // it closed; patched, for histories of closes that completed without this step.
        if (patched(PATCH_CLOSE_MARKS_LINEAGE)) await lineageActivities.markLineageClosed(lineageId);
        return;
      }
      // Quiet for the idle timeout: complete; the lineage stays open and the next request
      // starts a new run from Postgres' state.
      if (!woke) return;
      await continueWithState();
    }
    // Under sustained load the queue never empties: continue as new anyway when due, carrying
    // it. Updates waiting on queued requests are abandoned; their callers send the same
    // request id again to the next run, which has it queued and answers it once.
    if (shouldContinueAsNew() && patched(PATCH_CONTINUE_AS_NEW_UNDER_LOAD)) await continueWithState();
    const job = queue.startNext((n) => `${contract.WORKFLOW_ID_PREFIX}${lineageId}/${workflowInfo().firstExecutionRunId}/${n}`);
    if (!job) continue; // its request named an old head: answered stale
    queueDepth.record(queue.depth);
    showProgress();
    const answer = await runCompactionJob(job, { lineageId, mode, generation: queue.generation, settings });
    if (answer.outcome === 'compacted') commitsThisRun++;
    queue.finish(answer);
    // Progress above the threshold (rows appended during the summary): compact again at once.
    // Postgres bounds how many in a row (sc_compaction_commit.sql); a closing lineage runs none.
    if (answer.followUpRequestId && !queue.closed && patched(PATCH_FOLLOW_UP_COMPACTION)) {
      admit({ requestId: answer.followUpRequestId, sessionId: answer.sessionId, trigger: 'threshold' }, 'signal');
    }
    jobsByOutcome.add(1, { outcome: answer.outcome });
    upsertSearchAttributes([
      { key: SessionHead, value: queue.head },
      { key: CompactionCount, value: queue.generation },
    ]);
    showProgress();
  }
}
