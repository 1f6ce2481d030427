/**
 * Summarisers: the OpenAI-compatible LLM one, and the built-in deterministic one used when
 * no API key is configured. Failures are classified here into Temporal failures: which are
 * final (auth, quota, invalid request) and which are retried (server errors, rate limits,
 * connection errors, stalls).
 */
import { ApplicationFailure } from '@temporalio/common';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { extractiveSummary } from '../compaction/extractive-summary';
import { addCosts, NO_COST, type RungCost } from '../compaction/gain';
import { buildSummaryPrompt, chunkMiddle, instructionMessage, type SummaryPrefix, type SummaryRequest } from '../compaction/summary-prompt';
import type { Dialect, DialectName, Message } from '../compaction/dialects';
import { estimateTextTokens } from '../compaction/tokens';
import type { LlmConfig } from '../config';
import { redactSecrets } from '../secrets';

export interface SummaryResult {
  text: string;
  model: string;
  promptTokens?: number;
  completionTokens?: number;
  /** Prompt tokens the provider served from its prompt cache, where it reports them. */
  cachedPromptTokens?: number;
  /** What the call(s) were billed, in one shape for every API (src/compaction/gain.ts); absent when the API reported no usage. */
  cost?: RungCost;
}

/** OpenAI's usage (Chat or Responses) as a RungCost: its input count already holds the cached tokens. */
export function openAiCost(input?: number, output?: number, cached?: number): RungCost | undefined {
  if (input === undefined && output === undefined) return undefined;
  return { inputTokens: input ?? 0, outputTokens: output ?? 0, cacheReadTokens: cached ?? 0, cacheWriteTokens: 0, calls: 1 };
}

/** Anthropic's usage fields (as the SDK types them, with usage.iterations where the API sends them). */
interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  iterations?: Array<AnthropicUsage & { type?: string }> | null;
}

/**
 * Anthropic's usage as a RungCost: its input_tokens leave out the cache's reads and writes,
 * which are added. A step the API reports only in usage.iterations (a server-side compaction)
 * is billed on top of the top-level usage, so the iterations' sum is the bill when they are there.
 */
export function anthropicCost(usage: AnthropicUsage | undefined, output?: number): RungCost | undefined {
  if (!usage) return undefined;
  const one = (u: AnthropicUsage) => ({
    inputTokens: (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
    outputTokens: u.output_tokens ?? 0,
    cacheReadTokens: u.cache_read_input_tokens ?? 0,
    cacheWriteTokens: u.cache_creation_input_tokens ?? 0,
  });
  const top = { ...one(usage), ...(output !== undefined ? { outputTokens: output } : {}) };
  const iterations = (usage.iterations ?? []).map((u) => ({ ...(u.type ? { type: u.type } : {}), ...one(u) }));
  if (iterations.length === 0) return { ...top, calls: 1 };
  const sum = (key: keyof ReturnType<typeof one>) => iterations.reduce((n, u) => n + u[key], 0);
  return {
    inputTokens: sum('inputTokens'),
    outputTokens: sum('outputTokens'),
    cacheReadTokens: sum('cacheReadTokens'),
    cacheWriteTokens: sum('cacheWriteTokens'),
    calls: 1,
    iterations,
  };
}

interface SummariseContext {
  /** Aborts the LLM call: the activity was cancelled or lost its lease. */
  signal: AbortSignal;
  /** Called whenever the summariser makes progress, with the characters of text that arrived. */
  onProgress: (chars: number) => void;
}

export interface Summariser {
  readonly model: string;
  readonly description: string;
  /** Whether its API takes this dialect's messages as they are (the prefix layout, see summary-prompt.ts); absent: never. */
  speaks?(dialect: DialectName): boolean;
  summarise(request: SummaryRequest, context: SummariseContext): Promise<SummaryResult>;
}

function createExtractiveSummariser(): Summariser {
  return {
    model: 'builtin-extractive',
    description: 'built-in deterministic extractive summariser (no OPENAI_API_KEY configured)',
    async summarise(request) {
      return { text: extractiveSummary(request), model: 'builtin-extractive' };
    },
  };
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const raw = headers?.get('retry-after-ms') ?? undefined;
  if (raw && Number.isFinite(Number(raw))) return Number(raw);
  const seconds = headers?.get('retry-after');
  if (seconds && Number.isFinite(Number(seconds))) return Number(seconds) * 1000;
  return undefined;
}

/** What went wrong with a summariser call, as stored in a job's reason (never the provider's own text). */
type SummariserFailureKind = 'auth' | 'quota' | 'rate limit' | 'timeout' | 'bad request' | 'server error' | 'connection' | 'stalled' | 'other';

const KIND_DETAIL: Record<SummariserFailureKind, string> = {
  auth: 'the endpoint refused the API key',
  quota: "the account's quota is used up",
  'rate limit': 'too many requests',
  timeout: 'the request timed out',
  'bad request': 'the endpoint refused the request',
  'server error': 'the endpoint failed',
  connection: 'the endpoint could not be reached',
  stalled: 'the stream went silent for longer than COMPACTION_STALL_TIMEOUT_MS',
  other: 'the call failed',
};

/** A provider's error code or type (`invalid_api_key`, `overloaded_error`) when it is a short token: never free text. */
function providerCode(error: unknown, secrets: readonly string[]): string | undefined {
  const e = error as { code?: unknown; type?: unknown; error?: { type?: unknown; error?: { type?: unknown } } };
  for (const candidate of [e.code, e.type, e.error?.error?.type, e.error?.type]) {
    if (typeof candidate === 'string' && /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(candidate) && redactSecrets(candidate, secrets) === candidate) return candidate;
  }
  return undefined;
}

/**
 * The reason stored for a failed summariser call: its kind, the provider's HTTP status and
 * error code when it gave them. Never the provider's message or body (a gateway may echo the
 * key it was sent) and never a configured secret.
 */
function summariserFailureMessage(kind: SummariserFailureKind, status?: number, code?: string): string {
  return `${kind}${status !== undefined ? ` (HTTP ${status}${code ? `, ${code}` : ''})` : code ? ` (${code})` : ''}: ${KIND_DETAIL[kind]}`;
}

function summariserFailure(
  kind: SummariserFailureKind,
  type: string,
  retryable: boolean,
  status?: number,
  code?: string,
  nextRetryDelay?: number,
): ApplicationFailure {
  return ApplicationFailure.create({
    message: summariserFailureMessage(kind, status, code),
    type,
    nonRetryable: !retryable,
    details: [{ kind, ...(status !== undefined ? { status } : {}), ...(code ? { code } : {}) }],
    ...(nextRetryDelay !== undefined ? { nextRetryDelay } : {}),
  });
}

/**
 * Maps an error of an LLM client (openai or @anthropic-ai/sdk: both carry `status` and
 * `headers` on API errors) to a Temporal failure that says whether to retry, classified
 * (summariserFailureMessage): the provider's text goes nowhere, `secrets` not even in a code.
 */
function classifySummariserError(error: unknown, secrets: readonly string[]): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const status = (error as { status?: unknown }).status;
  if ((error instanceof APIError || error instanceof Anthropic.APIError) && typeof status === 'number') {
    const code = providerCode(error, secrets);
    if (status === 401 || status === 403) return summariserFailure('auth', 'SummariserAuthError', false, status, code);
    if (status === 429) {
      if (code === 'insufficient_quota') return summariserFailure('quota', 'SummariserQuotaError', false, status, code);
      const delay = retryAfterMs((error as { headers?: Headers }).headers);
      return summariserFailure('rate limit', 'SummariserRateLimited', true, status, code, delay);
    }
    if (status === 402) return summariserFailure('quota', 'SummariserQuotaError', false, status, code);
    if (status === 408) return summariserFailure('timeout', 'SummariserServerError', true, status, code);
    if (status >= 500 || status === 409) return summariserFailure('server error', 'SummariserServerError', true, status, code);
    // Anthropic says a prompt is too long only in its message (its type is invalid_request_error): read for that, never kept.
    const tooLong = status === 400 && error instanceof Anthropic.APIError && /prompt is too long/i.test(error.message) ? 'prompt_too_long' : undefined;
    return summariserFailure('bad request', 'SummariserInvalidRequest', false, status, tooLong ?? code);
  }
  if (error instanceof APIConnectionTimeoutError || error instanceof Anthropic.APIConnectionTimeoutError) {
    return summariserFailure('timeout', 'SummariserConnectionError', true);
  }
  if (error instanceof APIConnectionError || error instanceof Anthropic.APIConnectionError) {
    return summariserFailure('connection', 'SummariserConnectionError', true);
  }
  return summariserFailure(
    'other',
    'SummariserError',
    true,
    undefined,
    error instanceof Error && /^[A-Za-z]\w{0,63}$/.test(error.name) ? error.name : undefined,
  );
}

/**
 * One call to an LLM API: the prompt in, text out (streamed deltas reported as they come).
 * With `prefix` (the head as the agent sends it), the request is those messages followed by one
 * user message holding the instructions and the input, and nothing before them: the request
 * begins as the agent's own did, so a prompt cache can serve it.
 */
type LlmCall = (
  prompt: { instructions: string; input: string; prefix?: Message[] },
  context: { signal: AbortSignal; stream: boolean; timeoutMs: number; onDelta: (text: string) => void },
) => Promise<SummaryResult>;

function chatCall(config: LlmConfig, client: OpenAI): LlmCall {
  return async ({ instructions, input, prefix }, { signal, stream, timeoutMs, onDelta }) => {
    const messages = (prefix
      ? [...prefix, instructionMessage(`${instructions}\n\n${input}`)]
      : [
          { role: 'system', content: instructions },
          { role: 'user', content: input },
        ]) as unknown as OpenAI.ChatCompletionMessageParam[];
    if (!stream) {
      const response = await client.chat.completions.create({ model: config.model, messages }, { signal, timeout: timeoutMs });
      return {
        text: response.choices[0]?.message?.content ?? '',
        model: response.model || config.model,
        promptTokens: response.usage?.prompt_tokens,
        completionTokens: response.usage?.completion_tokens,
        cachedPromptTokens: response.usage?.prompt_tokens_details?.cached_tokens,
        cost: openAiCost(response.usage?.prompt_tokens, response.usage?.completion_tokens, response.usage?.prompt_tokens_details?.cached_tokens),
      };
    }
    const events = await client.chat.completions.create({ model: config.model, messages, stream: true, stream_options: { include_usage: true } }, { signal });
    let text = '';
    let model = config.model;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of events) {
      const delta = chunk.choices[0]?.delta?.content ?? '';
      onDelta(delta);
      text += delta;
      if (chunk.model) model = chunk.model;
      if (chunk.usage) usage = chunk.usage;
    }
    return {
      text,
      model,
      promptTokens: usage?.prompt_tokens,
      completionTokens: usage?.completion_tokens,
      cachedPromptTokens: usage?.prompt_tokens_details?.cached_tokens,
      cost: openAiCost(usage?.prompt_tokens, usage?.completion_tokens, usage?.prompt_tokens_details?.cached_tokens),
    };
  };
}

function responsesCall(config: LlmConfig, client: OpenAI): LlmCall {
  return async ({ instructions, input, prefix }, { signal, stream, timeoutMs, onDelta }) => {
    const body: OpenAI.Responses.ResponseCreateParamsNonStreaming = prefix
      ? {
          model: config.model,
          input: [...prefix, instructionMessage(`${instructions}\n\n${input}`)] as unknown as OpenAI.Responses.ResponseInput,
          store: false,
        }
      : { model: config.model, instructions, input, store: false };
    if (!stream) {
      const response = await client.responses.create(body, { signal, timeout: timeoutMs });
      return {
        text: response.output_text ?? '',
        model: response.model || config.model,
        promptTokens: response.usage?.input_tokens,
        completionTokens: response.usage?.output_tokens,
        cachedPromptTokens: response.usage?.input_tokens_details?.cached_tokens,
        cost: openAiCost(response.usage?.input_tokens, response.usage?.output_tokens, response.usage?.input_tokens_details?.cached_tokens),
      };
    }
    const events = await client.responses.create({ ...body, stream: true }, { signal });
    let text = '';
    let result: SummaryResult | undefined;
    for await (const event of events) {
      if (event.type === 'response.output_text.delta') {
        onDelta(event.delta);
        text += event.delta;
      } else if (event.type === 'response.completed') {
        const r = event.response;
        result = {
          text: r.output_text || text,
          model: r.model || config.model,
          promptTokens: r.usage?.input_tokens,
          completionTokens: r.usage?.output_tokens,
          cachedPromptTokens: r.usage?.input_tokens_details?.cached_tokens,
          cost: openAiCost(r.usage?.input_tokens, r.usage?.output_tokens, r.usage?.input_tokens_details?.cached_tokens),
        };
      }
    }
    return result ?? { text, model: config.model };
  };
}

function anthropicCall(config: LlmConfig): LlmCall {
  const client = new Anthropic({ apiKey: config.apiKey, baseURL: config.baseURL, maxRetries: 0 });
  return async ({ instructions, input, prefix }, { signal, stream, timeoutMs, onDelta }) => {
    const body: Anthropic.MessageCreateParamsNonStreaming = prefix
      ? {
          model: config.model,
          max_tokens: 4096,
          messages: [...prefix, instructionMessage(`${instructions}\n\n${input}`)] as unknown as Anthropic.MessageParam[],
        }
      : { model: config.model, max_tokens: 4096, system: instructions, messages: [{ role: 'user' as const, content: input }] };
    if (!stream) {
      const response = await client.messages.create(body, { signal, timeout: timeoutMs });
      const text = response.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      return {
        text,
        model: response.model || config.model,
        promptTokens: response.usage?.input_tokens,
        completionTokens: response.usage?.output_tokens,
        cachedPromptTokens: response.usage?.cache_read_input_tokens ?? undefined,
        cost: anthropicCost(response.usage as AnthropicUsage | undefined),
      };
    }
    const events = await client.messages.create({ ...body, stream: true }, { signal });
    let text = '';
    let model = config.model;
    let promptTokens: number | undefined;
    let completionTokens: number | undefined;
    let cachedPromptTokens: number | undefined;
    let startUsage: AnthropicUsage | undefined;
    for await (const event of events) {
      if (event.type === 'message_start') {
        model = event.message.model || model;
        promptTokens = event.message.usage?.input_tokens;
        cachedPromptTokens = event.message.usage?.cache_read_input_tokens ?? undefined;
        startUsage = event.message.usage as AnthropicUsage | undefined;
      } else if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        onDelta(event.delta.text);
        text += event.delta.text;
      } else if (event.type === 'message_delta') {
        completionTokens = event.usage?.output_tokens;
        // The final usage (message_delta) holds the iterations where the API reports them.
        const final = event.usage as AnthropicUsage | undefined;
        if (final?.iterations) startUsage = { ...startUsage, iterations: final.iterations };
      }
    }
    return { text, model, promptTokens, completionTokens, cachedPromptTokens, cost: anthropicCost(startUsage, completionTokens) };
  };
}

export interface OpenAiSummariserOptions {
  /** A stream (or the wait for its first chunk) silent for this long is abandoned. */
  stallTimeoutMs: number;
  /**
   * Bound for a non-streamed request, which shows no progress while it waits: a hung
   * endpoint would otherwise hold the lineage's queue until the attempt timeout.
   */
  requestTimeoutMs: number;
  /** Bound for a stream, which the stall watchdog watches; defaults to the client's own. */
  streamTimeoutMs?: number;
  /** Every configured secret (Config.secrets), kept out of failure codes; the API key is always among them. */
  secrets?: readonly string[];
}

/** The summariser on an LLM: the Chat Completions or Responses API of an OpenAI-compatible endpoint, or Anthropic's Messages API (`config.api`). */
export function createLlmSummariser(config: LlmConfig, options: OpenAiSummariserOptions): Summariser {
  // Temporal owns retries (durable, visible in history): the clients must not retry on their own.
  const openai = () =>
    new OpenAI({ apiKey: config.apiKey, baseURL: config.baseURL, maxRetries: 0, ...(options.streamTimeoutMs ? { timeout: options.streamTimeoutMs } : {}) });
  const call = config.api === 'anthropic' ? anthropicCall(config) : config.api === 'responses' ? responsesCall(config, openai()) : chatCall(config, openai());
  const api =
    config.api === 'anthropic' ? 'Anthropic Messages API' : config.api === 'responses' ? 'OpenAI Responses API' : 'OpenAI-compatible Chat Completions API';
  const dialect: DialectName = config.api === 'anthropic' ? 'anthropic' : config.api === 'responses' ? 'openai-responses' : 'openai-chat';
  const secrets = [...(options.secrets ?? []), ...(config.apiKey ? [config.apiKey] : [])];
  return {
    model: config.model,
    speaks: (name) => name === dialect,
    description: `${api}, model ${config.model}${config.baseURL ? ` at ${config.baseURL}` : ''}${config.stream ? ' (streaming)' : ''}`,
    async summarise(request, context) {
      const [system, user] = buildSummaryPrompt(request);
      const stall = new AbortController();
      const signal = AbortSignal.any([context.signal, stall.signal]);
      let watchdog: NodeJS.Timeout | undefined;
      const armWatchdog = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => stall.abort(), options.stallTimeoutMs);
      };
      try {
        if (config.stream) armWatchdog();
        const result = await call(
          { instructions: String(system.content), input: String(user.content), prefix: request.prefix?.messages },
          {
            signal,
            stream: config.stream,
            timeoutMs: options.requestTimeoutMs,
            onDelta: (text) => {
              armWatchdog();
              context.onProgress(text.length);
            },
          },
        );
        // The clients end an aborted stream quietly instead of throwing: check why it ended.
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
        return result;
      } catch (error) {
        if (stall.signal.aborted && !context.signal.aborted) {
          throw summariserFailure('stalled', 'SummariserStalled', true);
        }
        if (context.signal.aborted || error instanceof APIUserAbortError || error instanceof Anthropic.APIUserAbortError) throw error;
        throw classifySummariserError(error, secrets);
      } finally {
        clearTimeout(watchdog);
      }
    },
  };
}

export function createSummariser(config: LlmConfig, options: OpenAiSummariserOptions): Summariser {
  return config.apiKey ? createLlmSummariser(config, options) : createExtractiveSummariser();
}

export interface MiddleSummaryInput {
  middle: Message[];
  dialect: Dialect;
  previousSummary?: string;
  focusTopic?: string;
  force: boolean;
  latestUserRequest?: string;
  /** The stored ledger, rendered: fixed text beside the range (summary-prompt.ts SummaryRequest.ledger). */
  ledger?: string;
  /** The prefix layout (summary-prompt.ts `prefixLayout`): one request, the head and then the instruction. */
  prefix?: SummaryPrefix;
}

export interface SummaryProgress {
  chunk: number;
  chunks: number;
  streamedChars: number;
}

/**
 * Summarises the whole middle within the summariser's input budget: split into chunks in
 * order, each folded into the summary so far (the previous compaction's summary first).
 * `onProgress` runs before each chunk and as text streams in, so the caller can
 * heartbeat between and during calls. Usage is summed over the calls.
 */
export async function summariseInChunks(
  summariser: Summariser,
  input: MiddleSummaryInput,
  options: { inputBudgetTokens: number; signal: AbortSignal; onProgress: (progress: SummaryProgress) => void },
): Promise<SummaryResult & { chunks: number }> {
  // The prefix layout sends the head itself, in one request: nothing is rendered or chunked.
  const chunks = input.prefix
    ? [{ lines: [], cut: false }]
    : chunkMiddle(input.middle, options.inputBudgetTokens - estimateTextTokens(input.ledger ?? ''), input.previousSummary, input.dialect);
  let summary = input.previousSummary;
  let model = summariser.model;
  let promptTokens: number | undefined;
  let completionTokens: number | undefined;
  let cachedPromptTokens: number | undefined;
  let cost: RungCost | undefined;
  let streamedChars = 0;
  const add = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));
  for (const [i, chunk] of chunks.entries()) {
    const progress = () => options.onProgress({ chunk: i + 1, chunks: chunks.length, streamedChars });
    progress();
    const result = await summariser.summarise(
      {
        lines: chunk.lines,
        previousSummary: summary,
        focusTopic: input.focusTopic,
        force: input.force,
        latestUserRequest: input.latestUserRequest,
        ledger: input.ledger,
        chunk: { index: i + 1, count: chunks.length },
        cut: chunk.cut,
        prefix: input.prefix,
      },
      {
        signal: options.signal,
        onProgress: (chars) => {
          streamedChars += chars;
          progress();
        },
      },
    );
    cost = result.cost ? addCosts(cost ?? NO_COST, result.cost) : cost;
    if (result.text.trim() === '') return { ...result, ...(cost ? { cost } : {}), chunks: chunks.length };
    summary = result.text;
    model = result.model;
    promptTokens = add(promptTokens, result.promptTokens);
    completionTokens = add(completionTokens, result.completionTokens);
    cachedPromptTokens = add(cachedPromptTokens, result.cachedPromptTokens);
  }
  return { text: summary ?? '', model, promptTokens, completionTokens, cachedPromptTokens, ...(cost ? { cost } : {}), chunks: chunks.length };
}
