/**
 * Workflows used only by the benchmark (never shipped):
 * - floorWorkflow: an Update that does nothing, the floor of any Update round trip;
 * - sameShapeWorkflow: the same-shape floor of a compaction, an Update that runs one
 *   heartbeating activity doing one Postgres transaction, then answers (nothing of ours in it);
 * - naiveSessionWorkflow: what a user might write instead of this service, the transcript
 *   carried in workflow state, appends by signal, compaction by an activity that gets and
 *   returns the whole transcript through history.
 */
import { condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Message } from '../src/compaction/dialects/types';
import type { NaiveActivities } from './naive-activities';

export const noopUpdate = defineUpdate<number, [number]>('noop');

export async function floorWorkflow(): Promise<void> {
  setHandler(noopUpdate, (n) => n);
  await condition(() => false);
}

export const sameShapeUpdate = defineUpdate<number, [number]>('sameShape');

// The same activity options as the lineage workflow's summarise activity (heartbeat timeout = the
// default lease TTL), so the server does the same work per attempt.
const { floorTransaction } = proxyActivities<NaiveActivities>({ startToCloseTimeout: '30 minutes', heartbeatTimeout: '60 seconds' });

export async function sameShapeWorkflow(): Promise<void> {
  setHandler(sameShapeUpdate, async (n) => floorTransaction(n));
  await condition(() => false);
}

export const naiveAppendSignal = defineSignal<[Message[]]>('append');
export const naiveCompactUpdate = defineUpdate<{ messagesBefore: number; messagesAfter: number }, []>('compact');

const { naiveSummarise } = proxyActivities<NaiveActivities>({ startToCloseTimeout: '5 minutes', heartbeatTimeout: '1 minute' });

export async function naiveSessionWorkflow(initial: Message[]): Promise<void> {
  let messages = initial;
  let busy = false;
  setHandler(naiveAppendSignal, (batch) => void messages.push(...batch));
  setHandler(naiveCompactUpdate, async () => {
    await condition(() => !busy);
    busy = true;
    try {
      const before = messages.length;
      const compacted = await naiveSummarise(messages);
      // Appends that arrived while summarising are kept after the compacted part.
      messages = [...compacted, ...messages.slice(before)];
      return { messagesBefore: before, messagesAfter: messages.length };
    } finally {
      busy = false;
    }
  });
  await condition(() => false);
}
