/**
 * A coding agent on the AI SDK (`ai` 7) whose conversation session-compaction keeps compact.
 *
 *   npm run dev                                   # in another terminal: Temporal, Postgres, the worker
 *   OPENAI_API_KEY=sk-... node --import tsx examples/ai-sdk-agent.ts [session-id]
 *   AI_SDK_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-... node --import tsx examples/ai-sdk-agent.ts [session-id]
 *
 * OPENAI_BASE_URL / ANTHROPIC_BASE_URL point it at another server, AI_SDK_MODEL picks the model,
 * COMPACT_AT_TOKENS the lineage's threshold (default 3000), AGENT_REQUESTS (a JSON array of
 * texts) the user's requests.
 *
 * Each turn is one `generateText` tool loop of several steps (parallel tool calls, JSON tool
 * outputs) over `lineageChat` (session-compaction/ai-sdk): the model is handed the lineage's
 * head, the turn's steps are appended as they finish (`prepareStep`) and at the end
 * (`finish`), and when the service compacts while the loop runs, the next step is sent the
 * compacted head. Run it twice with the same session id, one after the other or at once: the
 * two processes continue one conversation, and the lineage never forks.
 * test/stack/ai-sdk-agent.test.ts runs it against strict fakes of the OpenAI Responses and
 * Anthropic Messages APIs through the real `@ai-sdk/openai` and `@ai-sdk/anthropic`.
 *
 * The last line it prints is its report as JSON (`{"sessionId", "turns": [...]}`).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, jsonSchema, type LanguageModel, tool, type ToolSet } from 'ai';
import { lineageChat } from '../src/ai-sdk'; // in your own project: from 'session-compaction/ai-sdk'
import { SessionsClient } from '../src/client'; // in your own project: from 'session-compaction'

/** What a tool is given: a file or directory of the project. */
const targetSchema = jsonSchema<{ target: string }>({
  type: 'object',
  properties: { target: { type: 'string', description: 'A file or directory of the project, e.g. src/module-3.ts' } },
  required: ['target'],
});

/** The agent's tools over an in-memory project (path -> content); each answers a JSON object. */
export function projectTools(files: Record<string, string>) {
  const under = (target: string) => Object.keys(files).filter((file) => file === target || file.startsWith(`${target.replace(/\/+$/, '')}/`));
  return {
    read_file: tool({
      description: 'Read a file of the project.',
      inputSchema: targetSchema,
      execute: async ({ target }) => (files[target] === undefined ? { target, error: 'no such file' } : { target, content: files[target] }),
    }),
    list_dir: tool({
      description: 'List the files under a directory of the project.',
      inputSchema: targetSchema,
      execute: async ({ target }) => ({ target, entries: under(target.includes('.') ? path.dirname(target) : target) }),
    }),
    grep: tool({
      description: 'Find the lines of a file that export something.',
      inputSchema: targetSchema,
      execute: async ({ target }) => ({ target, matches: (files[target] ?? '').split('\n').filter((line) => line.startsWith('export')) }),
    }),
    run_tests: tool({
      description: 'Run the tests of a file.',
      inputSchema: targetSchema,
      execute: async ({ target }) => ({ target, passed: files[target] === undefined ? 0 : 3, failed: 0, durationMs: 120 }),
    }),
    edit_file: tool({
      description: 'Mark a file as edited.',
      inputSchema: targetSchema,
      execute: async ({ target }) => ({ target, edited: files[target] !== undefined }),
    }),
  } satisfies ToolSet;
}

export interface AiSdkAgentOptions {
  sessions: SessionsClient;
  model: LanguageModel;
  sessionId: string;
  /** The user's requests, one per turn. */
  requests: string[];
  tools: ToolSet;
  /** The lineage's threshold (tokens) when this run creates it. */
  compactAt?: number;
  /** Most steps (model calls) a turn takes. */
  maxSteps?: number;
  log?: (line: string) => void;
}

export interface TurnReport {
  request: string;
  answer: string;
  /** The model calls of the turn. */
  steps: number;
  /** Steps that were sent the lineage's head because it changed in the loop (a compaction, another process). */
  headChanges: number;
}

/** Runs one `generateText` tool loop per request over the lineage `sessionId`. */
export async function runAiSdkAgent(options: AiSdkAgentOptions): Promise<TurnReport[]> {
  const { sessions, model, sessionId, tools, log = () => {} } = options;
  const chat = lineageChat({ sessions, sessionId, compactAt: options.compactAt });
  const reports: TurnReport[] = [];
  for (const request of options.requests) {
    const turn = await chat.turn(request);
    const result = await generateText({
      model,
      instructions: 'You are a careful coding assistant. Use the tools to look at the project before answering.',
      tools,
      messages: turn.messages,
      prepareStep: turn.prepareStep,
      stopWhen: isStepCount(options.maxSteps ?? 8),
      maxOutputTokens: 4096,
    });
    await turn.finish(result);
    reports.push({ request, answer: result.text, steps: result.steps.length, headChanges: turn.headChanges });
    log(`> ${request}\n${result.text} (${result.steps.length} steps${turn.headChanges ? `, sent the compacted head ${turn.headChanges}x` : ''})`);
  }
  return reports;
}

/** A small project to look at. */
const PROJECT: Record<string, string> = Object.fromEntries(
  Array.from({ length: 12 }, (_, n) => [
    `src/module-${n}.ts`,
    `// module ${n}\n${Array.from({ length: 10 }, (_, k) => `export const m${n}_${k} = ${n * k};`).join('\n')}\n`,
  ]),
);

function modelFromEnvironment(): LanguageModel | undefined {
  if (process.env.AI_SDK_PROVIDER === 'anthropic') {
    if (!process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) return undefined;
    return createAnthropic({ apiKey: process.env.ANTHROPIC_API_KEY ?? 'no-key' })(process.env.AI_SDK_MODEL ?? 'claude-sonnet-4-6');
  }
  if (!process.env.OPENAI_API_KEY && !process.env.OPENAI_BASE_URL) return undefined;
  return createOpenAI({ apiKey: process.env.OPENAI_API_KEY ?? 'no-key' })(process.env.AI_SDK_MODEL ?? 'gpt-5-mini');
}

async function main(): Promise<number> {
  const model = modelFromEnvironment();
  if (!model) {
    console.error(
      'examples/ai-sdk-agent.ts talks to OpenAI (OPENAI_API_KEY or OPENAI_BASE_URL) or, with AI_SDK_PROVIDER=anthropic, to Anthropic (ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL).\n' +
        'It also needs session-compaction running: `npm run dev` in another terminal.',
    );
    return 2;
  }
  const sessionId = process.argv[2] ?? `ai-sdk-agent-${Date.now().toString(36)}`;
  const requests = process.env.AGENT_REQUESTS
    ? (JSON.parse(process.env.AGENT_REQUESTS) as string[])
    : ['What does module 3 export? Look at it.', 'Run the tests of modules 1 and 2.', 'Sum up what we learned in three bullets.'];
  // TEMPORAL_ADDRESS and DATABASE_URL default to what `npm run dev` starts.
  const sessions = await SessionsClient.connect();
  try {
    const turns = await runAiSdkAgent({
      sessions,
      model,
      sessionId,
      requests,
      tools: projectTools(PROJECT),
      compactAt: Number(process.env.COMPACT_AT_TOKENS ?? 3000),
      log: (line) => console.log(line),
    });
    console.log(JSON.stringify({ sessionId, turns }));
    return 0;
  } finally {
    await sessions.close();
  }
}

// Run main only when this file is the entry point (the test imports runAiSdkAgent).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
