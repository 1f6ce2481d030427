/**
 * A local OpenAI-compatible server for tests: POST /v1/chat/completions, streamed (SSE) and
 * not. Each request is answered by the next scripted behaviour (or the default), so a test
 * controls latency, content and failures while the real `openai` client does the talking.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Behaviour {
  /** An HTTP error status (with an OpenAI-style error body). */
  status?: number;
  errorCode?: string;
  /** The error body's message (default: "scripted failure <status>"). */
  errorMessage?: string;
  headers?: Record<string, string>;
  /** Summary text to answer with; by default a short summary echoing the request size. */
  text?: string;
  /** Wait before answering (or before the first chunk). */
  delayMs?: number;
  /** Split the streamed text into this many chunks... */
  chunks?: number;
  /** ...sent this far apart. */
  chunkDelayMs?: number;
  /** Send this many chunks, then go silent (keep the connection open) until the client gives up. */
  stallAfterChunks?: number;
  /** Destroy the socket without answering. */
  reset?: boolean;
}

export interface RecordedRequest {
  body: { model: string; messages: Array<{ role: string; content: string }>; stream?: boolean };
  at: number;
}

export interface FakeLlm {
  baseURL: string;
  requests: RecordedRequest[];
  /** Queue behaviours for the next requests, in order. */
  script(...behaviours: Behaviour[]): void;
  setDefault(behaviour: Behaviour): void;
  /** Resolves when the n-th request (1-based) has arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  reset(): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFakeLlm(): Promise<FakeLlm> {
  const requests: RecordedRequest[] = [];
  let queue: Behaviour[] = [];
  let fallback: Behaviour = {};
  const sockets = new Set<import('node:net').Socket>();

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest['body'];
    requests.push({ body, at: Date.now() });
    const b = queue.shift() ?? fallback;
    if (b.delayMs) await sleep(b.delayMs);
    if (b.reset) {
      req.socket.destroy();
      return;
    }
    if (b.status && b.status >= 400) {
      res.writeHead(b.status, { 'content-type': 'application/json', ...b.headers });
      res.end(JSON.stringify({ error: { message: b.errorMessage ?? `scripted failure ${b.status}`, type: 'test', code: b.errorCode ?? null } }));
      return;
    }
    const text = b.text ?? `Goal: continue the work.\nCompleted actions: summarised ${body.messages.at(-1)?.content.length ?? 0} characters.`;
    const model = body.model;
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'cmpl-test',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const n = Math.max(1, b.chunks ?? 1);
    const size = Math.ceil(text.length / n);
    const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
    for (let i = 0; i < n; i++) {
      if (b.stallAfterChunks !== undefined && i >= b.stallAfterChunks) {
        await new Promise<void>((resolve) => res.once('close', resolve));
        return;
      }
      if (i > 0 && b.chunkDelayMs) await sleep(b.chunkDelayMs);
      if (res.destroyed) return;
      send({ id: 'cmpl-test', object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta: { content: text.slice(i * size, (i + 1) * size) }, finish_reason: null }] });
    }
    send({ id: 'cmpl-test', object: 'chat.completion.chunk', created: 0, model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    send({ id: 'cmpl-test', object: 'chat.completion.chunk', created: 0, model, choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } });
    res.end('data: [DONE]\n\n');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...behaviours) => void queue.push(...behaviours),
    setDefault: (behaviour) => void (fallback = behaviour),
    async waitForRequests(n, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < n) {
        if (Date.now() > deadline) throw new Error(`fake LLM saw ${requests.length} request(s), expected ${n}`);
        await sleep(20);
      }
    },
    reset() {
      requests.length = 0;
      queue = [];
      fallback = {};
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
