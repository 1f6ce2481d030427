/**
 * The providers' own compaction, called for the native rung (src/activities/compaction/native.ts):
 * OpenAI's `POST /responses/compact` through the `openai` SDK, Anthropic's Messages with the beta
 * `compact_20260112` context-management edit through `@anthropic-ai/sdk`. Each call is bounded
 * (its own timeout, no retries: a failure passes to the summary rung within the same job) and
 * returns what the provider made, byte-exact, with the tokens it billed. No decision is taken
 * here: when to call, and what the head becomes, is the rung's.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { NativeCompactionConfig, NativeProviderConfig } from '../../config';
import type { JsonObject } from '../../compaction/json';
import type { RungCost } from '../../compaction/gain';
import { SessionCompactionError } from '../../errors';
import { anthropicCost, openAiCost } from '../summariser';

/** The provider whose compaction made an opaque item: only it (and the model that made it) can read it. */
export type NativeProvider = 'openai' | 'anthropic';

/** Anthropic compacts only from this many input tokens (the trigger's minimum). */
export const ANTHROPIC_TRIGGER_MINIMUM = 50_000;
/** The beta that carries the compact_20260112 edit. */
const ANTHROPIC_COMPACTION_BETA = 'compact-2026-01-12';

/** Tokens a native call billed, in the summariser's shape (Anthropic: the sum of its compaction iterations). */
export interface NativeUsage {
  promptTokens?: number;
  completionTokens?: number;
  cachedPromptTokens?: number;
  /** The call's bill in the audit row's `costs` (the same reading of each API's usage as the summariser's). */
  cost?: RungCost;
}

interface NativeRequest {
  model: string;
  /** The messages to compact, as the provider's API takes them. */
  input: JsonObject[];
  /** OpenAI: the instructions (system text) of the conversation; Anthropic: its `system` prompt. */
  instructions?: string;
  signal?: AbortSignal;
}

/** What a provider's compaction returned to keep: OpenAI's verbatim user messages and its compaction item; Anthropic's compaction block. */
interface NativeAnswer {
  /** Messages the provider returned before its item (OpenAI: the user messages, verbatim); none for Anthropic. */
  before: JsonObject[];
  /** The opaque item (OpenAI) or block (Anthropic), byte-exact as returned. */
  item: JsonObject;
  /** The provider's readable summary, when it gives one (Anthropic's `content`). */
  readable?: string;
  usage: NativeUsage;
}

/** A native call that returned, but with nothing to keep: no compaction item, or a failed (`content: null`) block. */
export class NativeCompactionFailedError extends SessionCompactionError {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'NativeCompactionFailedError';
  }
}

type NativeCall = (request: NativeRequest) => Promise<NativeAnswer>;

/** The native rung's providers: one call per configured provider, and the bound of each call. */
export interface NativeCompaction {
  calls: Partial<Record<NativeProvider, NativeCall>>;
  /** The model used when a lineage names none, per provider. */
  models: Partial<Record<NativeProvider, string>>;
  timeoutMs: number;
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `POST /responses/compact`: every user message verbatim, then one `{type:'compaction', id, encrypted_content}` item. */
function openaiCompaction(config: NativeProviderConfig, timeoutMs: number): NativeCall {
  const client = new OpenAI({ apiKey: config.apiKey, baseURL: config.baseURL, maxRetries: 0, timeout: timeoutMs });
  return async ({ model, input, instructions, signal }) => {
    const response = await client.responses.compact(
      { model, input: input as unknown as OpenAI.Responses.ResponseInputItem[], ...(instructions ? { instructions } : {}) },
      { signal, timeout: timeoutMs },
    );
    const output = (Array.isArray(response.output) ? response.output : []) as unknown as JsonObject[];
    const items = output.filter((item) => isObject(item) && item.type === 'compaction');
    if (items.length !== 1) throw new NativeCompactionFailedError(`expected exactly one compaction output item, got ${items.length}`);
    const item = items[0];
    if (typeof item.encrypted_content !== 'string' || item.encrypted_content === '')
      throw new NativeCompactionFailedError('the compaction item has no encrypted_content');
    const at = output.indexOf(item);
    const usage = response.usage;
    return {
      before: output.slice(0, at).filter((m) => isObject(m) && m.type === 'message' && m.role === 'user'),
      item,
      usage: usage
        ? {
            promptTokens: usage.input_tokens,
            completionTokens: usage.output_tokens,
            cachedPromptTokens: usage.input_tokens_details?.cached_tokens,
            cost: openAiCost(usage.input_tokens, usage.output_tokens, usage.input_tokens_details?.cached_tokens),
          }
        : {},
    };
  };
}

/**
 * Messages with the `compact_20260112` edit, paused after compaction: the compaction block alone
 * (`content: null` is a failed compaction). The trigger is Anthropic's minimum; the rung calls only
 * with more input than that. Its tokens are the compaction iterations' (`usage.iterations`).
 */
function anthropicCompaction(config: NativeProviderConfig, timeoutMs: number): NativeCall {
  const client = new Anthropic({ apiKey: config.apiKey, baseURL: config.baseURL, maxRetries: 0, timeout: timeoutMs });
  return async ({ model, input, instructions, signal }) => {
    const response = await client.beta.messages.create(
      {
        model,
        max_tokens: 4096,
        messages: input as unknown as Anthropic.Beta.Messages.BetaMessageParam[],
        ...(instructions ? { system: instructions } : {}),
        context_management: {
          edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: ANTHROPIC_TRIGGER_MINIMUM }, pause_after_compaction: true }],
        },
        betas: [ANTHROPIC_COMPACTION_BETA],
      },
      { signal, timeout: timeoutMs },
    );
    const blocks = (Array.isArray(response.content) ? response.content : []) as unknown as JsonObject[];
    const block = blocks.find((b) => isObject(b) && b.type === 'compaction');
    const usage = {
      ...anthropicUsage(response.usage as unknown as JsonObject | undefined),
      cost: anthropicCost(response.usage as unknown as Parameters<typeof anthropicCost>[0]),
    };
    if (!block) throw new NativeCompactionFailedError(`no compaction block in the answer (stop_reason ${String(response.stop_reason)})`);
    if (block.content === null || block.content === undefined) throw new NativeCompactionFailedError('the compaction failed (content: null)');
    return { before: [], item: block, readable: typeof block.content === 'string' ? block.content : undefined, usage };
  };
}

/** The tokens of the compaction iterations (Anthropic reports the step's tokens only there), or the top-level usage without iterations. */
export function anthropicUsage(usage: JsonObject | undefined): NativeUsage {
  if (!usage) return {};
  const iterations = Array.isArray(usage.iterations) ? usage.iterations.filter(isObject) : [];
  const rows = iterations.length > 0 ? iterations.filter((it) => it.type === 'compaction') : [usage];
  const sum = (key: string) => rows.reduce((n, r) => n + (typeof r[key] === 'number' ? r[key] : 0), 0);
  return { promptTokens: sum('input_tokens'), completionTokens: sum('output_tokens'), cachedPromptTokens: sum('cache_read_input_tokens') };
}

/** The native rung's providers from the configuration; undefined when NATIVE_COMPACTION is off. A provider without a key is left out. */
export function createNativeCompaction(config: NativeCompactionConfig): NativeCompaction | undefined {
  if (!config.enabled) return undefined;
  const calls: NativeCompaction['calls'] = {};
  if (config.openai.apiKey) calls.openai = openaiCompaction(config.openai, config.timeoutMs);
  if (config.anthropic.apiKey) calls.anthropic = anthropicCompaction(config.anthropic, config.timeoutMs);
  return { calls, models: { openai: config.openai.model, anthropic: config.anthropic.model }, timeoutMs: config.timeoutMs };
}
