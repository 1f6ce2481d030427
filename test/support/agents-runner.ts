/**
 * An OpenAI Agents SDK agent for tests: the SDK's own `Runner` and `OpenAIResponsesModel`,
 * pointed at the strict Responses fake (test/support/strict-responses.ts), whose seeded
 * script answers with reasoning items, function calls (parallel ones, some with 5-20 KB
 * arguments) and final messages. The tools answer with JSON text, as real tools do. Every
 * request the model is asked for is recorded in the SDK's own items (`inputs`), the ledger
 * the tests check the heads against.
 *
 * Run as a script, it is the second process of a two-process test:
 *   node --import tsx test/support/agents-runner.ts <sessionId> <responsesUrl> <agentModel> <turns>
 * with the stack's environment; it prints one JSON line: {"turns": n, "requests": n}.
 */
import { Agent, type AgentInputItem, type Model, type ModelRequest, Runner, type Session, tool } from '@openai/agents-core';
import { OpenAIResponsesModel } from '@openai/agents-openai';
import OpenAI from 'openai';
import { CompactingSession } from '../../src/client/agents-session';
import { SessionsClient } from '../../src/client/sessions-client';
import { loadConfig } from '../../src/config';

const TOOL_NAMES = ['run_tests', 'read_file', 'grep', 'edit_file', 'list_dir'] as const;

/** Records every request's input (the SDK's items, before its converter) and passes it on. */
class RecordingModel implements Model {
  readonly inputs: AgentInputItem[][] = [];
  constructor(private readonly inner: Model) {}
  private record(request: ModelRequest) {
    this.inputs.push(structuredClone(typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input));
  }
  getResponse(request: ModelRequest) {
    this.record(request);
    return this.inner.getResponse(request);
  }
  getStreamedResponse(request: ModelRequest) {
    this.record(request);
    return this.inner.getStreamedResponse(request);
  }
}

export interface ScriptedAgent {
  agent: Agent;
  runner: Runner;
  model: RecordingModel;
  /** Every tool call the tools answered, by call order. */
  toolCalls: number;
}

export function scriptedAgent(responsesUrl: string, agentModel: string): ScriptedAgent {
  const openai = new OpenAI({ apiKey: 'test-key', baseURL: responsesUrl, maxRetries: 0 });
  // The SDK's own Responses model (its openai client is a newer major; the Responses calls it makes are the same).
  const model = new RecordingModel(new OpenAIResponsesModel(openai as never, agentModel));
  const state: ScriptedAgent = { agent: undefined as never, runner: new Runner({ tracingDisabled: true }), model, toolCalls: 0 };
  const tools = TOOL_NAMES.map((name) =>
    tool({
      name,
      description: `${name} on the repository`,
      parameters: { type: 'object', properties: {}, required: [], additionalProperties: true },
      strict: false,
      execute: (input) => {
        state.toolCalls++;
        const n = state.toolCalls;
        // JSON text, sometimes a bare number or an error line: what tools return.
        if (n % 7 === 0) return Promise.resolve('42');
        if (n % 11 === 0) return Promise.resolve('Error: ENOENT: no such file or directory');
        return Promise.resolve(JSON.stringify({ ok: true, tool: name, input, rows: [{ id: n, name: 'Ада 🙂' }], more: false }));
      },
    }),
  );
  state.agent = new Agent({ name: 'coder', instructions: 'You are a careful coding agent.', model, tools });
  return state;
}

/** Runs `turns` user requests on the session (each a run of several model calls), streamed every third turn. */
export async function runTurns(agent: ScriptedAgent, session: Session, turns: number, tag: string): Promise<string[]> {
  const requests: string[] = [];
  for (let t = 0; t < turns; t++) {
    const request = `${tag} request ${t}: fix the failing test in src/module-${t}.ts 🙂`;
    requests.push(request);
    if (t % 3 === 2) {
      const streamed = await agent.runner.run(agent.agent, request, { session, maxTurns: 60, stream: true });
      for await (const _event of streamed) {
        // drained: the run completes when its events are read
      }
      await streamed.completed;
    } else {
      await agent.runner.run(agent.agent, request, { session, maxTurns: 60 });
    }
  }
  return requests;
}

async function main() {
  const [sessionId, responsesUrl, agentModel, turns] = process.argv.slice(2);
  const client = await SessionsClient.connect({ config: loadConfig(process.env) });
  try {
    const session = await CompactingSession.open(client, sessionId, { compactAtTokens: Number(process.env.AGENTS_COMPACT_AT) });
    const agent = scriptedAgent(responsesUrl, agentModel);
    await runTurns(agent, session, Number(turns), agentModel);
    console.log(JSON.stringify({ turns: Number(turns), requests: agent.model.inputs.length }));
  } finally {
    await client.close();
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
