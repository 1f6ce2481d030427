/**
 * The peers section of `npm run bench`: an agent's per-turn work against its session store,
 * ours beside the Postgres-backed stores of the agent frameworks, each driven through its own
 * code, on the bench's Postgres, in the same run. A turn: append the user's message, read the
 * conversation back (the model's input), append the model's output and the tool result (a tool
 * call, its result and an answer: three messages). Every driver holds a pool of 20 connections.
 *
 * - ours: SessionsClient.append / transcript / append (openai-chat messages, validated, counted).
 * - LangGraph's PostgresSaver (@langchain/langgraph-checkpoint-postgres): what a graph with a
 *   messages channel writes per step, through the saver's own put / getTuple: a checkpoint
 *   after the user's message, the head read back, a checkpoint after the model's output. The
 *   messages channel is stored as one blob per version (the saver's design), so it grows.
 * - the OpenAI Agents SDK's SQLAlchemySession (Python, asyncpg): bench/peers/openai_agents_sqlalchemy.py,
 *   in a process of its own (its timing is its own, measured inside it).
 * - the Claude Agent SDK's reference Postgres SessionStore (examples/session-stores/postgres of
 *   github.com/anthropics/claude-agent-sdk-typescript): not vendored (that repository's
 *   LICENSE.md reserves all rights); the bench imports the file named by
 *   BENCH_CLAUDE_SESSION_STORE (a checkout's src/PostgresSessionStore.ts) and reports the peer
 *   as not driven without it.
 *
 * Benchmark-only.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { Pool } from 'pg';
import type { SessionsClient } from '../src/client';
import { PROJECT_ROOT } from '../src/config';

/** One conversation's turn n, as each store's users write it. */
const openaiTurn = (n: number) => {
  const id = `call_${n}`;
  return {
    user: [{ role: 'user', content: `Turn ${n}: run the tests and report what fails.` }],
    output: [
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'run_tests', arguments: JSON.stringify({ turn: n }) } }] },
      { role: 'tool', tool_call_id: id, content: JSON.stringify({ passed: 41, failed: 1, turn: n }) },
      { role: 'assistant', content: `Turn ${n}: one test fails; the fix is in the parser.` },
    ],
  };
};

export interface PeerLoad {
  concurrency: number;
  conversations: number;
  turns: number;
}
export interface PeerRun {
  latencies: number[];
  wallMs: number;
}
interface Peer {
  name: string;
  /** Runs `load` on conversations named from `prefix`; undefined with a reason when it cannot be driven. */
  run(load: PeerLoad, prefix: string): Promise<PeerRun>;
  close(): Promise<void>;
}

async function drive(load: PeerLoad, prefix: string, open: (id: string) => Promise<(n: number) => Promise<void>>): Promise<PeerRun> {
  const ids = Array.from({ length: load.conversations }, (_, i) => `${prefix}-${i}`);
  const turners = await Promise.all(ids.map(open));
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(load.concurrency, ids.length) }, async () => {
      while (next < turners.length) {
        const turn = turners[next++];
        for (let n = 0; n < load.turns; n++) {
          const t0 = performance.now();
          await turn(n);
          latencies.push(performance.now() - t0);
        }
      }
    }),
  );
  return { latencies, wallMs: performance.now() - start };
}

export function oursPeer(sessions: SessionsClient): Peer {
  return {
    name: 'ours',
    run: (load, prefix) =>
      drive(load, prefix, async (id) => {
        await sessions.createSession({ sessionId: id });
        return async (n) => {
          const turn = openaiTurn(n);
          await sessions.append(id, turn.user);
          const head = await sessions.transcript(id);
          if (head.messages.length !== 4 * n + 1) throw new Error(`ours: ${head.messages.length} messages at turn ${n}`);
          await sessions.append(id, turn.output);
        };
      }),
    close: async () => undefined,
  };
}

export async function langGraphPeer(databaseUrl: string): Promise<Peer> {
  const pool = new Pool({ connectionString: databaseUrl, max: 20 });
  const saver = new PostgresSaver(pool);
  await saver.setup();
  let counter = 0;
  /** Checkpoint ids sort by time, as LangGraph's uuid6 ids do (getTuple reads the greatest). */
  const checkpointId = () => `${Date.now().toString(16).padStart(12, '0')}-${(counter++).toString(16).padStart(12, '0')}`;
  return {
    name: 'LangGraph PostgresSaver',
    run: (load, prefix) =>
      drive(load, prefix, async (threadId) => {
        let config = { configurable: { thread_id: threadId, checkpoint_ns: '' } } as Parameters<PostgresSaver['put']>[0];
        let messages: unknown[] = [];
        let version = 0;
        let step = -1;
        const put = async (added: unknown[]) => {
          messages = [...messages, ...added];
          version += 1;
          step += 1;
          const checkpoint = {
            v: 4,
            id: checkpointId(),
            ts: new Date().toISOString(),
            channel_values: { messages },
            channel_versions: { messages: version },
            versions_seen: {},
          };
          config = await saver.put(config, checkpoint as never, { source: 'loop', step, parents: {} } as never, { messages: version });
        };
        return async (n) => {
          const turn = openaiTurn(n);
          await put(turn.user);
          const head = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: '' } });
          const read = (head?.checkpoint.channel_values as { messages?: unknown[] } | undefined)?.messages ?? [];
          if (read.length !== 4 * n + 1) throw new Error(`LangGraph: ${read.length} messages at turn ${n}`);
          messages = read;
          await put(turn.output);
        };
      }),
    close: () => pool.end(),
  };
}

interface ClaudeStore {
  ensureSchema(): Promise<void>;
  append(key: { projectKey: string; sessionId: string }, entries: unknown[]): Promise<void>;
  load(key: { projectKey: string; sessionId: string }): Promise<unknown[] | null>;
}

/** The Claude Agent SDK's reference store, from BENCH_CLAUDE_SESSION_STORE; a reason string when it cannot be loaded. */
export async function claudePeer(databaseUrl: string, file = process.env.BENCH_CLAUDE_SESSION_STORE): Promise<Peer | string> {
  if (!file) return 'BENCH_CLAUDE_SESSION_STORE is not set (the path of PostgresSessionStore.ts in a checkout of claude-agent-sdk-typescript)';
  const module = (await import(pathToFileURL(path.resolve(file)).href)) as { PostgresSessionStore: new (o: { pool: Pool }) => ClaudeStore };
  const pool = new Pool({ connectionString: databaseUrl, max: 20 });
  const store = new module.PostgresSessionStore({ pool });
  await store.ensureSchema();
  const entry = (type: string, message: unknown, n: number, i: number) => ({
    type,
    uuid: `${n}-${i}-${Math.random().toString(16).slice(2)}`,
    timestamp: new Date().toISOString(),
    message,
  });
  return {
    name: 'Claude Agent SDK PostgresSessionStore',
    run: (load, prefix) =>
      drive(load, prefix, async (sessionId) => {
        const key = { projectKey: 'bench', sessionId };
        return async (n) => {
          const turn = openaiTurn(n);
          await store.append(key, [entry('user', turn.user[0], n, 0)]);
          const read = (await store.load(key)) ?? [];
          if (read.length !== 4 * n + 1) throw new Error(`Claude store: ${read.length} entries at turn ${n}`);
          await store.append(
            key,
            turn.output.map((m, i) => entry(m.role === 'tool' ? 'user' : 'assistant', m, n, i + 1)),
          );
        };
      }),
    close: () => pool.end(),
  };
}

/** The OpenAI Agents SDK's SQLAlchemySession, in a Python process per load; a reason string when Python cannot run it. */
export function openaiAgentsPeer(databaseUrl: string, python = path.join(PROJECT_ROOT, '.venv/bin/python')): Peer {
  const url = databaseUrl.replace(/^postgres(ql)?:\/\//, 'postgresql+asyncpg://');
  return {
    name: 'OpenAI Agents SDK SQLAlchemySession (Python)',
    run: (load, prefix) =>
      new Promise((resolve, reject) => {
        const args = JSON.stringify({ url, ...load, prefix, pool: 20 });
        const child = spawn(python, [path.join(PROJECT_ROOT, 'bench/peers/openai_agents_sqlalchemy.py'), args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString()));
        child.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
        child.on('error', reject);
        child.on('exit', (code) => {
          const line = out.trim().split('\n').at(-1);
          if (code === 0 && line) resolve(JSON.parse(line) as PeerRun);
          else reject(new Error(`the Python driver exited ${code}: ${err}`));
        });
      }),
    close: async () => undefined,
  };
}
