/**
 * Changing workflow code with sessions open. Each patch guards a change to the commands the
 * workflow emits: a history of the old path must replay on today's code, the guard must be
 * what makes that true (the same history fails without it), and new executions must take
 * the new path. Patches: close-marks-lineage-closed (fixed history), check-closed-at-start
 * (fixed history), continue-as-new-under-load (recorded here, from the old code bundled with
 * the patched line removed), record-joined-requests, text-rule-on-signals and
 * follow-up-compaction (recorded the same way).
 */
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { LineageClosedError } from '../../src/errors';
import { compactSignal, lineageWorkflowId } from '../../src/workflows/contract';
import {
  PATCH_CHECK_CLOSED_AT_START,
  PATCH_CLOSE_MARKS_LINEAGE,
  PATCH_CONTINUE_AS_NEW_UNDER_LOAD,
  PATCH_FOLLOW_UP_COMPACTION,
  PATCH_RECORD_JOINED_REQUESTS,
  PATCH_TEXT_RULE_ON_SIGNALS,
} from '../../src/workflows/patches';
import { conversation, startTestStack, type TestStack, type TestStackOptions, uniqueId, useTestStack } from '../support/stack';

// Recorded before the close path changed; kept apart from the re-recordable histories.
const recorded = () => historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, 'fixed/rotation-before-close-patch.json'), 'utf8')));
const stack = useTestStack();

describe('evolving the workflow with patched()', () => {
  it('a history recorded before the change replays on today code', async () => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, recorded(), 'rotation'),
    ).resolves.toBeUndefined();
  });

  it('without the patch guard the same history fails to replay', async () => {
    const code = await bundleWithout(
      'unguarded',
      'if (patched(PATCH_CLOSE_MARKS_LINEAGE)) await lineageActivities.markLineageClosed',
      'await lineageActivities.markLineageClosed',
    );
    await expect(Worker.runReplayHistory({ workflowBundle: { code } }, recorded(), 'rotation')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path: closing marks the lineage closed', async () => {
    const id = uniqueId('ev');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    const { sessionId: head } = await stack().client.compact(id);
    await stack().client.closeSession(head);

    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
    const patches = patchesOf(history.events ?? []);
    expect(patches.filter((id) => id === PATCH_CLOSE_MARKS_LINEAGE)).toHaveLength(1);
    const [lineage] = (await stack().db.db.execute(sql`select closed_at from lineages where id = ${id}`)).rows as Array<{ closed_at: Date | null }>;
    expect(lineage.closed_at).not.toBeNull();
    await expect(stack().client.append(head, [{ role: 'user', content: 'after close' }])).rejects.toBeInstanceOf(LineageClosedError);
    await expect(stack().client.compact(head)).rejects.toBeInstanceOf(LineageClosedError);
  });
});

/**
 * Keeps a history of an old path in test/replay/fixed/ (never re-recorded; the replay suite
 * replays it on every run) when the test is run with SAVE_FIXED_HISTORIES=1.
 */
function keepFixed(file: string, history: Parameters<typeof historyToJSON>[0]): void {
  if (process.env.SAVE_FIXED_HISTORIES === '1') writeFileSync(path.join(__dirname, 'fixed', file), historyToJSON(history));
}

/**
 * Records a history of an old path: `oldCode` (today's code with a patched line removed) run
 * by a worker of its own, on a lineage with a conversation to compact, driven by `scenario`.
 */
async function runOldCode<T>(oldCode: string, options: TestStackOptions, scenario: (old: TestStack, root: string) => Promise<T>): Promise<T> {
  const bundlePath = path.join(inject('stack').runDir, `old-code-${randomUUID()}.js`);
  writeFileSync(bundlePath, oldCode);
  const old = await startTestStack({ noWorker: true, ...options });
  try {
    await old.startWorker({ workflowBundlePath: bundlePath });
    const root = uniqueId('old');
    await old.client.createSession({ sessionId: root });
    await old.client.append(root, conversation(12));
    return await scenario(old, root);
  } finally {
    await old.close();
  }
}

/** The ids of the patches a history's markers record. */
function patchesOf(
  events: ReadonlyArray<{
    markerRecordedEventAttributes?: {
      markerName?: string | null;
      details?: Record<string, { payloads?: Array<{ data?: Uint8Array | null }> | null }> | null;
    } | null;
  }>,
): string[] {
  return events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes!.details!['patch-data']!.payloads![0].data!).toString('utf8')).id);
}

/** Today's workflow code with one change to one workflow file, bundled from a copy inside the project. */
async function bundleWithout(name: string, from: string, to: string, workflowFile = 'session-lineage.ts'): Promise<string> {
  const dir = path.join(inject('stack').runDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(PROJECT_ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
  const file = path.join(dir, 'src/workflows', workflowFile);
  const source = readFileSync(file, 'utf8');
  const changed = source.replace(from, to);
  expect(changed).not.toBe(source);
  writeFileSync(file, changed);
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(dir, 'src/workflows/index.ts'),
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never,
  });
  return code;
}

describe('the check-closed-at-start patch', () => {
  // Recorded before a new run asked Postgres whether its lineage was closed.
  const before = () => historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, 'fixed/v1-rotation.json'), 'utf8')));

  it('a history from before replays on today code, and fails to without the guard', async () => {
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, before(), 'v1-rotation'),
    ).resolves.toBeUndefined();
    const code = await bundleWithout('unguarded-closed-check', 'patched(PATCH_CHECK_CLOSED_AT_START) &&', 'true &&');
    await expect(Worker.runReplayHistory({ workflowBundle: { code } }, before(), 'v1-rotation')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path', async () => {
    const id = uniqueId('ev');
    await stack().client.createSession({ sessionId: id });
    await stack().client.closeSession(id);
    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
    const patches = patchesOf(history.events ?? []);
    expect(patches).toContain(PATCH_CHECK_CLOSED_AT_START);
  });
});

describe('the continue-as-new-under-load patch', () => {
  const GUARDED = 'if (shouldContinueAsNew() && patched(PATCH_CONTINUE_AS_NEW_UNDER_LOAD)) await continueWithState();';

  it('a run of the code before it (limit reached, a request waiting) replays on today code, and fails to without the guard', async () => {
    // Record a history of the old path: today's code without the line the patch added,
    // run by a worker of its own, at a limit of one compaction per run.
    const history = await runOldCode(
      await bundleWithout('before-continue-as-new-under-load', GUARDED, ''),
      { settings: { maxCompactionsPerRun: 1 } },
      async (old, root) => {
        old.llm.script({ chunks: 20, chunkDelayMs: 300 }); // the first summary streams for ~6 s: room for the signal on a loaded machine
        const first = old.client.compact(root, { requestId: 'first' });
        await old.llm.waitForRequests(1);
        const handle = old.temporal.workflow.getHandle(lineageWorkflowId(root));
        const runId = (await handle.describe()).runId;
        // Waits in the queue while the first job runs: it names the head that job will commit.
        // (Sent straight to the workflow: the client checks that the session exists first.)
        await handle.signal(compactSignal, { sessionId: `${root}--g1`, requestId: 'next-head' });
        expect(await first).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g1` });
        await old.client.waitForResult(root, 'next-head', { timeoutMs: 60_000 });
        const firstRun = old.temporal.workflow.getHandle(lineageWorkflowId(root), runId);
        const deadline = Date.now() + 30_000;
        while ((await firstRun.describe()).status.name !== 'CONTINUED_AS_NEW' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        return firstRun.fetchHistory();
      },
    );
    // The old path landed: the limit was reached with a request waiting, and the run ran it
    // (a second summary) before continuing as new, with no patch marker.
    const events = history.events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(2);
    expect(patchesOf(events)).not.toContain(PATCH_CONTINUE_AS_NEW_UNDER_LOAD);
    expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    keepFixed('v2-limit-with-queue-before-continue-as-new-under-load.json', history);

    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, 'old-limit-with-queue'),
    ).resolves.toBeUndefined();
    const unguarded = await bundleWithout(
      'unguarded-continue-as-new-under-load',
      'shouldContinueAsNew() && patched(PATCH_CONTINUE_AS_NEW_UNDER_LOAD)',
      'shouldContinueAsNew()',
    );
    await expect(Worker.runReplayHistory({ workflowBundle: { code: unguarded } }, history, 'old-limit-with-queue')).rejects.toThrow(/[Nn]ondeterminism/);
  });
});

describe('the record-joined-requests patch', () => {
  const GUARDED = 'if (joined.length === 0 || !patched(PATCH_RECORD_JOINED_REQUESTS)) return answer;';

  it('a run of the code before it (a request joined a running job) replays on today code, and fails to without the guard', async () => {
    const history = await runOldCode(
      await bundleWithout('before-record-joined-requests', GUARDED, 'return answer;', 'compaction-job.ts'),
      {},
      async (old, root) => {
        old.llm.script({ chunks: 20, chunkDelayMs: 300 }); // ~6 s: room for the second caller to join
        const first = old.client.compact(root, { requestId: 'first' });
        await old.llm.waitForRequests(1);
        const joined = await old.client.compact(root, { requestId: 'joined' });
        expect(joined).toMatchObject({ outcome: 'compacted', sessionId: (await first).sessionId });
        await old.client.closeSession(joined.sessionId);
        return old.temporal.workflow.getHandle(lineageWorkflowId(root)).fetchHistory();
      },
    );
    // The old path landed: an Update was accepted while the one summary ran (it joined), and
    // nothing recorded it afterwards.
    const events = history.events ?? [];
    const scheduled = events.findIndex((e) => e.activityTaskScheduledEventAttributes);
    const completed = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(1);
    expect(events.slice(scheduled, completed).some((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toBe(true);
    expect(patchesOf(events)).not.toContain(PATCH_RECORD_JOINED_REQUESTS);
    keepFixed('v2-joined-request-before-record-joined-requests.json', history);

    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, 'old-joined-request'),
    ).resolves.toBeUndefined();
    const unguarded = await bundleWithout('unguarded-record-joined-requests', GUARDED, 'if (joined.length === 0) return answer;', 'compaction-job.ts');
    await expect(Worker.runReplayHistory({ workflowBundle: { code: unguarded } }, history, 'old-joined-request')).rejects.toThrow(/[Nn]ondeterminism/);
  });
});

describe('the text-rule-on-signals patch', () => {
  const GUARDED = 'validate(request, patched(PATCH_TEXT_RULE_ON_SIGNALS), false);';

  it('a run of the code before it (a signal measured in UTF-16 units, dropped) replays on today code, and fails to without the guard', async () => {
    const wide = '😀'.repeat(150); // 150 code points (allowed now), 300 UTF-16 units (over the old limit of 200)
    const history = await runOldCode(await bundleWithout('before-text-rule-on-signals', GUARDED, 'validate(request, false, false);'), {}, async (old, root) => {
      const handle = old.temporal.workflow.getHandle(lineageWorkflowId(root));
      await handle.signal(compactSignal, { sessionId: root, requestId: wide });
      // Let the signal's own workflow task complete first (a condition, with a deadline), so the
      // Update does not join it in one task, where both codes would emit the same single job.
      const deadline = Date.now() + 30_000;
      for (;;) {
        const events = (await handle.fetchHistory()).events ?? [];
        const signaled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
        if (signaled >= 0 && events.slice(signaled).some((e) => e.workflowTaskCompletedEventAttributes)) break;
        if (Date.now() > deadline) throw new Error('the signal was never processed');
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await old.client.compact(root, { requestId: 'after' });
      expect(after.outcome).toBe('compacted');
      await old.client.closeSession(after.sessionId);
      return handle.fetchHistory();
    });
    // The old path landed: the signal is in the history and was dropped (one job only, for the Update).
    const events = history.events ?? [];
    expect(events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'requestCompaction')).toBe(true);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(1);
    expect(patchesOf(events)).not.toContain(PATCH_TEXT_RULE_ON_SIGNALS);
    keepFixed('v3-wide-signal-before-text-rule-on-signals.json', history);

    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, 'old-wide-signal'),
    ).resolves.toBeUndefined();
    const unguarded = await bundleWithout('unguarded-text-rule-on-signals', GUARDED, 'validate(request, true, false);');
    await expect(Worker.runReplayHistory({ workflowBundle: { code: unguarded } }, history, 'old-wide-signal')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path: a signal is measured in code points', async () => {
    const id = uniqueId('ev-wide');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    const wide = '😀'.repeat(150);
    await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).signal(compactSignal, { sessionId: id, requestId: wide });
    const answer = await stack().client.waitForResult(id, wide);
    expect(answer.outcome).toBe('compacted');
  });
});

describe('the follow-up-compaction patch', () => {
  const GUARDED = 'if (answer.followUpRequestId && !queue.closed && patched(PATCH_FOLLOW_UP_COMPACTION)) {';

  /**
   * A compaction whose summary takes 1.5 s while a long message is appended, on a lineage
   * whose threshold (1,200 tokens) its own head is under and the head with that message above:
   * the commit carries it and names a follow-up.
   */
  async function carriedAboveThreshold(on: TestStack, root: string) {
    await on.db.db.execute(sql`update lineages set compact_at_tokens = 1200 where id = ${root}`);
    on.llm.script({ delayMs: 1500 });
    const first = on.client.compact(root, { requestId: 'first' });
    await on.llm.waitForRequests(1);
    await on.client.append(root, [{ role: 'user', content: `And while you are at it, check the lexer: ${'lexer '.repeat(1500)}` }]);
    const answer = await first;
    expect(answer).toMatchObject({ outcome: 'compacted', followUpRequestId: expect.any(String) });
    return answer;
  }

  it('a run of the code before it (a commit named a follow-up, which it ignored) replays on today code, and fails to without the guard', async () => {
    // The old path is a rolling deploy's: today's activities, the workflow code before the patch.
    const history = await runOldCode(await bundleWithout('before-follow-up-compaction', GUARDED, 'if (false) {'), {}, async (old, root) => {
      const answer = await carriedAboveThreshold(old, root);
      await old.client.closeSession(answer.sessionId);
      return old.temporal.workflow.getHandle(lineageWorkflowId(root)).fetchHistory();
    });
    // The old path landed: the job's result named a follow-up and no second job was scheduled.
    const events = history.events ?? [];
    const results = events
      .filter((e) => e.activityTaskCompletedEventAttributes)
      .map((e) => Buffer.from(e.activityTaskCompletedEventAttributes!.result!.payloads![0].data!).toString('utf8'));
    expect(results.some((r) => r.includes('"followUpRequestId"'))).toBe(true);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(1);
    expect(patchesOf(events)).not.toContain(PATCH_FOLLOW_UP_COMPACTION);
    keepFixed('v4-follow-up-named-before-follow-up-compaction.json', history);

    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, 'old-follow-up'),
    ).resolves.toBeUndefined();
    const unguarded = await bundleWithout('unguarded-follow-up-compaction', GUARDED, 'if (answer.followUpRequestId && !queue.closed) {');
    await expect(Worker.runReplayHistory({ workflowBundle: { code: unguarded } }, history, 'old-follow-up')).rejects.toThrow(/[Nn]ondeterminism/);
  });

  it('new executions take the new path: the follow-up runs', async () => {
    const id = uniqueId('ev-follow-up');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    const answer = await carriedAboveThreshold(stack(), id);
    const followUp = await stack().client.waitForResult(id, answer.followUpRequestId!);
    expect(['compacted', 'refused']).toContain(followUp.outcome);
    const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
    expect(patchesOf(history.events ?? [])).toContain(PATCH_FOLLOW_UP_COMPACTION);
    expect((history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(2);
  });
});
