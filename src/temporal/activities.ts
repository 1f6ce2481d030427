/**
 * The activities of an agent that runs on Temporal with its conversation in a lineage
 * (issue 38): the workflow holds only the lineage id; each activity reads the lineage's head,
 * calls the model or a tool, appends what came back, and returns to the workflow only what it
 * must decide on (contract.ts). Workflow history grows by the model's output per call, not by
 * the conversation; compaction (the service's, at the lineage's threshold) bounds what each
 * model call sends.
 *
 *   const activities = createAgentActivities({ sessions, model: aiSdkAgentModel({ model, tools }), tools: { read_file } });
 *   await Worker.create({ activities, workflowsPath: require.resolve('./workflows'), ... });
 *
 * Idempotent under retries and replays: every append is keyed by the activity's own identity
 * (workflow id, run id, activity id: the same for every attempt of one activity, and never
 * another's), so an attempt that fails after its append (a worker killed, a lost answer)
 * stores nothing twice. A retried attempt first reads what its key stored
 * (SessionsClient.appendedUnder): when the first attempt's batch is there, it answers from it
 * without calling the model or the tool again, so the workflow decides on what the lineage
 * holds. A replay runs no activity at all.
 */
import { createHash } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { SessionsClient } from '../client/sessions-client';
import type { Message } from '../compaction/dialects';
import { InvalidInputError } from '../errors';
import type { AgentActivities, AgentModelStep, AgentToolCall, AgentToolReceipt } from './contract';
import type { AgentModel } from './model';

/** A tool the workflow can have run: its input is the model's arguments; its output goes to the lineage. */
export type AgentTool = (input: unknown, context: { lineageId: string; call: AgentToolCall; signal: AbortSignal }) => unknown;

export interface AgentActivitiesOptions {
  sessions: SessionsClient;
  model: AgentModel;
  /** The tools, by the name the model calls them. A call to another name is answered with an error text. */
  tools?: Record<string, AgentTool>;
}

/** The append key of the running activity: the same for each of its attempts, another for every other activity. */
export function activityAppendKey(): string {
  const { workflowExecution, activityId } = Context.current().info;
  if (!workflowExecution) throw ApplicationFailure.nonRetryable('the agent activities run only as activities of a workflow', 'InvalidInputError');
  const digest = createHash('sha256').update(`${workflowExecution.workflowId}\n${workflowExecution.runId}\n${activityId}`).digest('hex');
  return `temporal:${digest.slice(0, 48)}`;
}

/**
 * Model calls one model activity makes at most, when the SDK answers every call of a step
 * itself (AgentModelReading.again): each round's batch is appended under its own key (the
 * activity's, then `:2`, `:3`, ...), so a retried attempt finds every round it already made.
 */
const MAX_MODEL_ROUNDS = 4;

/** The output of a tool as the tool result carries it: a string as it is, anything else as JSON. */
const outputText = (output: unknown): string => (typeof output === 'string' ? output : JSON.stringify(output ?? null));

/**
 * Appends `batch` under `key`; when an earlier attempt stored another batch under it (an
 * attempt still running after its timeout, a model answering differently), answers that one.
 */
async function appendOnce(sessions: SessionsClient, lineageId: string, key: string, batch: Message[]): Promise<Message[]> {
  try {
    await sessions.append(lineageId, batch, { appendKey: key });
    return batch;
  } catch (error) {
    if (error instanceof InvalidInputError) {
      const stored = await sessions.appendedUnder(lineageId, key);
      if (stored) return stored;
      throw ApplicationFailure.nonRetryable(error.message, 'InvalidInputError');
    }
    throw error;
  }
}

export function createAgentActivities(options: AgentActivitiesOptions): AgentActivities {
  const { sessions, model, tools = {} } = options;

  return {
    async lineageAgentModelCall({ lineageId }): Promise<AgentModelStep> {
      const key = activityAppendKey();
      for (let round = 0; round < MAX_MODEL_ROUNDS; round++) {
        const roundKey = round === 0 ? key : `${key}:${round + 1}`;
        const stored = await sessions.appendedUnder(lineageId, roundKey);
        if (stored) {
          const { toolCalls, output, again } = model.readStep(stored);
          if (!again) return { toolCalls, ...(output !== undefined ? { output } : {}), headTokens: 0, headMessages: 0, recovered: true };
          continue;
        }
        const head = await sessions.transcript(lineageId, { for: 'provider' });
        const answer = await model.call({ messages: head.messages, signal: Context.current().cancellationSignal });
        const batch = await appendOnce(sessions, lineageId, roundKey, answer.messages);
        const { toolCalls, output, again } = model.readStep(batch);
        if (again) continue;
        return {
          toolCalls,
          ...(output !== undefined ? { output } : {}),
          ...(answer.inputTokens !== undefined ? { inputTokens: answer.inputTokens } : {}),
          headTokens: Math.ceil(JSON.stringify(head.messages).length / 4),
          headMessages: head.messages.length,
          recovered: batch !== answer.messages,
        };
      }
      throw ApplicationFailure.nonRetryable(
        `the model's last ${MAX_MODEL_ROUNDS} steps held only calls the SDK answered itself (tools it was not given, or input that did not parse)`,
        'AgentModelError',
      );
    },

    async lineageAgentToolCall({ lineageId, call }): Promise<AgentToolReceipt> {
      const key = activityAppendKey();
      const stored = await sessions.appendedUnder(lineageId, key);
      if (stored) return { callId: call.callId, bytes: JSON.stringify(stored).length, recovered: true };
      const tool = tools[call.name];
      const output = tool ? await tool(call.input, { lineageId, call, signal: Context.current().cancellationSignal }) : { error: `no tool named ${call.name}` };
      const batch = model.toolResult(call, output);
      const appended = await appendOnce(sessions, lineageId, key, batch);
      return { callId: call.callId, bytes: outputText(output).length, recovered: appended !== batch };
    },

    async lineageAgentInput({ lineageId, text }): Promise<void> {
      await appendOnce(sessions, lineageId, activityAppendKey(), [model.userMessage(text)]);
    },
  };
}
