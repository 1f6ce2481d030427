/**
 * What the strict fake providers of the other dialects share (strict-responses.ts,
 * strict-anthropic.ts, strict-gemini.ts): the local HTTP server, the record of every request
 * and every rejection, the shape of a refusal, and the seeded per-model scripts of the
 * scripted agent. The chat-completions fake (strict-provider.ts) predates this file and keeps
 * its own wire helpers (openai-server.ts); the seeded PRNG and the filler text are its.
 *
 * The interface every one of these fakes offers a test:
 *
 *   const provider = await startStrictX({ seed: 7 });   // 127.0.0.1, a free port
 *   new Sdk({ baseURL: provider.url })                  // what the SDK's base-URL option takes
 *   provider.requests / provider.rejections             // every request; every refusal, with its rule
 *   provider.agentReplies                               // what the agent script answered, in order
 *   await provider.close();
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fillerText, seededRandom } from './strict-provider';

/** The instructions of the service's summariser begin with this text (src/compaction/summary-prompt.ts). */
export const SUMMARISER_PREFIX = 'You compact the transcript';

/** A refusal as the provider answers it, with the rule of provider-rules.md that fired and why. */
export interface StrictRefusal<Body> {
  status: number;
  body: Body;
  /** The rule id of /work/shared/reference/provider-rules.md (`RS-4`, `AN-2`, `GM-3`), or `shape` for a malformed request. */
  rule: string;
  /** Why, in a sentence naming the offending item. */
  reason: string;
}

export type Caller = 'agent' | 'summariser' | 'other';

export interface StrictRequestRecord<Body> {
  caller: Caller;
  model: string;
  /** The request path (no query). */
  path: string;
  stream: boolean;
  /** Input items, messages or contents in the request (0 when not an array). */
  items: number;
  status: number;
  /** Set on a refusal. */
  rule?: string;
  reason?: string;
  error?: Body;
  /** The request body as received: kept for the summariser's requests and for refusals. */
  body?: unknown;
  at: number;
}

export interface StrictFakeProvider<Reply, Body> {
  /** What the SDK's base-URL option takes (it differs per SDK: see each fake's header). */
  url: string;
  /** Every request, in arrival order. */
  requests: StrictRequestRecord<Body>[];
  /** Every refused request, with the provider's error, the rule and the reason. */
  rejections: StrictRequestRecord<Body>[];
  /** The replies the agent script gave, in order. */
  agentReplies: Reply[];
  close(): Promise<void>;
}

export interface StrictFakeOptions {
  /** Seed of the agent script: the same seed gives the same replies in the same order. */
  seed?: number;
  /** The model the scripted agent asks for; any model starting with it is an agent with its own script. */
  agentModel?: string;
  /** A model that marks the summariser's requests (besides its instructions). */
  summariserModel?: string;
  /** Chance that a tool-call reply carries one call with large arguments (5-20 KB). */
  largeArgumentsChance?: number;
  /** The scripted agent only answers (an agent with no tools): every reply is a final message. */
  answersOnly?: boolean;
}

export interface JsonRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The parsed body, or undefined when it is not JSON. */
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

export interface LocalServer {
  origin: string;
  close(): Promise<void>;
}

/** Serves every request on 127.0.0.1 (a free port) with `handle`, once its body has fully arrived. */
export async function serveLocal(handle: (req: JsonRequest, res: http.ServerResponse) => Promise<void>): Promise<LocalServer> {
  const sockets = new Set<Socket>();
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    await handle({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, body, headers: req.headers }, res);
  };
  // Voided on purpose: a bug in a fake surfaces as an unhandled rejection, which fails the run.
  const server = http.createServer((req, res) => void serve(req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Sends server-sent events (named when `event` is set) and ends the response. */
export function sendEvents(res: http.ServerResponse, events: { event?: string; data: unknown }[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const e of events) res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
  res.end();
}

/** A record of one request, refused or not. */
export function recordOf<Body>(
  fields: { caller: Caller; model: string; path: string; stream: boolean; items: number; body: unknown },
  refusal: StrictRefusal<Body> | null,
): StrictRequestRecord<Body> {
  const { body, ...rest } = fields;
  return {
    ...rest,
    status: refusal ? refusal.status : 200,
    at: Date.now(),
    ...(refusal ? { rule: refusal.rule, reason: refusal.reason, error: refusal.body, body } : fields.caller === 'summariser' ? { body } : {}),
  };
}

export interface AgentScript {
  rand: () => number;
  /** Counter of generated ids (calls, items, blocks). */
  next(): number;
  /** Counter of replies. */
  reply(): number;
  /** Tag in generated ids: the seed, plus the model's hash for a second agent model. */
  tag: string;
}

/**
 * One script per agent model (`agent-model`, `agent-model-2`, ...), each seeded from the seed
 * and its name, so agents running at once each get a reproducible script.
 */
export function agentScripts(seed: number, agentModel: string): (model: string) => AgentScript {
  const scripts = new Map<string, AgentScript>();
  return (model) => {
    let script = scripts.get(model);
    if (!script) {
      let h = seed;
      for (const ch of model) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
      let ids = 0;
      let replies = 0;
      script = { rand: seededRandom(h), next: () => ++ids, reply: () => ++replies, tag: `${seed}${model === agentModel ? '' : `_${h.toString(36)}`}` };
      scripts.set(model, script);
    }
    return script;
  };
}

/** An opaque, deterministic token (what a provider's signature or encrypted blob looks like). */
export function opaqueToken(rand: () => number, prefix: string, bytes: number): string {
  const raw = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) raw[i] = Math.floor(rand() * 256);
  return `${prefix}${raw.toString('base64')}`;
}

export { canonicalJson } from '../../src/compaction/json';

const TOOL_NAMES = ['run_tests', 'read_file', 'grep', 'edit_file', 'list_dir'] as const;

/** What the agent script does next: call tools (one or several, sometimes with large arguments) or answer. */
export type ScriptStep =
  { kind: 'answer'; replyNo: number; text: string } | { kind: 'calls'; replyNo: number; calls: { n: number; name: string; args: Record<string, unknown> }[] };

/**
 * The next step of a script: after a fresh user request it always calls tools; after tool
 * results it answers one time in five and otherwise calls more tools (parallel ones 35% of
 * the time).
 */
export function nextStep(script: AgentScript, afterUserRequest: boolean, largeArgumentsChance: number): ScriptStep {
  const { rand } = script;
  const replyNo = script.reply();
  if (!afterUserRequest && rand() < 0.2) return { kind: 'answer', replyNo, text: `Answer ${replyNo}: the step is done and the tests pass.` };
  const count = rand() < 0.35 ? 2 + Math.floor(rand() * 2) : 1;
  const large = rand() < largeArgumentsChance ? Math.floor(rand() * count) : -1;
  const calls: { n: number; name: string; args: Record<string, unknown> }[] = [];
  for (let k = 0; k < count; k++) {
    const n = script.next();
    if (k === large) {
      calls.push({ n, name: 'edit_file', args: { path: `src/file-${n}.ts`, content: fillerText(rand, 5_000 + Math.floor(rand() * 15_000), `edit-${n}`) } });
    } else {
      calls.push({ n, name: TOOL_NAMES[Math.floor(rand() * TOOL_NAMES.length)], args: { target: `src/module-${n}.ts` } });
    }
  }
  return { kind: 'calls', replyNo, calls };
}
