/**
 * A small coding agent on the Anthropic SDK whose session session-compaction keeps compact.
 *
 *   npm run dev                                   # in another terminal: Temporal, Postgres, the worker
 *   ANTHROPIC_API_KEY=sk-ant-... node --import tsx examples/anthropic-agent.ts [session-id]
 *
 * ANTHROPIC_BASE_URL points it at another Messages API server, ANTHROPIC_MODEL picks the model.
 *
 * Each turn it reads the head as the provider takes it, sends it with thinking on and two local
 * tools, appends the reply exactly as the SDK returned it (thinking blocks and their signatures
 * included), runs the tool calls and appends their results, until Claude stops calling tools.
 * The service compacts the lineage by itself once the head reaches `compactAtTokens`; the agent
 * never rewrites its history, it reads the head again before every call. With thinking on, the
 * service compacts between turns (never inside an open tool loop), so the agent lets it finish
 * there. test/stack/anthropic-example.test.ts runs it against a strict fake of the Messages API.
 *
 * COMPACT_AT_TOKENS (default 3000) should stay above the worker's COMPACTION_TAIL_TOKENS (2000),
 * the recent turns a compaction keeps verbatim: a compaction that leaves the head at or above
 * the threshold starts the cooldown of automatic ones.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, Tool, ToolResultBlockParam, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import { SessionsClient } from '../src/client'; // in your own project: from 'session-compaction'

/** A tool the agent runs itself: what Claude is told about it, and the code (its value goes back as JSON text). */
export interface LocalTool {
  definition: Tool;
  run(input: Record<string, unknown>): unknown;
}

/** `read_file` and `list_dir` over an in-memory file system (path -> content). */
export function fileSystemTools(files: Record<string, string>): LocalTool[] {
  const input_schema = {
    type: 'object' as const,
    properties: { path: { type: 'string', description: 'A path relative to the project root' } },
    required: ['path'],
  };
  const read = ({ path }: Record<string, unknown>) => {
    if (typeof path !== 'string' || files[path] === undefined) throw new Error(`no such file: ${String(path)}`);
    return { path, content: files[path] };
  };
  const list = ({ path }: Record<string, unknown>) => {
    const dir = typeof path === 'string' && path !== '.' && path !== '' ? `${path.replace(/\/+$/, '')}/` : '';
    return { path, entries: Object.keys(files).filter((file) => file.startsWith(dir)) };
  };
  return [
    { definition: { name: 'read_file', description: 'Read a file of the project.', input_schema }, run: read },
    { definition: { name: 'list_dir', description: 'List the files under a directory of the project.', input_schema }, run: list },
  ];
}

export interface AnthropicAgentOptions {
  sessions: SessionsClient;
  anthropic: Anthropic;
  sessionId: string;
  /** The user's requests, one per turn. */
  requests: string[];
  model: string;
  tools: LocalTool[];
  /** The head size, in tokens, at which the service compacts the lineage. */
  compactAtTokens: number;
  maxTokens?: number;
  thinkingBudgetTokens?: number;
  /** Model calls allowed per turn: a tool loop that runs away stops here. */
  maxCallsPerTurn?: number;
  log?: (line: string) => void;
}

export interface TurnReport {
  request: string;
  modelCalls: number;
  toolCalls: number;
  answer: string;
  /** How the compaction the turn's appends asked for ended (waited for once the loop closed); unset when none was asked. */
  compaction?: string;
}

/** One tool call run locally, as the `tool_result` block that answers it. */
async function runTool(tools: Map<string, LocalTool>, call: ToolUseBlock): Promise<ToolResultBlockParam> {
  try {
    const tool = tools.get(call.name);
    if (!tool) throw new Error(`unknown tool: ${call.name}`);
    const value = await tool.run(call.input as Record<string, unknown>);
    return { type: 'tool_result', tool_use_id: call.id, content: JSON.stringify(value) };
  } catch (error) {
    return { type: 'tool_result', tool_use_id: call.id, content: (error as Error).message, is_error: true };
  }
}

export async function runAnthropicAgent(options: AnthropicAgentOptions): Promise<TurnReport[]> {
  const { sessions, anthropic, sessionId, model } = options;
  const log = options.log ?? (() => undefined);
  const tools = new Map(options.tools.map((tool) => [tool.definition.name, tool]));
  // One lineage in the `anthropic` dialect: messages are stored as Messages API messages, content
  // blocks and unknown fields included, and come back JSON-equal. Idempotent: a restart continues it.
  await sessions.createSession({ sessionId, dialect: 'anthropic', model, compactAtTokens: options.compactAtTokens });

  const reports: TurnReport[] = [];
  for (const request of options.requests) {
    const report: TurnReport = { request, modelCalls: 0, toolCalls: 0, answer: '' };
    reports.push(report);
    log(`user: ${request}`);
    // The service asks for a compaction by itself when an append leaves the head at or above the
    // threshold; remember the last one it asked for this turn. Appends and reads take any session
    // id of the lineage and go to its head (an append answers with the head's id).
    let asked: string | undefined;
    const append = async (messages: MessageParam[]) => {
      const outcome = await sessions.append(sessionId, messages);
      asked = outcome.compactionRequestId ?? asked;
      return outcome;
    };
    let last = await append([{ role: 'user', content: request }]);
    for (;;) {
      if (++report.modelCalls > (options.maxCallsPerTurn ?? 50)) throw new Error(`turn "${request}": still calling tools after ${report.modelCalls - 1} calls`);
      // The head as the provider takes it: after a compaction, the summary, then the kept turns.
      const { messages } = await sessions.transcript(sessionId, { for: 'provider' });
      const reply = await anthropic.messages.create({
        model,
        max_tokens: options.maxTokens ?? 4096,
        thinking: { type: 'enabled', budget_tokens: options.thinkingBudgetTokens ?? 1024 },
        tools: options.tools.map((tool) => tool.definition),
        messages: messages as unknown as MessageParam[],
      });
      // The reply as the SDK returned it, content blocks untouched: Anthropic refuses a thinking
      // block whose text or signature changed. (An empty reply is not stored: Anthropic refuses
      // empty content anywhere but in the final assistant message.)
      if (reply.content.length > 0) last = await append([{ role: 'assistant', content: reply.content }]);
      if (reply.stop_reason !== 'tool_use') {
        report.answer = reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
        break;
      }
      // Run the calls and answer all of them in one user turn, the tool_result blocks in call order.
      const calls = reply.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
      report.toolCalls += calls.length;
      for (const call of calls) log(`  tool: ${call.name}(${JSON.stringify(call.input)})`);
      last = await append([{ role: 'user', content: await Promise.all(calls.map((call) => runTool(tools, call))) }]);
    }
    log(`claude: ${report.answer}`);
    // The loop is closed: for an Anthropic lineage with thinking on, this is where compaction
    // happens. Inside an open tool loop the service holds it (answers `refused`: Anthropic needs
    // the loop's thinking unchanged). So wait for what was asked, as a user's pause would let it
    // finish, and if it was asked (and held) inside the loop, ask again now that the loop is closed.
    if (asked) {
      let result = await sessions.waitForResult(sessionId, asked);
      const heldInLoop = result.outcome === 'refused' && asked !== last.compactionRequestId;
      if (heldInLoop && last.headTokens >= options.compactAtTokens) result = await sessions.compact(last.sessionId);
      report.compaction = result.outcome;
      log(`  compaction: ${result.outcome}${result.outcome === 'compacted' ? `, head ${result.sessionId}` : result.reason ? ` (${result.reason})` : ''}`);
    }
  }
  return reports;
}

/** A made-up project for the tools to read: a small parser and a long build log. */
const PROJECT: Record<string, string> = {
  'README.md': '# calc\nA tiny expression parser: `parse("1 + 2 * 3")` gives a syntax tree, `evaluate` computes it.\n',
  'src/parser.ts':
    "export type Node = { kind: 'num'; value: number } | { kind: 'op'; op: '+' | '*'; left: Node; right: Node };\n" +
    'export function parse(text: string): Node {\n  // precedence climbing over the tokens of `text`\n  throw new Error("TODO");\n}\n',
  'src/evaluate.ts': "import type { Node } from './parser';\nexport const evaluate = (n: Node): number => n.kind === 'num' ? n.value : 0;\n",
  'logs/build.log': Array.from({ length: 120 }, (_, i) => `[build] step ${i + 1}/120: compiled src/module-${i}.ts in ${(i * 37) % 900} ms`).join('\n'),
};

async function main(): Promise<number> {
  if (!process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) {
    console.error(
      'examples/anthropic-agent.ts talks to the Anthropic Messages API: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another server).\n' +
        'It also needs session-compaction running: `npm run dev` in another terminal.',
    );
    return 2;
  }
  const sessionId = process.argv[2] ?? `claude-agent-${Date.now().toString(36)}`;
  // TEMPORAL_ADDRESS and DATABASE_URL default to what `npm run dev` starts.
  const sessions = await SessionsClient.connect();
  // The SDK reads ANTHROPIC_BASE_URL itself; a local server may need no key.
  const anthropic = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY ?? 'no-key' });
  try {
    await runAnthropicAgent({
      sessions,
      anthropic,
      sessionId,
      model: process.env.ANTHROPIC_MODEL ?? 'claude-sonnet-4-6',
      tools: fileSystemTools(PROJECT),
      compactAtTokens: Number(process.env.COMPACT_AT_TOKENS ?? 3000),
      requests: [
        'What does this project do? Look around with list_dir and read_file.',
        'Read logs/build.log: which steps took longest?',
        'How should parse() in src/parser.ts handle operator precedence? Read it first.',
        'Sum up what we learned in three bullets.',
      ],
      log: (line) => console.log(line),
    });
    console.log(`\ndone. See what was compacted: npx sessions lineage ${sessionId} && npx sessions history ${sessionId}`);
    return 0;
  } finally {
    await sessions.close();
  }
}

// Run main only when this file is the entry point (the test imports runAnthropicAgent).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
