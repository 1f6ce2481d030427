/**
 * Token counts per message. For OpenAI model families the count comes from gpt-tokenizer,
 * a maintained pure-JavaScript port of OpenAI's BPE encodings (o200k_base, cl100k_base),
 * checked against tiktoken's test plans: no native build, no download at run time, loaded
 * once on first use. For any other model (or none) the estimate in ./tokens is the fallback.
 * Not for workflow code.
 */
import type { Dialect, Message } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import { estimateTokens, MESSAGE_OVERHEAD_TOKENS } from './tokens';

export type TokenizerName = 'o200k_base' | 'cl100k_base' | 'estimate';

export interface TokenCounter {
  readonly tokenizer: TokenizerName;
  count(message: Message): number;
}

/** Which encoding an OpenAI model uses; undefined for models this package does not know. */
export function tokenizerFor(model: string | null | undefined): TokenizerName {
  if (!model) return 'estimate';
  const name = model.toLowerCase().replace(/^openai\//, '');
  if (/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o1|o3|o4|chatgpt-4o|codex-)/.test(name)) return 'o200k_base';
  if (/^(gpt-4|gpt-3\.5|gpt-35)/.test(name)) return 'cl100k_base';
  return 'estimate';
}

/** Context windows of the OpenAI chat models most agents use, in tokens. */
const CONTEXT_WINDOWS: Array<[RegExp, number]> = [
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 400_000],
  [/^(o1|o3|o4)/, 200_000],
  [/^(gpt-4o|chatgpt-4o|gpt-4-turbo|gpt-4\.5)/, 128_000],
  [/^gpt-4-32k/, 32_768],
  [/^gpt-4/, 8_192],
  [/^gpt-3\.5-turbo/, 16_385],
];

/** The context window of a known model, or undefined. */
export function contextWindowOf(model: string | null | undefined): number | undefined {
  if (!model) return undefined;
  const name = model.toLowerCase().replace(/^openai\//, '');
  return CONTEXT_WINDOWS.find(([pattern]) => pattern.test(name))?.[1];
}

type Encoder = { countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number };
/** Special-token strings (`<|endoftext|>`) in a message are text a user wrote: counted as ordinary text, never refused. */
const ORDINARY = { disallowedSpecial: new Set<string>() };
const encoders = new Map<TokenizerName, Encoder>();

function encoder(name: Exclude<TokenizerName, 'estimate'>): Encoder {
  let found = encoders.get(name);
  if (!found) {
    // Required lazily: each encoding is a few MB of ranks, loaded only when a model needs it.
    found = name === 'o200k_base' ? (require('gpt-tokenizer/encoding/o200k_base') as Encoder) : (require('gpt-tokenizer/encoding/cl100k_base') as Encoder);
    encoders.set(name, found);
  }
  return found;
}

/**
 * The counter for a lineage's model and dialect: the real tokenizer when known (over the
 * texts the dialect says a provider counts), else the estimate (labelled `estimate`).
 */
export function tokenCounterFor(model: string | null | undefined, dialect: Dialect = openaiChat): TokenCounter {
  const tokenizer = tokenizerFor(model);
  if (tokenizer === 'estimate') return { tokenizer, count: (message) => estimateTokens(message, dialect) };
  const enc = encoder(tokenizer);
  return {
    tokenizer,
    count(message) {
      let tokens = MESSAGE_OVERHEAD_TOKENS;
      for (const text of dialect.texts(message)) if (text) tokens += enc.countTokens(text, ORDINARY);
      return tokens;
    },
  };
}
