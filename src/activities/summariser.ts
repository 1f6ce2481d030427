/**
 * Summarisers: the OpenAI-compatible LLM one, and the built-in deterministic one used when
 * no API key is configured. Failures are classified here into Temporal failures: which are
 * final (auth, quota, invalid request) and which are retried (server errors, rate limits,
 * connection errors, stalls).
 */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai';
import { extractiveSummary } from '../compaction/extractive-summary';
import { buildSummaryPrompt, chunkMiddle, type SummaryRequest } from '../compaction/summary-prompt';
import type { Dialect, Message } from '../compaction/dialects';
import type { LlmConfig } from '../config';

export interface SummaryResult {
  text: string;
  model: string;
  promptTokens?: number;
  completionTokens?: number;
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

/** Maps an error of the OpenAI client to a Temporal failure that says whether to retry. */
function classifySummariserError(error: unknown): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  if (error instanceof APIError && error.status !== undefined) {
    const status = error.status;
    const detail = `LLM endpoint answered ${status}: ${error.message}`;
    if (status === 401 || status === 403) return ApplicationFailure.nonRetryable(detail, 'SummariserAuthError');
    if (status === 429) {
      if (error.code === 'insufficient_quota') return ApplicationFailure.nonRetryable(detail, 'SummariserQuotaError');
      const delay = retryAfterMs(error.headers as Headers | undefined);
      return ApplicationFailure.create({ message: detail, type: 'SummariserRateLimited', nextRetryDelay: delay });
    }
    if (status >= 500) return ApplicationFailure.retryable(detail, 'SummariserServerError');
    if (status === 408 || status === 409) return ApplicationFailure.retryable(detail, 'SummariserServerError');
    return ApplicationFailure.nonRetryable(detail, 'SummariserInvalidRequest');
  }
  if (error instanceof APIConnectionError) {
    return ApplicationFailure.retryable(`LLM endpoint unreachable: ${error.message}`, 'SummariserConnectionError');
  }
  const message = error instanceof Error ? error.message : String(error);
  return ApplicationFailure.retryable(`summariser failed: ${message}`, 'SummariserError');
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
}

export function createOpenAiSummariser(config: LlmConfig, options: OpenAiSummariserOptions): Summariser {
  // Temporal owns retries (durable, visible in history): the client must not retry on its own.
  const client = new OpenAI({
    apiKey: config.apiKey,
    baseURL: config.baseURL,
    maxRetries: 0,
    ...(options.streamTimeoutMs ? { timeout: options.streamTimeoutMs } : {}),
  });
  return {
    model: config.model,
    description: `OpenAI-compatible model ${config.model}${config.baseURL ? ` at ${config.baseURL}` : ''}${config.stream ? ' (streaming)' : ''}`,
    async summarise(request, context) {
      const prompt = buildSummaryPrompt(request);
      const stall = new AbortController();
      const signal = AbortSignal.any([context.signal, stall.signal]);
      let watchdog: NodeJS.Timeout | undefined;
      const armWatchdog = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => stall.abort(), options.stallTimeoutMs);
      };
      try {
        if (!config.stream) {
          const response = await client.chat.completions.create(
            { model: config.model, messages: prompt as OpenAI.ChatCompletionMessageParam[] },
            { signal, timeout: options.requestTimeoutMs },
          );
          return {
            text: response.choices[0]?.message?.content ?? '',
            model: response.model || config.model,
            promptTokens: response.usage?.prompt_tokens,
            completionTokens: response.usage?.completion_tokens,
          };
        }
        armWatchdog();
        const stream = await client.chat.completions.create(
          { model: config.model, messages: prompt as OpenAI.ChatCompletionMessageParam[], stream: true, stream_options: { include_usage: true } },
          { signal },
        );
        let text = '';
        let model = config.model;
        let usage: OpenAI.CompletionUsage | undefined;
        for await (const chunk of stream) {
          armWatchdog();
          const delta = chunk.choices[0]?.delta?.content ?? '';
          context.onProgress(delta.length);
          text += delta;
          if (chunk.model) model = chunk.model;
          if (chunk.usage) usage = chunk.usage;
        }
        // The openai client ends an aborted stream quietly instead of throwing: check why it ended.
        if (signal.aborted) throw signal.reason ?? new Error('aborted');
        return { text, model, promptTokens: usage?.prompt_tokens, completionTokens: usage?.completion_tokens };
      } catch (error) {
        if (stall.signal.aborted && !context.signal.aborted) {
          throw ApplicationFailure.retryable(`the LLM stream was silent for ${options.stallTimeoutMs} ms`, 'SummariserStalled');
        }
        if (context.signal.aborted || error instanceof APIUserAbortError) throw error;
        throw classifySummariserError(error);
      } finally {
        clearTimeout(watchdog);
      }
    },
  };
}

export function createSummariser(config: LlmConfig, options: OpenAiSummariserOptions): Summariser {
  return config.apiKey ? createOpenAiSummariser(config, options) : createExtractiveSummariser();
}

export interface MiddleSummaryInput {
  middle: Message[];
  dialect: Dialect;
  previousSummary?: string;
  focusTopic?: string;
  force: boolean;
  latestUserRequest?: string;
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
  const chunks = chunkMiddle(input.middle, options.inputBudgetTokens, input.previousSummary, input.dialect);
  let summary = input.previousSummary;
  let model = summariser.model;
  let promptTokens: number | undefined;
  let completionTokens: number | undefined;
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
        chunk: { index: i + 1, count: chunks.length },
        cut: chunk.cut,
      },
      {
        signal: options.signal,
        onProgress: (chars) => {
          streamedChars += chars;
          progress();
        },
      },
    );
    if (result.text.trim() === '') return { ...result, chunks: chunks.length };
    summary = result.text;
    model = result.model;
    promptTokens = add(promptTokens, result.promptTokens);
    completionTokens = add(completionTokens, result.completionTokens);
  }
  return { text: summary ?? '', model, promptTokens, completionTokens, chunks: chunks.length };
}
