/**
 * The workflows of test/stack/temporal-agents.test.ts (bundled by the test's own worker), one
 * agent written two ways (and `killableAgent`, for test/stack/temporal-agent-kill.test.ts):
 * - `lineageAgent`: the shape of docs/agents-on-temporal.md, agentLoop over a lineage; the
 *   workflow carries the lineage id only, continues as new every `CALLS_PER_RUN` model calls;
 * - `plainAgent`: the way the Temporal contrib integrations do it (@temporalio/ai-sdk's
 *   `invokeModel` gets the whole prompt): the workflow holds the conversation and passes all
 *   of it into every model activity; the tools' outputs come back into history too.
 * Both take their next user request from the test (`nextTask`), which ends them after a budget
 * of model calls.
 */
import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import { agentLoop } from '../../src/temporal/workflow';
import type { AgentToolCall } from '../../src/temporal/contract';

/** Model calls in one run of lineageAgent before it continues as new. */
export const CALLS_PER_RUN = 70;

export interface TaskActivities {
  /** The next user request, appended to the lineage (keyed) when `lineageId` is given; null when the budget is spent. */
  nextTask(input: { agent: string; lineageId?: string }): Promise<string | null>;
  /** Records the lineage's head as the run leaves it (just before it continues as new). */
  beforeContinueAsNew(input: { lineageId: string }): Promise<void>;
}

export interface PlainActivities {
  /** The whole conversation in, the model's response messages out. */
  plainModelCall(input: { messages: unknown[] }): Promise<{ messages: unknown[]; toolCalls: AgentToolCall[]; output?: string }>;
  /** The tool's result message (its whole output) out. */
  plainToolCall(input: { call: AgentToolCall }): Promise<unknown[]>;
  plainUserMessage(input: { text: string }): Promise<unknown>;
}

const retry = { initialInterval: '50 ms', maximumInterval: '200 ms', backoffCoefficient: 2 };
const tasks = proxyActivities<TaskActivities>({ startToCloseTimeout: '1 minute', retry });
const plain = proxyActivities<PlainActivities>({ startToCloseTimeout: '1 minute', retry });

async function runLineageAgent(lineageId: string, callsPerRun: number): Promise<number> {
  const agent = agentLoop({
    lineageId,
    continueAsNewAfter: callsPerRun,
    activities: { startToCloseTimeout: '1 minute', retry },
    continueAsNew: async () => {
      await tasks.beforeContinueAsNew({ lineageId });
      return continueAsNew<(lineageId: string) => Promise<number>>(lineageId);
    },
  });
  for (;;) {
    await agent.run();
    const next = await tasks.nextTask({ agent: 'lineage', lineageId });
    if (next === null) return agent.modelCalls;
  }
}

export async function lineageAgent(lineageId: string): Promise<number> {
  return runLineageAgent(lineageId, CALLS_PER_RUN);
}

/** The same agent, continuing as new every 10 model calls. */
export async function lineageAgentShortRuns(lineageId: string): Promise<number> {
  return runLineageAgent(lineageId, 10);
}

export async function plainAgent(): Promise<number> {
  const messages: unknown[] = [];
  let calls = 0;
  for (let task = await tasks.nextTask({ agent: 'plain' }); task !== null; task = await tasks.nextTask({ agent: 'plain' })) {
    messages.push(await plain.plainUserMessage({ text: task }));
    for (;;) {
      const step = await plain.plainModelCall({ messages });
      calls++;
      messages.push(...step.messages);
      if (step.toolCalls.length === 0) break;
      const results = await Promise.all(step.toolCalls.map((call) => plain.plainToolCall({ call })));
      messages.push(...results.flat());
    }
  }
  return calls;
}

/**
 * The agent of test/stack/temporal-agent-kill.test.ts: the user's requests said one after the
 * other, each run to its answer. Its activities time out after 5 s, so an attempt on a worker
 * that was killed is retried (on another worker) within seconds.
 */
export async function killableAgent(lineageId: string, requests: string[]): Promise<string[]> {
  return answerEach(lineageId, requests, false);
}

/** killableAgent with the tool calls of a step run one after the other: other commands, which a replay of killableAgent's history must refuse. */
export async function killableAgentSequential(lineageId: string, requests: string[]): Promise<string[]> {
  return answerEach(lineageId, requests, true);
}

async function answerEach(lineageId: string, requests: string[], sequentialTools: boolean): Promise<string[]> {
  const agent = agentLoop({ lineageId, sequentialTools, activities: { startToCloseTimeout: '5 seconds', retry } });
  const answers: string[] = [];
  for (const request of requests) {
    await agent.say(request);
    answers.push((await agent.run()).output ?? '');
  }
  return answers;
}
