/**
 * Payload binding and Temporal Schedules, on the real stack with encryption on: the client
 * encodes a schedule's arguments for the action's workflow id, and the server starts each run
 * as `<that id>-<scheduled time>`. The run must still read its arguments (the one exception
 * to the workflow binding, `boundWorkflowMatches`), or an encrypted deployment's scheduled
 * retention would fail every workflow task.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { encryptedDataConverter } from '../../src/codec/aes-gcm-codec';
import { startTestStack, type TestStack, uniqueId } from '../support/stack';

const keys = `k1:${randomBytes(32).toString('base64')}`;
let stack: TestStack;
let connection: Connection;
let temporal: Client;

beforeAll(async () => {
  stack = await startTestStack({ env: { PAYLOAD_ENCRYPTION_KEYS: keys } });
  connection = await Connection.connect({ address: inject('stack').temporalAddress });
  temporal = new Client({
    connection,
    namespace: stack.config.temporal.namespace,
    dataConverter: encryptedDataConverter(keys, stack.config.temporal.namespace),
  });
});

afterAll(async () => {
  await connection?.close();
  await stack?.close();
});

describe('an encrypted deployment and a Temporal Schedule', () => {
  it("a scheduled run reads the arguments its schedule encoded for the action's workflow id", async () => {
    const scheduleId = uniqueId('enc-schedule');
    const actionWorkflowId = `${scheduleId}-workflow`;
    const handle = await temporal.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '24h' }] },
      state: { paused: true },
      action: {
        type: 'startWorkflow',
        workflowType: 'retentionWorkflow',
        workflowId: actionWorkflowId,
        taskQueue: stack.config.temporal.taskQueue,
        args: [{ policy: { auditDays: 3650 }, batch: 10 }],
      },
    });
    try {
      await handle.trigger();
      let runId: string | undefined;
      await expect
        .poll(
          async () => {
            runId = (await handle.describe()).info.recentActions[0]?.action.workflow.workflowId;
            return runId;
          },
          { timeout: 20_000, interval: 300 },
        )
        .toBeDefined();
      expect(runId).toMatch(new RegExp(`^${actionWorkflowId}-\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$`));
      const run = temporal.workflow.getHandle(runId!);
      // The argument in history is encrypted and bound to the action's id, not the run's.
      const history = await run.fetchHistory();
      const input = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
      expect(Buffer.from(input.metadata!['encryption-workflow-id']!).toString()).toBe(actionWorkflowId);
      const result = await Promise.race([
        run.result(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('the scheduled run did not complete (its workflow task fails?)')), 60_000)),
      ]);
      expect(result).toBeTypeOf('object');
    } finally {
      await handle.delete();
    }
  });
});
