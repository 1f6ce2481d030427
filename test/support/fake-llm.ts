/**
 * A local OpenAI-compatible server for tests: POST /v1/chat/completions, streamed (SSE) and
 * not. Each request is answered by the next scripted behaviour (or the default), so a test
 * controls latency, content and failures while the real `openai` client does the talking.
 *
 * It reports usage as a provider with a prompt cache does: prompt tokens counted per message
 * (src/compaction/tokens.ts's estimate), and as `cached_tokens` those of the longest run of
 * leading messages, whole, that an earlier request to the same model began with (OpenAI
 * caches by prefix; this counts whole messages, with no minimum length, and compares them as
 * JSON values, key order aside, as a provider renders a message the same whatever its key order).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../src/compaction/json';
import { estimateTextTokens } from '../../src/compaction/tokens';
import { sendCompletion, serveChatCompletions, startChunkStream, type Usage } from './openai-server';

interface Behaviour {
  /** An HTTP error status (with an OpenAI-style error body). */
  status?: number;
  errorCode?: string;
  /** The error body's message (default: "scripted failure <status>"). */
  errorMessage?: string;
  /** As some gateways do: the error body quotes the Authorization header the request came with (the API key). */
  echoAuthorization?: boolean;
  headers?: Record<string, string>;
  /** Summary text to answer with; by default a short summary echoing the request size. */
  text?: string;
  /** Wait before answering (or before the first chunk). */
  delayMs?: number;
  /**
   * Called when the request arrives; the answer waits until its promise settles (after
   * delayMs): a summary that takes as long as a condition of the test's, whatever the load.
   */
  until?: () => Promise<void>;
  /**
   * Stream a '.' every chunkDelayMs (default 250 ms) until this promise settles, then the text:
   * a summary that lasts as long as a condition of the test's while its stream shows progress
   * (the worker's stall timeout and heartbeats see it alive).
   */
  streamUntil?: Promise<void>;
  /** Split the streamed text into this many chunks... */
  chunks?: number;
  /** ...sent this far apart. */
  chunkDelayMs?: number;
  /** Send this many chunks, then go silent (keep the connection open) until the client gives up. */
  stallAfterChunks?: number;
  /** Destroy the socket without answering. */
  reset?: boolean;
  /**
   * End the summary with a line naming this call (`summary call <n>`, n counting from 1), so
   * a later prompt that carries it as "Summary so far" tells which call produced its head.
   */
  tagCalls?: boolean;
}

/** The call number a summary produced with `tagCalls` carries, or undefined. */
const SUMMARY_CALL_TAG = /\[summary call (\d+)\]/;

export interface RecordedRequest {
  /** The Authorization header the request came with. */
  authorization?: string;
  body: { model: string; messages: Array<{ role: string; content: string }>; stream?: boolean };
  at: number;
  /** The usage the answer reported. */
  usage: Usage;
}

/** Tokens of one message as the fake counts them: its text, or its JSON when it has no text content. */
function messageTokens(message: unknown): number {
  const content = (message as { content?: unknown }).content;
  return estimateTextTokens(typeof content === 'string' ? content : JSON.stringify(message)) + 4;
}

/** A prefix cache: the running hashes of every leading run of messages seen, per model. */
class PrefixCache {
  private readonly seen = new Set<string>();

  /** The prompt's tokens and how many of them a run of leading messages seen before covers; then remembers this prompt. */
  usage(model: string, messages: readonly unknown[], completionText: string): Usage {
    let hash = createHash('sha256').update(model).digest('hex');
    let prompt = 0;
    let cached = 0;
    let hit = true;
    for (const m of messages) {
      hash = createHash('sha256').update(hash).update(canonicalJson(m)).digest('hex');
      const tokens = messageTokens(m);
      prompt += tokens;
      hit &&= this.seen.has(hash);
      if (hit) cached += tokens;
      this.seen.add(hash);
    }
    const completion = estimateTextTokens(completionText);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: cached } };
  }

  clear(): void {
    this.seen.clear();
  }
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
  const cache = new PrefixCache();

  const server = await serveChatCompletions(async (raw, req, res) => {
    const body = JSON.parse(raw) as RecordedRequest['body'];
    const recorded: RecordedRequest = {
      authorization: req.headers.authorization,
      body,
      at: Date.now(),
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
    requests.push(recorded);
    const callNumber = requests.length;
    const b = queue.shift() ?? fallback;
    const condition = b.until?.();
    if (b.delayMs) await sleep(b.delayMs);
    if (condition) await condition;
    if (b.reset) {
      req.socket.destroy();
      return;
    }
    if (b.status && b.status >= 400) {
      res.writeHead(b.status, { 'content-type': 'application/json', ...b.headers });
      const echoed = b.echoAuthorization ? ` (received Authorization: ${String(req.headers.authorization ?? '')})` : '';
      res.end(JSON.stringify({ error: { message: `${b.errorMessage ?? `scripted failure ${b.status}`}${echoed}`, type: 'test', code: b.errorCode ?? null } }));
      return;
    }
    const text =
      (b.text ?? `Goal: continue the work.\nCompleted actions: summarised ${body.messages.at(-1)?.content.length ?? 0} characters.`) +
      (b.tagCalls ? `\n[summary call ${callNumber}]` : '');
    const model = body.model;
    const usage = cache.usage(model, body.messages, text);
    recorded.usage = usage;
    if (!body.stream) {
      sendCompletion(res, { id: 'cmpl-test', model, message: { role: 'assistant', content: text }, finishReason: 'stop', usage });
      return;
    }
    const stream = startChunkStream(res, 'cmpl-test', model, usage);
    if (b.streamUntil) {
      let settled = false;
      void b.streamUntil.finally(() => (settled = true)).catch(() => undefined);
      while (!settled && !res.destroyed) {
        stream.delta({ content: '.' });
        await sleep(b.chunkDelayMs ?? 250);
      }
    }
    const n = Math.max(1, b.chunks ?? 1);
    const size = Math.ceil(text.length / n);
    for (let i = 0; i < n; i++) {
      if (b.stallAfterChunks !== undefined && i >= b.stallAfterChunks) {
        await new Promise<void>((resolve) => res.once('close', resolve));
        return;
      }
      if (i > 0 && b.chunkDelayMs) await sleep(b.chunkDelayMs);
      if (res.destroyed) return;
      stream.delta({ content: text.slice(i * size, (i + 1) * size) });
    }
    stream.delta({}, 'stop');
    stream.end();
  });

  return {
    baseURL: server.baseURL,
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
      cache.clear();
    },
    close: () => server.close(),
  };
}

/** How the summariser calls (made with `tagCalls`) map onto the heads they started from. */
export interface SummariserCalls {
  total: number;
  /** Calls whose prompt carried no earlier summary: a lineage's first compaction. */
  fromFirstHead: number;
  /** Calls that started from a head some summary call produced, by that call's number. */
  fromHeadOf: Record<number, number>;
  /** The greatest number of calls that started from one summarised head (1: no head was summarised twice). */
  maxFromOneHead: number;
}

/**
 * Groups the recorded summariser calls by the head they summarised: a head produced by call
 * n carries `[summary call n]` in its summary, and the next compaction's prompt quotes it as
 * "Summary so far". Two calls from the same head would be two jobs (or two attempts) on one
 * head: exactly what the workflow-as-the-lock forbids.
 */
export function summariserCallsPerHead(requests: readonly RecordedRequest[]): SummariserCalls {
  const fromHeadOf: Record<number, number> = {};
  let fromFirstHead = 0;
  for (const request of requests) {
    const prompt = String(request.body.messages.at(-1)?.content ?? '');
    const summarySoFar = /Summary so far:\n([^]*?)\n\nMessages to summarise:/.exec(prompt)?.[1];
    const previous = summarySoFar === undefined ? undefined : SUMMARY_CALL_TAG.exec(summarySoFar)?.[1];
    if (summarySoFar === undefined) fromFirstHead++;
    else if (previous === undefined) throw new Error(`a prompt quotes a summary without a call tag: ${summarySoFar.slice(0, 200)}`);
    else fromHeadOf[Number(previous)] = (fromHeadOf[Number(previous)] ?? 0) + 1;
  }
  return { total: requests.length, fromFirstHead, fromHeadOf, maxFromOneHead: Math.max(0, ...Object.values(fromHeadOf)) };
}
