/**
 * `agentLoop` (src/temporal/workflow.ts) runs inside the workflows of the package's users, which
 * may be open while they upgrade: a change to the commands it emits would break them. This
 * replays a recorded history of an agent built on it against today's code:
 * test/replay/agent-loop/killed-workers.json, `killableAgent` of
 * test/support/temporal-agent-workflows.ts as test/stack/temporal-agent-kill.test.ts ran it
 * (three user requests, parallel tool calls, a model activity and a tool activity whose workers
 * were SIGKILLed after their append, completed by their second attempt). Never re-recorded: a
 * change that makes it fail goes behind `patched()` (docs/development.md, "Changing workflow code").
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;
const recorded = () => historyFromJSON(JSON.parse(readFileSync(path.join(__dirname, 'agent-loop/killed-workers.json'), 'utf8')));

let workflowBundle: { code: string };

beforeAll(async () => {
  workflowBundle = await bundleWorkflowCode({ workflowsPath: path.join(PROJECT_ROOT, 'test/support/temporal-agent-workflows.ts'), logger: quiet });
}, 120_000);

/** The activities the history scheduled, with the workflow task that scheduled each and the attempt that completed it. */
function activities(history: temporal.api.history.v1.IHistory) {
  const byEvent = new Map<string, { type: string; task: string; attempt: number }>();
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) byEvent.set(String(event.eventId), { type: scheduled.activityType!.name!, task: String(scheduled.workflowTaskCompletedEventId), attempt: 0 });
    const started = event.activityTaskStartedEventAttributes;
    if (started) byEvent.get(String(started.scheduledEventId))!.attempt = started.attempt!;
  }
  return [...byEvent.values()];
}

describe('replay of a recorded agentLoop history', () => {
  it('the history holds its path: parallel tool calls, a model call and a tool call completed by their second attempt, the workflow completed', () => {
    const history = recorded();
    const all = activities(history);
    expect(all.filter((a) => a.attempt === 2).map((a) => a.type)).toEqual(['lineageAgentModelCall', 'lineageAgentToolCall']);
    const toolsPerTask = new Map<string, number>();
    for (const a of all.filter((a) => a.type === 'lineageAgentToolCall')) toolsPerTask.set(a.task, (toolsPerTask.get(a.task) ?? 0) + 1);
    expect(Math.max(...toolsPerTask.values())).toBeGreaterThan(1);
    expect(all.filter((a) => a.type === 'lineageAgentInput').length).toBe(3);
    expect(history.events!.at(-1)!.workflowExecutionCompletedEventAttributes).toBeTruthy();
  });

  it('replays on today’s agentLoop, and is refused as a workflow that emits other commands (tools one after the other)', async () => {
    await expect(Worker.runReplayHistory({ workflowBundle, replayName: 'agent-loop' }, recorded())).resolves.toBeUndefined();
    const other = recorded();
    other.events![0].workflowExecutionStartedEventAttributes!.workflowType!.name = 'killableAgentSequential';
    await expect(Worker.runReplayHistory({ workflowBundle, replayName: 'agent-loop-sequential' }, other)).rejects.toThrow(/nondetermin/i);
  });
});
