/**
 * Agents that run on Temporal with their conversation in a lineage (issue 38,
 * docs/agents-on-temporal.md), on the test stack's real Temporal dev server, with a worker of
 * this test's own that bundles test/support/temporal-agent-workflows.ts:
 *
 * - the AI SDK agent (`lineageAgent`: agentLoop, createAgentActivities, aiSdkAgentModel with
 *   the REAL `@ai-sdk/openai` Responses model against the strict Responses fake), 200+ model
 *   calls whose tools answer 5 KB each, compacting at a low threshold: its workflow history
 *   (every run, summed) stays under 2 MB and grows linearly, by the model's output; it
 *   continues as new at least twice and each run starts from the head the last one left;
 * - the same agent written the plain way (`plainAgent`: the whole conversation into every
 *   model activity, the tools' outputs back into history), in the same run: its history grows
 *   quadratically (measured at 50 and 100 calls; 200 would pass Temporal's 50 MB limit);
 * - the OpenAI Agents SDK's `OpenAIResponsesModel` through agentsSdkAgentModel, continuing
 *   as new every 10 calls;
 * - model and tool activities that fail after their append and are retried, a worker shut
 *   down under a model activity that had appended (a second worker retries it), and every
 *   history replayed: the test's ledger of what each activity appended (by append key)
 *   matches the lineage exactly, no duplicate, no lost message, and the audit agrees.
 * Every model request is accepted by the strict fake (0 rejected).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { OpenAIResponsesModel } from '@openai/agents-openai';
import { setTracingDisabled } from '@openai/agents-core';
import { Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { jsonSchema, type ToolSet } from 'ai';
import { sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { auditRows } from '../../src/db/session-store';
import { activityAppendKey, createAgentActivities } from '../../src/temporal/activities';
import { agentsSdkAgentModel } from '../../src/temporal/agents-sdk-model';
import { aiSdkAgentModel } from '../../src/temporal/ai-sdk-model';
import type { AgentActivities, AgentModelStep, AgentToolCall } from '../../src/temporal/contract';
import type { AgentModel } from '../../src/temporal/model';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';
import { fillerText, seededRandom } from '../support/strict-provider';
import { uniqueId, useTestStack } from '../support/stack';
import { CALLS_PER_RUN, type PlainActivities, type TaskActivities } from '../support/temporal-agent-workflows';

const stack = useTestStack();

const LINEAGE_CALLS = 200;
const PLAIN_CALLS = 100;
const AGENTS_SDK_CALLS = 30;
const TOOL_OUTPUT_CHARS = 5_000;
const TOOL_NAMES = ['run_tests', 'read_file', 'grep', 'edit_file', 'list_dir'];
/** The n-th model call (1-based) / tool call of the lineage agent fails once, after its append. */
const FAIL_MODEL_CALLS = new Set([37, 121]);
const FAIL_TOOL_CALLS = new Set([53, 160]);

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;

/** A tool's 5 KB output, the same for the same call. */
const toolOutput = (call: AgentToolCall) =>
  fillerText(seededRandom(createHash('sha256').update(call.callId).digest().readUInt32BE(0)), TOOL_OUTPUT_CHARS, `${call.name} ${call.callId}`);
const tools = Object.fromEntries(TOOL_NAMES.map((name) => [name, (_input: unknown, { call }: { call: AgentToolCall }) => toolOutput(call)]));
const aiSdkTools: ToolSet = Object.fromEntries(
  TOOL_NAMES.map((name) => [name, { description: `the ${name} tool`, inputSchema: jsonSchema({ type: 'object', additionalProperties: true }) }]),
);
const agentsSdkTools = TOOL_NAMES.map((name) => ({
  type: 'function' as const,
  name,
  description: `the ${name} tool`,
  parameters: { type: 'object' as const, properties: {}, required: [], additionalProperties: true },
  strict: false,
}));

/** What the test saw each agent activity do. */
interface Ledger {
  /** Append key → messages the key stored (read back after the activity's append). */
  keys: Map<string, number>;
  modelCalls: { runId: string; step: AgentModelStep; attempt: number }[];
  toolCalls: number;
  failedAfterAppend: number;
  recovered: number;
  /** The run ids, in the order their first activity ran. */
  runs: string[];
  /** The head a run left (before continuing as new) and the head the next run's first model call read. */
  boundaries: { left: unknown[]; leftSession: string; found?: unknown[]; foundSession?: string }[];
  tasks: number;
}

const newLedger = (): Ledger => ({ keys: new Map(), modelCalls: [], toolCalls: 0, failedAfterAppend: 0, recovered: 0, runs: [], boundaries: [], tasks: 0 });

/** The agent's activities as a worker registers them, wrapped to keep the ledger and to fail on cue. */
function ledgerActivities(
  model: AgentModel,
  ledger: Ledger,
  budget: number,
  fail: { model: Set<number>; tool: Set<number>; hang?: { call: number; started: () => void } } = { model: new Set(), tool: new Set() },
): AgentActivities & Pick<TaskActivities, 'beforeContinueAsNew'> & { nextTask: TaskActivities['nextTask'] } {
  const base = createAgentActivities({ sessions: stack().client, model, tools });
  const keep = async (lineageId: string) => {
    const key = activityAppendKey();
    ledger.keys.set(key, (await stack().client.appendedUnder(lineageId, key))?.length ?? 0);
  };
  const newRun = () => {
    const { runId } = Context.current().info.workflowExecution!;
    if (ledger.runs.at(-1) === runId) return false;
    ledger.runs.push(runId);
    return ledger.runs.length > 1;
  };
  let modelCalls = 0;
  let toolCalls = 0;
  return {
    async lineageAgentModelCall(input) {
      if (newRun()) {
        const head = await stack().client.transcript(input.lineageId);
        Object.assign(ledger.boundaries.at(-1)!, { found: head.messages, foundSession: head.sessionId });
      }
      const { attempt } = Context.current().info;
      const n = attempt === 1 ? ++modelCalls : modelCalls;
      const step = await base.lineageAgentModelCall(input);
      await keep(input.lineageId);
      if (step.recovered) ledger.recovered++;
      else ledger.modelCalls.push({ runId: ledger.runs.at(-1)!, step, attempt });
      if (attempt === 1 && fail.hang?.call === n) {
        // Appended; now the worker goes away under this attempt (the test shuts it down, which cancels it).
        ledger.failedAfterAppend++;
        fail.hang.started();
        await Context.current().cancelled;
      }
      if (attempt === 1 && fail.model.has(n)) {
        ledger.failedAfterAppend++;
        throw new Error(`model call ${n}: the worker died after the append`);
      }
      return step;
    },
    async lineageAgentToolCall(input) {
      newRun();
      const { attempt } = Context.current().info;
      const n = attempt === 1 ? ++toolCalls : 0;
      const receipt = await base.lineageAgentToolCall(input);
      await keep(input.lineageId);
      if (receipt.recovered) ledger.recovered++;
      else ledger.toolCalls++;
      if (attempt === 1 && fail.tool.has(n)) {
        ledger.failedAfterAppend++;
        throw new Error(`tool call ${n}: the worker died after the append`);
      }
      return receipt;
    },
    async lineageAgentInput(input) {
      await base.lineageAgentInput(input);
      await keep(input.lineageId);
    },
    async nextTask({ lineageId }) {
      if (ledger.modelCalls.length >= budget) return null;
      const text = `task ${++ledger.tasks}: look into module ${ledger.tasks * 7} and make its tests pass`;
      // The user's request, appended (keyed by this activity) as the agent's own input would be.
      await base.lineageAgentInput({ lineageId: lineageId!, text });
      await keep(lineageId!);
      return text;
    },
    async beforeContinueAsNew({ lineageId }) {
      const head = await stack().client.transcript(lineageId);
      ledger.boundaries.push({ left: head.messages, leftSession: head.sessionId });
    },
  };
}

/** The first request, appended by the test before the workflow starts (the workflow carries only the lineage id). */
async function firstTask(lineageId: string, model: AgentModel, ledger: Ledger) {
  const text = `task ${++ledger.tasks}: look into module ${ledger.tasks * 7} and make its tests pass`;
  await stack().client.append(lineageId, [model.userMessage(text)], { appendKey: 'first-task' });
  ledger.keys.set('first-task', 1);
}

/** The plain way's activities: the whole conversation in, the output (all of it) out. */
function plainActivities(model: AgentModel, budget: number): PlainActivities & { nextTask: TaskActivities['nextTask']; calls: () => number } {
  let calls = 0;
  let tasks = 0;
  return {
    async plainModelCall({ messages }) {
      calls++;
      const answer = await model.call({ messages: messages as never, signal: Context.current().cancellationSignal });
      return { messages: answer.messages, ...model.readStep(answer.messages) };
    },
    async plainToolCall({ call }) {
      return model.toolResult(call, toolOutput(call));
    },
    async plainUserMessage({ text }) {
      return model.userMessage(text);
    },
    async nextTask() {
      return calls >= budget ? null : `task ${++tasks}: look into module ${tasks * 7} and make its tests pass`;
    },
    calls: () => calls,
  };
}

/** Proto-encoded bytes of a history event (what Temporal's history size limit counts). */
const eventBytes = (event: temporal.api.history.v1.IHistoryEvent) => temporal.api.history.v1.HistoryEvent.encode(event).finish().length;

/**
 * Every run of a workflow, first to last (following continue-as-new): its history, and the
 * cumulative history bytes (all runs so far) when each of its model activities completed.
 */
async function measureHistory(workflowId: string, firstRunId: string, modelActivity: string) {
  const histories: temporal.api.history.v1.IHistory[] = [];
  const afterCall: number[] = [];
  let total = 0;
  for (let runId: string | undefined = firstRunId; runId;) {
    const history = await historyClient.workflow.getHandle(workflowId, runId).fetchHistory();
    histories.push(history);
    const modelScheduled = new Set<string>();
    let next: string | undefined;
    for (const event of history.events ?? []) {
      total += eventBytes(event);
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === modelActivity) modelScheduled.add(String(event.eventId));
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed && modelScheduled.has(String(completed.scheduledEventId))) afterCall.push(total);
      next = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? next;
    }
    runId = next;
  }
  return { histories, afterCall, total, runs: histories.length };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

let responses: StrictResponsesProvider;
let connection: NativeConnection;
let workflowBundle: { code: string };
/** A client that takes history pages bigger than gRPC's default 4 MB (the plain way's are). */
let historyClient: Client;

beforeAll(async () => {
  responses = await startStrictResponses({ seed: 38, largeArgumentsChance: 0 });
  connection = await NativeConnection.connect({ address: inject('stack').temporalAddress });
  historyClient = new Client({
    connection: await Connection.connect({ address: inject('stack').temporalAddress, channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 } }),
  });
  // The Agents SDK's traces go nowhere in a test.
  setTracingDisabled(true);
  workflowBundle = await bundleWorkflowCode({ workflowsPath: path.join(PROJECT_ROOT, 'test/support/temporal-agent-workflows.ts'), logger: quiet });
}, 120_000);

afterAll(async () => {
  await historyClient?.connection.close();
  await connection?.close();
  await responses?.close();
});

/** Runs `use` with a worker of this test's own (the bundle above, `activities`) on a task queue of its own. */
async function withWorker<T>(activities: object, use: (taskQueue: string) => Promise<T>, taskQueue = uniqueId('temporal-agents')): Promise<T> {
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities, maxConcurrentActivityTaskExecutions: 16 });
  const running = worker.run();
  try {
    return await use(taskQueue);
  } finally {
    worker.shutdown();
    await running;
  }
}

/** Messages each append key stored in the lineage (copies made by compactions left out). */
async function storedByKey(lineageId: string): Promise<Map<string, number>> {
  const { rows } = await stack().db.db.execute(sql`
    select m.append_key as key, count(*)::int as n from messages m join sessions s on s.id = m.session_id
    where s.lineage_id = ${lineageId} and m.append_key is not null and m.written_by_compaction is null group by 1`);
  return new Map(rows.map((r) => [String((r as { key: string }).key), Number((r as { n: number }).n)]));
}

/** The ledger against the lineage: every key the agent's activities used stored exactly what they appended, and nothing else is there. */
async function expectLedgerMatches(lineageId: string, ledger: Ledger) {
  const stored = await storedByKey(lineageId);
  const sorted = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
  expect(sorted(stored)).toEqual(sorted(ledger.keys));
  const audit = await stack().client.operator.auditLineage(lineageId);
  expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.duplicatedByKey, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0, 0]);
}

/** Each run started from the head the previous one left: JSON-equal, unless a compaction committed in between. */
function expectBoundariesKept(ledger: Ledger, runs: number) {
  expect(ledger.boundaries.length).toBe(runs - 1);
  for (const b of ledger.boundaries) {
    expect(b.found, 'the next run read the head').toBeDefined();
    if (b.foundSession === b.leftSession) expect(JSON.stringify(b.found)).toBe(JSON.stringify(b.left));
  }
  expect(ledger.boundaries.filter((b) => b.foundSession === b.leftSession).length).toBeGreaterThanOrEqual(1);
}

describe('agents on Temporal keep their conversation in a lineage', () => {
  it('AI SDK: 200 model calls with 5 KB tool outputs; history under 2 MB, linear; the plain way quadratic; continue-as-new, retries and replay lose and duplicate nothing', async () => {
    const lineageId = uniqueId('temporal-agent');
    await stack().client.createSession({ sessionId: lineageId, dialect: 'ai-sdk', compactAt: 12_000 });
    const openai = createOpenAI({ apiKey: 'test-key', baseURL: responses.url });
    const ledger = newLedger();
    const activities = ledgerActivities(
      aiSdkAgentModel({ model: openai('agent-model'), system: 'You are a coding agent.', tools: aiSdkTools }),
      ledger,
      LINEAGE_CALLS,
      { model: FAIL_MODEL_CALLS, tool: FAIL_TOOL_CALLS },
    );
    const plainModel = aiSdkAgentModel({ model: openai('agent-model-plain'), system: 'You are a coding agent.', tools: aiSdkTools });
    const plain = plainActivities(plainModel, PLAIN_CALLS);
    const started = Date.now();

    const [lineageRun, plainRun] = await withWorker(
      { ...activities, ...plain, nextTask: (i: { agent: string }) => (i.agent === 'plain' ? plain.nextTask(i as never) : activities.nextTask(i as never)) },
      async (taskQueue) => {
        // The first request goes into the lineage before the workflow starts; the workflow carries only the id.
        await firstTask(lineageId, plainModel, ledger);
        const lineageHandle = await stack().temporal.workflow.start('lineageAgent', { taskQueue, workflowId: `agent-${lineageId}`, args: [lineageId] });
        const plainHandle = await stack().temporal.workflow.start('plainAgent', { taskQueue, workflowId: `plain-${lineageId}`, args: [] });
        await Promise.all([lineageHandle.result(), plainHandle.result()]);
        return [
          await measureHistory(lineageHandle.workflowId, lineageHandle.firstExecutionRunId, 'lineageAgentModelCall'),
          await measureHistory(plainHandle.workflowId, plainHandle.firstExecutionRunId, 'plainModelCall'),
        ];
      },
    );
    const seconds = (Date.now() - started) / 1000;

    // Every model request, both agents', accepted by the strict fake.
    expect(responses.rejections.map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    const agentRequests = responses.requests.filter((r) => r.caller === 'agent');
    expect(agentRequests.length).toBe(ledger.modelCalls.length + plain.calls());

    // The lineage agent: 200+ calls over 3+ runs, under 2 MB in all, growing linearly.
    expect(ledger.modelCalls.length).toBeGreaterThanOrEqual(LINEAGE_CALLS);
    expect(lineageRun.afterCall.length).toBe(ledger.modelCalls.length);
    expect(lineageRun.runs).toBeGreaterThanOrEqual(3);
    expect(lineageRun.total).toBeLessThan(2_000_000);
    const at = (run: typeof lineageRun, calls: number) => run.afterCall[calls - 1];
    const lineagePerCall = [at(lineageRun, 50) / 50, (at(lineageRun, 100) - at(lineageRun, 50)) / 50, (at(lineageRun, 200) - at(lineageRun, 100)) / 100];
    expect(Math.max(...lineagePerCall) / Math.min(...lineagePerCall)).toBeLessThan(1.6);
    // The plain way: quadratic (each call's input is the whole conversation so far).
    expect(plainRun.afterCall.length).toBeGreaterThanOrEqual(PLAIN_CALLS);
    const plainPerCall = [at(plainRun, 50) / 50, (at(plainRun, 100) - at(plainRun, 50)) / 50];
    expect(plainPerCall[1]).toBeGreaterThan(2 * plainPerCall[0]);
    expect(at(plainRun, 100)).toBeGreaterThan(10 * at(lineageRun, 100));

    // Compaction bounded what each call sent: the head stayed near the threshold while the conversation grew.
    const heads = ledger.modelCalls.map((c) => c.step.headTokens);
    const compactions = (await auditRows(stack().db.db, lineageId)).filter((r) => r.outcome === 'compacted').length;
    expect(compactions).toBeGreaterThanOrEqual(5);
    expect(Math.max(...heads.slice(-50))).toBeLessThan(3 * 12_000);

    // Retries after the append answered from what their key stored; each run started from the head the last one left.
    expect(ledger.failedAfterAppend).toBe(FAIL_MODEL_CALLS.size + FAIL_TOOL_CALLS.size);
    expect(ledger.recovered).toBe(ledger.failedAfterAppend);
    expectBoundariesKept(ledger, lineageRun.runs);
    await expectLedgerMatches(lineageId, ledger);

    // Replaying every run's history runs no activity and changes nothing.
    const before = await storedByKey(lineageId);
    for (const history of lineageRun.histories) await Worker.runReplayHistory({ workflowBundle, replayName: 'temporal-agents' }, history);
    expect([...(await storedByKey(lineageId)).entries()].sort()).toEqual([...before.entries()].sort());
    await expectLedgerMatches(lineageId, ledger);

    const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;
    console.log(
      `temporal-agents (${seconds.toFixed(0)} s): lineage agent ${ledger.modelCalls.length} model calls over ${lineageRun.runs} runs ` +
        `(continue-as-new every ${CALLS_PER_RUN}), ${compactions} compactions; history after 50/100/200 calls: ` +
        `${kb(at(lineageRun, 50))} / ${kb(at(lineageRun, 100))} / ${kb(at(lineageRun, 200))} (total ${mb(lineageRun.total)}); ` +
        `plain way after 50/100 calls: ${mb(at(plainRun, 50))} / ${mb(at(plainRun, 100))} (200 calls projected ~${mb(4 * at(plainRun, 100))}); ` +
        `head tokens, last 50 calls: max ${Math.max(...heads.slice(-50))}; ${ledger.failedAfterAppend} activities failed after their append, ${ledger.recovered} recovered; 0 rejected`,
    );
  }, 300_000);

  it('OpenAI Agents SDK: OpenAIResponsesModel in the model activity; continues as new every 10 calls; a worker gone mid-activity; nothing lost or duplicated', async () => {
    const lineageId = uniqueId('temporal-agents-sdk');
    await stack().client.createSession({ sessionId: lineageId, dialect: 'openai-agents', compactAt: 8_000 });
    const client = new OpenAI({ apiKey: 'test-key', baseURL: responses.url, maxRetries: 0 });
    const model = agentsSdkAgentModel({
      model: new OpenAIResponsesModel(client as never, 'agent-model-sdk'),
      instructions: 'You are a coding agent.',
      tools: agentsSdkTools,
    });
    const ledger = newLedger();
    let hung!: () => void;
    const hanging = new Promise<void>((resolve) => (hung = resolve));
    const activities = ledgerActivities(model, ledger, AGENTS_SDK_CALLS, { model: new Set([7]), tool: new Set([9]), hang: { call: 15, started: hung } });
    const rejectedBefore = responses.rejections.length;
    // A worker that goes away in the middle of model call 15, after its append; a second worker takes over.
    const taskQueue = uniqueId('temporal-agents-sdk');
    const first = await Worker.create({ connection, taskQueue, workflowBundle, activities });
    const firstRun = first.run();
    await firstTask(lineageId, model, ledger);
    const handle = await stack().temporal.workflow.start('lineageAgentShortRuns', { taskQueue, workflowId: `agent-${lineageId}`, args: [lineageId] });
    await hanging;
    first.shutdown();
    await firstRun;
    const result = await withWorker(
      activities,
      async () => {
        await handle.result();
        return measureHistory(handle.workflowId, handle.firstExecutionRunId, 'lineageAgentModelCall');
      },
      taskQueue,
    );
    expect(responses.rejections.slice(rejectedBefore).map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    expect(ledger.modelCalls.length).toBeGreaterThanOrEqual(AGENTS_SDK_CALLS);
    expect(result.runs).toBeGreaterThanOrEqual(3);
    expect(ledger.failedAfterAppend).toBe(3);
    expect(ledger.recovered).toBe(3);
    expectBoundariesKept(ledger, result.runs);
    await expectLedgerMatches(lineageId, ledger);
    for (const history of result.histories) await Worker.runReplayHistory({ workflowBundle, replayName: 'temporal-agents-sdk' }, history);
    await expectLedgerMatches(lineageId, ledger);
    console.log(
      `temporal-agents (Agents SDK): ${ledger.modelCalls.length} model calls over ${result.runs} runs, history ${mb(result.total)} in all, ${ledger.recovered} retries recovered`,
    );
  }, 180_000);
});
