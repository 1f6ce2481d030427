/**
 * The strict fake for the `ai-sdk` dialect: what the Vercel AI SDK sends for a head of
 * `ModelMessage`s, converted by the AI SDK's own provider packages, checked with the strict
 * fakes of those providers. `aiSdkRequests` calls `generateText({ model, messages })` once per
 * provider (`@ai-sdk/openai`'s Responses and Chat models, `@ai-sdk/anthropic`,
 * `@ai-sdk/google`), each with a `fetch` that records the request body and answers nothing
 * further (no network: the call then fails, after the body is known; a URL the AI SDK would
 * download comes back as a few bytes of its kind); `aiSdkRefusal` reads each
 * body with the provider's strict validator (validateResponsesRequest, validateChatRequest,
 * validateAnthropicRequest, validateGeminiRequest). The AI SDK itself refuses some heads before
 * any request (a tool call without its result before the next user message, for one): that
 * throw is a refusal too. Stateless, as test/support/strict-check.ts: Anthropic's thinking
 * blocks are taken as issued with the text they carry (their order is still checked), and
 * Anthropic's thinking is turned on when a head carries any.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, type LanguageModel, type ModelMessage } from 'ai';
import type { Message } from '../../src/compaction/dialects';
import { isJsonObject } from '../../src/compaction/json';
import { validateAnthropicRequest } from './strict-anthropic';
import { validateGeminiRequest } from './strict-gemini';
import { validateChatRequest } from './strict-provider';
import { validateResponsesRequest } from './strict-responses';

const AI_SDK_PROVIDERS = ['openai-responses', 'openai-chat', 'anthropic', 'gemini'] as const;
export type AiSdkProvider = (typeof AI_SDK_PROVIDERS)[number];

/** What the AI SDK did with a head for one provider: the request body it sent, or why it sent none. */
export type AiSdkRequest = { body: unknown } | { error: string };

/** Thrown by the recording fetch once it has the body: the call goes no further. */
class Recorded extends Error {}

const API_KEY = 'strict-fake-key';
const MODEL = 'agent-model';

function modelFor(provider: AiSdkProvider, record: (body: unknown) => void): LanguageModel {
  const fetch = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    record(typeof init?.body === 'string' ? JSON.parse(init.body) : init?.body);
    throw new Recorded('recorded');
  };
  switch (provider) {
    case 'openai-responses':
      return createOpenAI({ apiKey: API_KEY, fetch }).responses(MODEL);
    case 'openai-chat':
      return createOpenAI({ apiKey: API_KEY, fetch }).chat(MODEL);
    case 'anthropic':
      return createAnthropic({ apiKey: API_KEY, fetch })(MODEL);
    case 'gemini':
      return createGoogleGenerativeAI({ apiKey: API_KEY, fetch })(MODEL);
  }
}

const PNG_BYTES = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk', 'base64');
const PDF_BYTES = Buffer.from('%PDF-1.4\n');
/** What the strict check "downloads" for a URL: a PNG for an image's name, a PDF otherwise. */
const downloaded = (url: URL) => new Uint8Array(/\.(png|jpe?g|gif|webp)$/i.test(url.pathname) ? PNG_BYTES : PDF_BYTES);

/** Whether a head carries reasoning Anthropic signed: the AI SDK sends it as thinking blocks, with thinking on. */
const carriesThinking = (messages: readonly Message[]) =>
  messages.some(
    (m) =>
      Array.isArray(m.content) &&
      m.content.some((p) => isJsonObject(p) && p.type === 'reasoning' && isJsonObject(p.providerOptions) && isJsonObject(p.providerOptions.anthropic)),
  );

/** The request the AI SDK sends to one provider for these messages, or the error it raised instead. */
async function aiSdkRequest(provider: AiSdkProvider, messages: readonly Message[]): Promise<AiSdkRequest> {
  let body: unknown;
  try {
    await generateText({
      model: modelFor(provider, (b) => (body = b)),
      messages: structuredClone(messages) as unknown as ModelMessage[],
      allowSystemInMessages: true,
      maxRetries: 0,
      onWarning: () => {}, // what the AI SDK drops (unsigned reasoning for Anthropic, deprecated image parts) is not a refusal
      // No network: a URL the model does not take is "downloaded" as a few bytes of its kind (a PNG, or a PDF).
      experimental_download: async (files) => files.map((f) => (f.isUrlSupportedByModel ? null : { data: downloaded(f.url), mediaType: undefined })),
      ...(provider === 'anthropic' && carriesThinking(messages)
        ? { maxOutputTokens: 4096, providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } } }
        : {}),
    });
  } catch (error) {
    if (body !== undefined) return { body };
    return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
  return body === undefined ? { error: 'the AI SDK sent no request' } : { body };
}

/** The requests the AI SDK sends to each provider for these messages. */
export async function aiSdkRequests(messages: readonly Message[]): Promise<Record<AiSdkProvider, AiSdkRequest>> {
  const out = {} as Record<AiSdkProvider, AiSdkRequest>;
  for (const provider of AI_SDK_PROVIDERS) out[provider] = await aiSdkRequest(provider, messages);
  return out;
}

/** Anthropic's thinking blocks in a request, taken as issued with the text they carry: the stateless check verifies their order, not their origin. */
function issuedThinking(body: unknown): { thinking: Map<string, string> } {
  const thinking = new Map<string, string>();
  const messages = isJsonObject(body) && Array.isArray(body.messages) ? body.messages : [];
  for (const m of messages) {
    if (!isJsonObject(m) || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (isJsonObject(b) && b.type === 'thinking' && typeof b.signature === 'string' && typeof b.thinking === 'string') thinking.set(b.signature, b.thinking);
    }
  }
  return { thinking };
}

/** Why the provider's strict fake refuses the body the AI SDK sent it, or undefined. */
function refusalOf(provider: AiSdkProvider, body: unknown): string | undefined {
  const refusal = (r: { reason?: string; rule?: string } | null) => (r ? `${r.rule ?? ''} ${r.reason ?? ''}`.trim() : undefined);
  switch (provider) {
    case 'openai-responses':
      return refusal(validateResponsesRequest(body));
    case 'openai-chat':
      return validateChatRequest(body)?.message;
    case 'anthropic':
      return refusal(validateAnthropicRequest(body, issuedThinking(body)));
    case 'gemini':
      return refusal(validateGeminiRequest(body));
  }
}

/** Why the AI SDK, or a provider it converts for, would refuse these messages as the next request, or undefined. */
export async function aiSdkRefusal(messages: readonly Message[]): Promise<string | undefined> {
  for (const provider of AI_SDK_PROVIDERS) {
    const request = await aiSdkRequest(provider, messages);
    const why = 'error' in request ? `the AI SDK refused the messages: ${request.error}` : refusalOf(provider, request.body);
    if (why) return `${provider}: ${why}`;
  }
  return undefined;
}
