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
 * with compaction on. In the full run the plain way is given 200 model calls: Temporal
 * terminates it when its history passes the server's size limit (50 MB by default), and the
 * section records where (model calls and history bytes at termination). Any other end of it
 * fails the section.
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { type Client, TerminatedFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
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

/** The reason the Temporal server gives when it terminates a workflow whose history passed its size limit. */
const HISTORY_SIZE_TERMINATION = /history size exceeds limit/i;

interface RunsHistory {
  /** Cumulative history bytes (every run so far) when each model activity completed. */
  after: number[];
  /** History bytes of every run, every event. */
  totalBytes: number;
  /** The reason of the last run's WorkflowExecutionTerminated event, when it was terminated. */
  terminatedReason?: string;
}

async function historyOfRuns(client: Client, workflowId: string, firstRunId: string, modelActivity: string): Promise<RunsHistory> {
  const after: number[] = [];
  let total = 0;
  let terminatedReason: string | undefined;
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
      const terminated = event.workflowExecutionTerminatedEventAttributes;
      if (terminated) terminatedReason = terminated.reason ?? '';
    }
    runId = next;
  }
  return { after, totalBytes: total, terminatedReason };
}

/**
 * How the plain way ended. It may end only by completing its budget or by Temporal's
 * history-size termination; anything else (another failure, a termination for another reason)
 * is thrown, so the section cannot report a crash as the limit.
 */
async function plainEnding(handle: WorkflowHandle, runs: RunsHistory, outcome: unknown) {
  if (outcome === 'completed') return null;
  const terminatedBySize =
    outcome instanceof WorkflowFailedError && outcome.cause instanceof TerminatedFailure && HISTORY_SIZE_TERMINATION.test(runs.terminatedReason ?? '');
  if (!terminatedBySize) throw new Error(`the plain way ended otherwise than by the history size limit: ${String(outcome)} (reason ${runs.terminatedReason})`);
  const { historySize, historyLength } = await handle.describe();
  return {
    reason: runs.terminatedReason!,
    /** Model activities completed before the termination. */
    afterModelCalls: runs.after.length,
    /** Proto-encoded events, as historyBytesAfter counts them. */
    historyBytes: runs.totalBytes,
    /** The server's own count, which its limit is checked against. */
    serverHistorySizeBytes: historySize ?? null,
    events: historyLength,
  };
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
  /** The plain way's budget; the full run's is past where Temporal terminates it (its history size limit). */
  const plainCalls = quick ? 50 : 200;
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
    const { lineageAfter, plainAfter, plainTerminated } = await worker.runUntil(async () => {
      await sessions.createSession({ sessionId: lineageId, dialect: 'ai-sdk', compactAt: COMPACT_AT });
      await sessions.append(lineageId, [model.userMessage('task 0: look into the first module')], { appendKey: 'bench-first-task' });
      const lineage = await options.temporal.workflow.start('lineageAgent', { taskQueue, workflowId: `bench-${lineageId}`, args: [lineageId] });
      const plain = await options.temporal.workflow.start('plainAgent', { taskQueue, workflowId: `bench-plain-${lineageId}`, args: [] });
      const [, plainOutcome] = await Promise.all([
        lineage.result(),
        plain.result().then(
          () => 'completed',
          (error: unknown) => error,
        ),
      ]);
      const [lineageRuns, plainRuns] = await Promise.all([
        historyOfRuns(options.temporal, lineage.workflowId, lineage.firstExecutionRunId, 'lineageAgentModelCall'),
        historyOfRuns(options.temporal, plain.workflowId, plain.firstExecutionRunId, 'plainModelCall'),
      ]);
      return { lineageAfter: lineageRuns.after, plainAfter: plainRuns.after, plainTerminated: await plainEnding(plain, plainRuns, plainOutcome) };
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
      /** Where Temporal terminated the plain way (its history size limit); null when it completed its budget. */
      plainTerminated,
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
