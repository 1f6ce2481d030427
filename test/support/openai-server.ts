/**
 * The wire side shared by the local OpenAI-compatible servers of the tests (fake-llm.ts and
 * strict-provider.ts): an HTTP server on a free local port that takes POST
 * /v1/chat/completions (anything else: 404), and the two answer shapes of the chat API, a
 * whole completion and a server-sent-event stream of chunks. What to answer is each server's
 * own business.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** The token usage a local answer reports (the chat API's `usage`). */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}

/** The usage an answer reports when its server counts nothing. */
const USAGE: Usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

export interface ChatCompletionsServer {
  baseURL: string;
  /** Closes the server, cutting the connections still open (a stalled stream among them). */
  close(): Promise<void>;
}

/**
 * Serves POST …/chat/completions on 127.0.0.1 (a free port) with `handle`, which gets the
 * request body as text once it has fully arrived.
 */
export async function serveChatCompletions(
  handle: (body: string, req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>,
): Promise<ChatCompletionsServer> {
  const sockets = new Set<Socket>();
  const serve = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    await handle(Buffer.concat(chunks).toString('utf8'), req, res);
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
    baseURL: `http://127.0.0.1:${port}/v1`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Answers with one whole (not streamed) chat completion. */
export function sendCompletion(
  res: http.ServerResponse,
  answer: { id: string; model: string; message: Record<string, unknown>; finishReason: string; usage?: Usage },
): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: answer.id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: answer.model,
      choices: [{ index: 0, message: answer.message, finish_reason: answer.finishReason }],
      usage: answer.usage ?? USAGE,
    }),
  );
}

export interface ChunkStream {
  /** Sends one chunk carrying `delta` (and, on the last, its finish reason). */
  delta(delta: unknown, finishReason?: string | null): void;
  /** Sends the usage chunk and `[DONE]`, and ends the response. */
  end(): void;
}

/** Starts a server-sent-event answer: chat.completion.chunk events, as the chat API streams them. */
export function startChunkStream(res: http.ServerResponse, id: string, model: string, usage: Usage = USAGE): ChunkStream {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = (rest: { choices: unknown[]; usage?: Usage }) =>
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 0, model, ...rest })}\n\n`);
  return {
    delta: (delta, finishReason = null) => send({ choices: [{ index: 0, delta, finish_reason: finishReason }] }),
    end() {
      send({ choices: [], usage });
      res.end('data: [DONE]\n\n');
    },
  };
}
