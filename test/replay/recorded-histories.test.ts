/**
 * Replays recorded histories of the session workflow against today's workflow code. A
 * failure here means a change would break sessions that are open now: see docs/development.md,
 * "Changing workflow code", before re-recording (npm run replay:record).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { PATCH_CHECK_CLOSED_AT_START, PATCH_CONTINUE_AS_NEW_UNDER_LOAD } from '../../src/workflows/patches';

const HISTORIES_DIR = path.resolve(__dirname, 'histories');
/** Histories from older workflow code, never re-recorded (see test/replay/evolution.test.ts). */
const FIXED_DIR = path.resolve(__dirname, 'fixed');
const files = readdirSync(HISTORIES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();
const fixed = readdirSync(FIXED_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('replay of recorded session workflow histories', () => {
  // Each significant path, proven by what its recorded history holds (not by its file name).
  type Event = { eventType: string } & Record<string, any>;
  const load = (file: string): Event[] => JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')).events;
  const count = (events: Event[], type: string) => events.filter((e) => e.eventType === `EVENT_TYPE_${type}`).length;
  const patches = (events: Event[]) =>
    events
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
      .map((e) => JSON.parse(Buffer.from(e.markerRecordedEventAttributes.details['patch-data'].payloads[0].data, 'base64').toString('utf8')).id);
  const index = (events: Event[], type: string) => events.findIndex((e) => e.eventType === `EVENT_TYPE_${type}`);
  const paths: Record<string, (events: Event[]) => void> = {
    'rotation.json': (e) => expect([count(e, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED'), count(e, 'ACTIVITY_TASK_COMPLETED')]).toEqual([1, 1]),
    'in-place.json': (e) => expect(count(e, 'ACTIVITY_TASK_COMPLETED')).toBe(2),
    'coalesced.json': (e) => {
      // Six Updates and two signals for one head: one summary.
      expect(count(e, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toBe(6);
      expect(count(e, 'WORKFLOW_EXECUTION_SIGNALED')).toBeGreaterThanOrEqual(2);
      expect(count(e, 'ACTIVITY_TASK_SCHEDULED')).toBe(1);
    },
    'stale.json': (e) => expect([count(e, 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED'), count(e, 'ACTIVITY_TASK_SCHEDULED')]).toEqual([2, 1]),
    'refused.json': (e) => {
      const result = e.find((x) => x.activityTaskCompletedEventAttributes)!.activityTaskCompletedEventAttributes.result.payloads[0].data;
      expect(JSON.parse(Buffer.from(result, 'base64').toString('utf8'))).toMatchObject({ outcome: 'refused' });
    },
    'aborted.json': (e) => {
      // The activity failed for good, and the abort was recorded by a local activity whose result the workflow adopts.
      expect(count(e, 'ACTIVITY_TASK_FAILED')).toBe(1);
      expect(e.some((x) => x.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toBe(true);
    },
    'abort-adopts-commit.json': (e) => {
      // The activity failed for good after its commit; the recorded abort found the commit, and the caller got it.
      expect(count(e, 'ACTIVITY_TASK_FAILED')).toBe(1);
      expect(e.some((x) => x.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toBe(true);
      const completed = e.find((x) => x.workflowExecutionUpdateCompletedEventAttributes)!.workflowExecutionUpdateCompletedEventAttributes;
      expect(JSON.parse(Buffer.from(completed.outcome.success.payloads[0].data, 'base64').toString('utf8'))).toMatchObject({ outcome: 'compacted' });
    },
    'lost-lease.json': (e) => expect(e.find((x) => x.activityTaskStartedEventAttributes)!.activityTaskStartedEventAttributes.attempt).toBeGreaterThanOrEqual(2),
    'queued-while-running.json': (e) => {
      // An Update accepted while the second summary ran (between its scheduling and completion).
      const scheduled = e.map((x, i) => (x.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' ? i : -1)).filter((i) => i >= 0)[1];
      const completed = e.map((x, i) => (x.eventType === 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED' ? i : -1)).filter((i) => i >= 0)[1];
      expect(e.slice(scheduled, completed).some((x) => x.eventType === 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED')).toBe(true);
    },
    'idle.json': (e) => {
      // Completed by its idle timer, never closed.
      expect(count(e, 'TIMER_FIRED')).toBe(1);
      expect(count(e, 'WORKFLOW_EXECUTION_SIGNALED')).toBe(0);
      expect(index(e, 'WORKFLOW_EXECUTION_COMPLETED')).toBe(e.length - 1);
    },
    'closed-at-start.run2.json': (e) => {
      // A run started for a closed lineage asks Postgres, then completes at once: no summary.
      expect(patches(e)).toContain(PATCH_CHECK_CLOSED_AT_START);
      expect(count(e, 'ACTIVITY_TASK_SCHEDULED')).toBe(0);
      expect(count(e, 'WORKFLOW_EXECUTION_COMPLETED')).toBe(1);
    },
    'continue-as-new-under-load.run2.json': (e) => {
      // At its limit with a request waiting: continued as new (the patched path), not idle.
      expect(patches(e)).toContain(PATCH_CONTINUE_AS_NEW_UNDER_LOAD);
      expect(count(e, 'WORKFLOW_EXECUTION_CONTINUED_AS_NEW')).toBe(1);
      const next = load('continue-as-new-under-load.run3.json')[0];
      const input = JSON.parse(Buffer.from(next.workflowExecutionStartedEventAttributes.input.payloads[0].data, 'base64').toString('utf8'));
      expect(input.carried.queue.length).toBeGreaterThan(0);
    },
    'continue-as-new.run1.json': (e) => expect(count(e, 'WORKFLOW_EXECUTION_CONTINUED_AS_NEW')).toBe(1),
  };
  it.each(Object.keys(paths))('%s holds its path', (file) => {
    expect(files).toContain(file);
    paths[file](load(file));
  });

  it.each([...files.map((f) => path.join(HISTORIES_DIR, f)), ...fixed.map((f) => path.join(FIXED_DIR, f))])(
    '%s replays without nondeterminism',
    async (file) => {
      const history = historyFromJSON(JSON.parse(readFileSync(file, 'utf8')));
      await expect(
        Worker.runReplayHistory({ workflowBundle: { codePath: inject('stack').workflowBundlePath } }, history, path.basename(file, '.json')),
      ).resolves.toBeUndefined();
    },
  );
});
