/**
 * A worker of the agent activities (createAgentActivities with the AI SDK's real
 * `@ai-sdk/openai` Responses model against the test's strict Responses fake) in a process of
 * its own, for test/stack/temporal-agent-kill.test.ts, which SIGKILLs it under an activity.
 * Run as `node --import tsx test/support/temporal-agent-worker.ts` (tsx as a loader in this
 * process, so the SIGKILL reaches the worker itself).
 *
 * Environment: the stack's (TEMPORAL_ADDRESS, DATABASE_URL, ...), and
 * - AGENT_TASK_QUEUE, AGENT_WORKFLOW_BUNDLE (the code path of a bundle of
 *   test/support/temporal-agent-workflows.ts), AGENT_RESPONSES_URL, AGENT_MODEL;
 * - AGENT_HOLD, `model:<n>` or `tool:<n>`: the n-th first attempt of that activity this process
 *   runs holds once its append has landed, and never returns (the test kills the process).
 *
 * Prints one line per event, for the test to read: `ready`; `appended <activity> <activity id> <attempt>
 * <key> <messages>` after each append resolved; `ran <callId> <sha256 of its output's canonical JSON>` each time a tool runs; `holding
 * <activity> <key>` when it holds.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createOpenAI } from '@ai-sdk/openai';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import { jsonSchema, type ToolSet } from 'ai';
import { SessionsClient } from '../../src/client/sessions-client';
import { canonicalJson } from '../../src/compaction/json';
import { loadConfig } from '../../src/config';
import { activityAppendKey, createAgentActivities } from '../../src/temporal/activities';
import { aiSdkAgentModel } from '../../src/temporal/ai-sdk-model';
import type { AgentToolCall } from '../../src/temporal/contract';

/** The tools the strict fake's agent script calls. */
const TOOL_NAMES = ['run_tests', 'read_file', 'grep', 'edit_file', 'list_dir'];

/** A tool's output: JSON of about 3 KB, another one every time the tool runs (so a second run would show). */
const toolOutput = (call: AgentToolCall) => ({
  tool: call.name,
  callId: call.callId,
  input: call.input,
  run: randomUUID(),
  pid: process.pid,
  matches: Array.from({ length: 40 }, (_, i) => ({ path: `src/module-${i}.ts`, line: i * 7 + 1, text: `export function step${i}(input: string): string {` })),
});

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

async function main(): Promise<void> {
  const config = loadConfig();
  const [holdActivity, holdAt] = (process.env.AGENT_HOLD ?? '').split(':');
  const holdName = { model: 'lineageAgentModelCall', tool: 'lineageAgentToolCall' }[holdActivity ?? ''];
  const sessions = await SessionsClient.connect({ config });

  // The append the activities make, reported once it resolved; the chosen one then holds.
  const firstAttempts = new Map<string, number>();
  const append = sessions.append.bind(sessions);
  sessions.append = async (sessionId, messages, options) => {
    const outcome = await append(sessionId, messages, options);
    const { activityType, activityId, attempt } = Context.current().info;
    const key = activityAppendKey();
    console.log(`appended ${activityType} ${activityId} ${attempt} ${key} ${(messages as unknown[]).length}`);
    if (attempt === 1) {
      const n = (firstAttempts.get(activityType) ?? 0) + 1;
      firstAttempts.set(activityType, n);
      if (activityType === holdName && n === Number(holdAt)) {
        console.log(`holding ${activityType} ${key}`);
        await new Promise<never>(() => {});
      }
    }
    return outcome;
  };

  const toolSchemas: ToolSet = Object.fromEntries(
    TOOL_NAMES.map((name) => [name, { description: `the ${name} tool`, inputSchema: jsonSchema({ type: 'object', additionalProperties: true }) }]),
  );
  const tools = Object.fromEntries(
    TOOL_NAMES.map((name) => [
      name,
      (_input: unknown, { call }: { call: AgentToolCall }) => {
        const output = toolOutput(call);
        console.log(`ran ${call.callId} ${createHash('sha256').update(canonicalJson(output)).digest('hex')}`);
        return output;
      },
    ]),
  );
  const model = aiSdkAgentModel({
    model: createOpenAI({ apiKey: 'test-key', baseURL: env('AGENT_RESPONSES_URL') })(env('AGENT_MODEL')),
    system: 'You are a coding agent.',
    tools: toolSchemas,
  });

  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: env('AGENT_TASK_QUEUE'),
    workflowBundle: { code: await readFile(env('AGENT_WORKFLOW_BUNDLE'), 'utf8') },
    activities: createAgentActivities({ sessions, model, tools }),
    // No sticky queue: a workflow task never waits for this process once it is gone.
    maxCachedWorkflows: 0,
  });
  console.log('ready');
  await worker.run();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
