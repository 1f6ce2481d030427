/**
 * The `agents` section of `npm run bench` (issue 38, docs/agents-on-temporal.md): one agent
 * on Temporal written two ways, on the bench's stack with a worker of its own in this process
 * (the workflows of test/support/temporal-agent-workflows.ts):
 * - with its conversation in a lineage (agentLoop + createAgentActivities, compaction on);
 * - the plain way (the whole conversation into every model activity, as the Temporal contrib
 *   integrations do).
 * The model is a scripted one in the `ai-sdk` dialect (tool calls four times in five, 5 KB
 * tool outputs), in process: the section measures history and heads, not a provider.
 * Reports workflow history bytes (proto-encoded events, every run summed) after N model calls
 * and per model call for both, and the model input per call (the head, in estimated tokens)
 * with compaction on.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import type { SessionsClient } from '../src/client';
import type { Message } from '../src/compaction/dialects';
import { PROJECT_ROOT } from '../src/config';
import { createAgentActivities } from '../src/temporal/activities';
import { aiSdkAgentModel } from '../src/temporal/ai-sdk-model';
import type { AgentToolCall } from '../src/temporal/contract';
import type { AgentModel } from '../src/temporal/model';

const TOOL_OUTPUT_CHARS = 5_000;
const COMPACT_AT = 12_000;

/** The ai-sdk dialect's shapes, with a scripted model: every fifth call answers, the others call one or two tools. */
function scriptedModel(): AgentModel {
  const shapes = aiSdkAgentModel({ model: 'scripted' as never });
  let calls = 0;
  return {
    ...shapes,
    async call() {
      calls++;
      if (calls % 5 === 0) return { messages: [{ role: 'assistant', content: [{ type: 'text', text: `Done with step ${calls}.` }] }] as unknown as Message[] };
      const parts = Array.from({ length: calls % 3 === 0 ? 2 : 1 }, (_, k) => ({
        type: 'tool-call',
        toolCallId: `call_${calls}_${k}`,
        toolName: 'read_file',
        input: { path: `src/module-${calls}-${k}.ts` },
      }));
      return { messages: [{ role: 'assistant', content: parts }] as unknown as Message[] };
    },
  };
}

const toolOutput = (call: AgentToolCall) => `${call.callId} `.repeat(Math.ceil(TOOL_OUTPUT_CHARS / (call.callId.length + 1))).slice(0, TOOL_OUTPUT_CHARS);

const eventBytes = (event: temporal.api.history.v1.IHistoryEvent) => temporal.api.history.v1.HistoryEvent.encode(event).finish().length;

/** Cumulative history bytes (every run so far) when each model activity completed. */
async function historyAfterEachCall(client: Client, workflowId: string, firstRunId: string, modelActivity: string): Promise<number[]> {
  const after: number[] = [];
  let total = 0;
  for (let runId: string | undefined = firstRunId; runId;) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const scheduled = new Set<string>();
    let next: string | undefined;
    for (const event of history.events ?? []) {
      total += eventBytes(event);
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity) scheduled.add(String(event.eventId));
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed && scheduled.has(String(completed.scheduledEventId))) after.push(total);
      next = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
    }
    runId = next;
  }
  return after;
}

export interface AgentsBenchOptions {
  temporalAddress: string;
  /** A client that takes history pages over 4 MB (the plain way's). */
  temporal: Client;
  sessions: SessionsClient;
  quick: boolean;
  log: (line: string) => void;
}

export async function measureAgentsOnTemporal(options: AgentsBenchOptions) {
  const { sessions, quick } = options;
  const lineageCalls = quick ? 100 : 200;
  const plainCalls = quick ? 50 : 100;
  const checkpoints = (quick ? [25, 50, 100] : [50, 100, 200]).filter((n) => n <= lineageCalls);
  const model = scriptedModel();
  const plainModel = scriptedModel();
  const tools = { read_file: (_input: unknown, { call }: { call: AgentToolCall }) => toolOutput(call) };
  const base = createAgentActivities({ sessions, model, tools });
  const heads: number[] = [];
  let lineageModelCalls = 0;
  let plainModelCallsMade = 0;
  let tasks = 0;
  /** What each plain model call was sent (the whole conversation), in estimated tokens. */
  const plainInputs: number[] = [];
  const activities = {
    ...base,
    async lineageAgentModelCall(input: { lineageId: string }) {
      const step = await base.lineageAgentModelCall(input);
      lineageModelCalls++;
      heads.push(step.headTokens);
      return step;
    },
    async nextTask({ agent, lineageId }: { agent: string; lineageId?: string }) {
      if (agent === 'plain') return plainModelCallsMade >= plainCalls ? null : `task ${++tasks}`;
      if (lineageModelCalls >= lineageCalls) return null;
      const text = `task ${++tasks}: look into the next module`;
      await base.lineageAgentInput({ lineageId: lineageId!, text });
      return text;
    },
    async beforeContinueAsNew() {},
    async plainModelCall({ messages }: { messages: unknown[] }) {
      plainModelCallsMade++;
      plainInputs.push(Math.ceil(JSON.stringify(messages).length / 4));
      const answer = await plainModel.call({ messages: messages as Message[], signal: new AbortController().signal });
      return { messages: answer.messages, ...plainModel.readStep(answer.messages) };
    },
    async plainToolCall({ call }: { call: AgentToolCall }) {
      return plainModel.toolResult(call, toolOutput(call));
    },
    async plainUserMessage({ text }: { text: string }) {
      return plainModel.userMessage(text);
    },
  };

  const connection = await NativeConnection.connect({ address: options.temporalAddress });
  const taskQueue = `bench-agents-${randomUUID().slice(0, 8)}`;
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(PROJECT_ROOT, 'test/support/temporal-agent-workflows.ts'),
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never,
  });
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities, maxConcurrentActivityTaskExecutions: 16 });
  const lineageId = `bench-agent-${randomUUID().slice(0, 8)}`;
  const started = Date.now();
  try {
    const [lineageAfter, plainAfter] = await worker.runUntil(async () => {
      await sessions.createSession({ sessionId: lineageId, dialect: 'ai-sdk', compactAt: COMPACT_AT });
      await sessions.append(lineageId, [model.userMessage('task 0: look into the first module')], { appendKey: 'bench-first-task' });
      const lineage = await options.temporal.workflow.start('lineageAgent', { taskQueue, workflowId: `bench-${lineageId}`, args: [lineageId] });
      const plain = await options.temporal.workflow.start('plainAgent', { taskQueue, workflowId: `bench-plain-${lineageId}`, args: [] });
      await Promise.all([lineage.result(), plain.result()]);
      return Promise.all([
        historyAfterEachCall(options.temporal, lineage.workflowId, lineage.firstExecutionRunId, 'lineageAgentModelCall'),
        historyAfterEachCall(options.temporal, plain.workflowId, plain.firstExecutionRunId, 'plainModelCall'),
      ]);
    });
    const at = (after: number[], n: number) => after[n - 1];
    const perCall = (after: number[], n: number) => (n <= after.length ? at(after, n) - (n > 1 ? at(after, n - 1) : 0) : null);
    const lastHalf = heads.slice(Math.floor(heads.length / 2));
    const result = {
      modelCalls: { lineage: lineageAfter.length, plain: plainAfter.length },
      toolOutputBytes: TOOL_OUTPUT_CHARS,
      compactAtTokens: COMPACT_AT,
      historyBytesAfter: Object.fromEntries(
        checkpoints.map((n) => [n, { lineage: at(lineageAfter, n) ?? null, plain: n <= plainAfter.length ? at(plainAfter, n) : null }]),
      ),
      historyBytesOfCall: Object.fromEntries(checkpoints.map((n) => [n, { lineage: perCall(lineageAfter, n), plain: perCall(plainAfter, n) }])),
      headTokensPerCall: {
        mean: Math.round(heads.reduce((a, b) => a + b, 0) / heads.length),
        maxLastHalf: Math.max(...lastHalf),
        meanLastHalf: Math.round(lastHalf.reduce((a, b) => a + b, 0) / lastHalf.length),
      },
      plainInputTokensPerCall: {
        mean: Math.round(plainInputs.reduce((a, b) => a + b, 0) / plainInputs.length),
        last: plainInputs.at(-1),
      },
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
    options.log(`agents: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await connection.close();
  }
}
