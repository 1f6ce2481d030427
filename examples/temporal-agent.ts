/**
 * A coding agent that runs on Temporal with its conversation in a lineage
 * (docs/agents-on-temporal.md): the workflow (examples/temporal-agent-workflows.ts) holds the
 * lineage id only; the activities (createAgentActivities) read the compacted head, call the
 * model through the AI SDK (`generateText`, one step), append what it returned and what the
 * tools produced, keyed, and hand the workflow only the tool calls to run or the final text.
 * This script starts a worker in-process, appends the user's request, runs the workflow and
 * prints its answer and the size of its history.
 *
 *   OPENAI_API_KEY=sk-... node --import tsx examples/temporal-agent.ts [session-id] ["request"]
 *
 * Reads TEMPORAL_ADDRESS / DATABASE_URL like the service (`npm run dev` starts both),
 * OPENAI_BASE_URL, AI_SDK_MODEL (default gpt-5-mini) and COMPACT_AT_TOKENS (default 20000).
 */
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { createOpenAI } from '@ai-sdk/openai';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { jsonSchema, type ToolSet } from 'ai';
import { SessionsClient } from '../src/client'; // in your own project: from 'session-compaction'
import { loadConfig } from '../src/config';
import { aiSdkAgentModel, createAgentActivities } from '../src/temporal'; // in your own project: from 'session-compaction/temporal'

/** A made-up project the tools read. */
const FILES: Record<string, string> = {
  'src/sum.ts': 'export const sum = (a: number, b: number) => a - b;\n',
  'test/sum.test.ts': "import { sum } from '../src/sum';\ntest('adds', () => expect(sum(2, 3)).toBe(5));\n",
};

/** The tools' schemas, sent to the model (the workflow runs them, each an activity). */
const toolSchemas: ToolSet = {
  list_dir: { description: 'Lists the files of the project.', inputSchema: jsonSchema({ type: 'object', properties: {} }) },
  read_file: {
    description: 'Reads a file of the project.',
    inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
  },
};

/** What the tools do, in the worker. */
const tools = {
  list_dir: () => Object.keys(FILES),
  read_file: (input: unknown) => FILES[(input as { path?: string }).path ?? ''] ?? 'no such file',
};

async function main(): Promise<void> {
  if (!process.env.OPENAI_API_KEY && !process.env.OPENAI_BASE_URL) {
    console.error('set OPENAI_API_KEY (or OPENAI_BASE_URL for another Responses API server)');
    process.exitCode = 2;
    return;
  }
  const config = loadConfig();
  const lineageId = process.argv[2] ?? `temporal-agent-${randomUUID().slice(0, 8)}`;
  const request = process.argv[3] ?? 'The test of src/sum.ts fails. Find out why and tell me the fix.';
  const sessions = await SessionsClient.connect({ config });
  const model = aiSdkAgentModel({
    model: createOpenAI({ apiKey: process.env.OPENAI_API_KEY ?? 'no-key' })(process.env.AI_SDK_MODEL ?? 'gpt-5-mini'),
    system: 'You are a coding agent. Use the tools to look at the project, then answer.',
    tools: toolSchemas,
  });
  const taskQueue = `temporal-agent-${randomUUID().slice(0, 8)}`;
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    workflowsPath: path.join(__dirname, 'temporal-agent-workflows.ts'),
    activities: createAgentActivities({ sessions, model, tools }),
  });
  const client = new Client({ connection: await Connection.connect({ address: config.temporal.address }), namespace: config.temporal.namespace });
  try {
    await worker.runUntil(async () => {
      // The conversation lives in the lineage: create it, append the request, start the workflow with its id.
      await sessions.createSession({ sessionId: lineageId, dialect: 'ai-sdk', compactAt: Number(process.env.COMPACT_AT_TOKENS ?? 20_000) });
      await sessions.append(lineageId, [model.userMessage(request)], {
        appendKey: `request:${createHash('sha256').update(request).digest('hex').slice(0, 32)}`,
      });
      const handle = await client.workflow.start('codingAgent', { taskQueue, workflowId: `agent-${lineageId}-${randomUUID().slice(0, 8)}`, args: [lineageId] });
      const answer = await handle.result();
      const history = await handle.fetchHistory();
      console.log(answer);
      console.log(
        JSON.stringify({ lineageId, historyEvents: history.events?.length ?? 0, headMessages: (await sessions.transcript(lineageId)).messages.length }),
      );
    });
  } finally {
    await client.connection.close();
    await connection.close();
    await sessions.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
