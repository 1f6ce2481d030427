/**
 * The workflow side of an agent whose conversation is a lineage (`session-compaction/temporal/workflow`):
 * a loop of model calls and tool calls, each an activity (./activities.ts), that carries only
 * the lineage id. Deterministic: no I/O, no clock, no Node module; what it keeps between
 * steps is the tool calls of the current step. Workflow history holds, per model call, the
 * lineage id in and the model's tool calls (or final text) out, and per tool call a receipt.
 *
 *   import { agentLoop } from 'session-compaction/temporal/workflow';
 *
 *   export async function codingAgent(lineageId: string): Promise<string> {
 *     const { output } = await agentLoop({ lineageId, continueAsNewAfter: 50 }).run();
 *     return output;
 *   }
 *
 * After `continueAsNewAfter` model calls in one run (or when Temporal suggests it), the loop
 * continues the workflow as new with the lineage id only, between a step's tool results and
 * the next model call; the next run's first model call reads the same head from the lineage.
 */
import { type ActivityOptions, continueAsNew, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { AgentActivities, AgentModelStep, AgentToolCall } from './contract';

export interface AgentLoopOptions {
  /** The lineage (its root session id) that holds the conversation; the caller created it. */
  lineageId: string;
  /** Model calls in one workflow run before it continues as new. Default 100. */
  continueAsNewAfter?: number;
  /**
   * How the workflow continues as new, carrying the lineage id. Default: `continueAsNew(lineageId)`,
   * for a workflow whose only argument is the lineage id.
   */
  continueAsNew?: () => Promise<never>;
  /** At most this many model calls per `run()` (it then returns with `output` undefined). Default: no limit. */
  maxModelCalls?: number;
  /** Options of the activities (timeouts, retry policy, task queue). Default: 10 minutes start-to-close. */
  activities?: ActivityOptions;
  /** Run a step's tool calls one after the other. Default: all at once. */
  sequentialTools?: boolean;
}

export interface AgentRunResult {
  /** The model's final text, or undefined when `maxModelCalls` stopped the run first. */
  output?: string;
  /** Model calls this `run()` made. */
  modelCalls: number;
  /** Tool calls this `run()` ran. */
  toolCalls: number;
  /** The head each model call was sent, in estimated tokens, in order. */
  headTokens: number[];
}

export interface AgentLoop {
  /** Appends a user message to the lineage (an activity, keyed: stored once). */
  say(text: string): Promise<void>;
  /** Calls the model and runs its tool calls until the model answers. */
  run(): Promise<AgentRunResult>;
  /** Model calls this workflow run made so far (all of its `run()`s). */
  readonly modelCalls: number;
}

export function agentLoop(options: AgentLoopOptions): AgentLoop {
  const { lineageId, continueAsNewAfter = 100, maxModelCalls = Infinity, sequentialTools = false } = options;
  const activities = proxyActivities<AgentActivities>({ startToCloseTimeout: '10 minutes', ...options.activities });
  const continueAsNewNow = options.continueAsNew ?? (() => continueAsNew<(lineageId: string) => Promise<unknown>>(lineageId));
  let modelCalls = 0;

  const runTools = async (calls: readonly AgentToolCall[]) => {
    if (sequentialTools) {
      for (const call of calls) await activities.lineageAgentToolCall({ lineageId, call });
    } else {
      await Promise.all(calls.map((call) => activities.lineageAgentToolCall({ lineageId, call })));
    }
  };

  return {
    say: (text) => activities.lineageAgentInput({ lineageId, text }),
    async run() {
      const result: AgentRunResult = { modelCalls: 0, toolCalls: 0, headTokens: [] };
      while (result.modelCalls < maxModelCalls) {
        const step: AgentModelStep = await activities.lineageAgentModelCall({ lineageId });
        modelCalls++;
        result.modelCalls++;
        result.headTokens.push(step.headTokens);
        if (step.toolCalls.length === 0) return { ...result, output: step.output ?? '' };
        await runTools(step.toolCalls);
        result.toolCalls += step.toolCalls.length;
        // Between a step's tool results and the next model call: the lineage ends with the
        // results, and the next run's first call reads them from it.
        if (modelCalls >= continueAsNewAfter || workflowInfo().continueAsNewSuggested) await continueAsNewNow();
      }
      return result;
    },
    get modelCalls() {
      return modelCalls;
    },
  };
}
