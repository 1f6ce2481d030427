/**
 * A strict local Gemini API server for tests: POST /v1beta/models/{model}:generateContent
 * and :streamGenerateContent (SSE, `?alt=sse`), also under /v1/ (the default API version of
 * @google/genai 3.x) and /v1alpha/. It validates `contents` the way the Gemini
 * API does and answers HTTP 400 with Google's error body (`{error:{code:400, message,
 * status:'INVALID_ARGUMENT'}}`) and message exactly where Gemini would refuse the transcript
 * (rules GM-1…GM-4 of /work/shared/reference/provider-rules.md). Every request is recorded,
 * and every refusal with its rule and reason, so a test can assert "0 rejected" and know that
 * the assertion could fail.
 *
 * Stateful like Gemini 3: every functionCall part it generated is remembered (by name and
 * arguments, which the script keeps unique) with the thoughtSignature it carried (the first
 * call part of each reply carries one); such a part must come back with that signature
 * exactly (GM-4). Gemini itself enforces this only in the current turn (the model turns since
 * the last user text); the fake enforces it in every turn unless `signatureScope:
 * 'current-turn'`. The documented bypass value `skip_thought_signature_validator` is taken,
 * as Gemini takes it.
 *
 * It serves two callers:
 * - the service's summariser (its `systemInstruction` text starts "You compact the
 *   transcript", or it asks for `summariserModel`): answered with a text part holding a summary;
 * - a scripted agent (model `agent-model`, or any model starting with it, each with its own
 *   script): answered from a seeded script with one or several functionCall parts (the first
 *   with a thoughtSignature; arguments sometimes 5-20 KB) or a text part.
 *
 * `url` is @google/genai's `httpOptions.baseUrl` (the SDK adds /v1beta/models/…).
 */
import type { Content, GenerateContentResponse, Part } from '@google/genai';
import {
  agentScripts,
  type Caller,
  canonicalJson,
  nextStep,
  opaqueToken,
  recordOf,
  sendEvents,
  sendJson,
  serveLocal,
  type StrictFakeOptions,
  type StrictFakeProvider,
  type StrictRefusal,
  type StrictRequestRecord,
  SUMMARISER_PREFIX,
} from './strict-fake';

interface GoogleErrorBody {
  error: { code: number; message: string; status: 'INVALID_ARGUMENT' | 'NOT_FOUND' };
}

type GeminiRefusal = StrictRefusal<GoogleErrorBody>;

/** What the server generated: the thoughtSignature (or none) of every functionCall part, by name and arguments. */
interface GeminiMemory {
  signatures: Map<string, string | null>;
}

const newMemory = (): GeminiMemory => ({ signatures: new Map() });

export const CALL_AFTER_USER = 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.';
export const RESPONSE_AFTER_CALL = 'Please ensure that function response turn comes immediately after a function call turn.';
export const RESPONSE_COUNT =
  'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
export const missingSignature = (name: string, position: number) =>
  `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
export const CORRUPTED_SIGNATURE = 'Corrupted thought signature.';
/** The value Gemini's docs name for replayed calls that never had a signature. */
const SKIP_VALIDATOR = 'skip_thought_signature_validator';

const refuse = (rule: string, reason: string, message: string): GeminiRefusal => ({
  status: 400,
  rule,
  reason,
  body: { error: { code: 400, message, status: 'INVALID_ARGUMENT' } },
});

type WirePart = Record<string, unknown> & { functionCall?: { name?: unknown; args?: unknown }; functionResponse?: unknown; thoughtSignature?: unknown };

const callKey = (call: { name?: unknown; args?: unknown }) => `${String(call.name)}\u0000${canonicalJson(call.args ?? {})}`;

type Kind = 'user' | 'model' | 'call' | 'response';

export interface GeminiValidateOptions {
  /** Where GM-4 is enforced: every turn (default) or, as Gemini does, only since the last user text. */
  signatureScope?: 'all' | 'current-turn';
}

/**
 * Validates a generateContent request body as the Gemini API does. Returns the refusal (HTTP
 * status, Google's error body, the rule and the reason), or null when the request is
 * acceptable. Without `memory` it knows no generated call (GM-4 then has nothing to check).
 */
export function validateGeminiRequest(body: unknown, memory: GeminiMemory = newMemory(), options: GeminiValidateOptions = {}): GeminiRefusal | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return refuse('shape', 'the body is not a JSON object', 'Invalid JSON payload received.');
  const contents = (body as { contents?: unknown }).contents;
  if (!Array.isArray(contents) || contents.length === 0)
    return refuse('shape', 'contents is missing or empty', '* GenerateContentRequest.contents: contents is not specified\n');

  const kinds: Kind[] = [];
  for (let i = 0; i < contents.length; i++) {
    const content = contents[i] as { role?: unknown; parts?: unknown } | null;
    if (!content || typeof content !== 'object')
      return refuse(
        'shape',
        `contents[${i}] is not an object`,
        `Invalid value at 'contents[${i}]' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)`,
      );
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model') return refuse('shape', `contents[${i}] has role ${String(role)}`, 'Please use a valid role: user, model.');
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return refuse('shape', `contents[${i}] has no parts`, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    }
    const parts = content.parts as WirePart[];
    kinds.push(
      parts.some((p) => p?.functionResponse !== undefined)
        ? 'response'
        : role === 'model' && parts.some((p) => p?.functionCall !== undefined)
          ? 'call'
          : role === 'model'
            ? 'model'
            : 'user',
    );
  }

  const countOf = (i: number, field: 'functionCall' | 'functionResponse') =>
    ((contents[i] as { parts: WirePart[] }).parts ?? []).filter((p) => p?.[field] !== undefined).length;
  for (let i = 0; i < contents.length; i++) {
    const previous = i > 0 ? kinds[i - 1] : undefined;
    // GM-1: a call turn follows a user turn or a function response turn.
    if (kinds[i] === 'call' && previous !== 'user' && previous !== 'response') {
      return refuse('GM-1', `contents[${i}] is a function call turn after ${previous ?? 'nothing'}`, CALL_AFTER_USER);
    }
    if (kinds[i] !== 'response') continue;
    // GM-2: a response turn directly follows its call turn.
    if (previous !== 'call') return refuse('GM-2', `contents[${i}] is a function response turn after ${previous ?? 'nothing'}`, RESPONSE_AFTER_CALL);
    // GM-3: as many responses as calls.
    const calls = countOf(i - 1, 'functionCall');
    const responses = countOf(i, 'functionResponse');
    if (calls !== responses) return refuse('GM-3', `contents[${i}] answers ${responses} of the ${calls} calls of contents[${i - 1}]`, RESPONSE_COUNT);
  }

  // GM-4: a generated call that carried a thoughtSignature comes back with it, unchanged.
  let from = 0;
  if (options.signatureScope === 'current-turn') for (let i = 0; i < kinds.length; i++) if (kinds[i] === 'user') from = i + 1;
  for (let i = from; i < contents.length; i++) {
    if (kinds[i] !== 'call') continue;
    for (const part of (contents[i] as { parts: WirePart[] }).parts) {
      if (!part.functionCall) continue;
      const expected = memory.signatures.get(callKey(part.functionCall));
      if (expected === undefined || expected === null || part.thoughtSignature === expected || part.thoughtSignature === SKIP_VALIDATOR) continue;
      const name = String(part.functionCall.name);
      if (part.thoughtSignature === undefined) {
        return refuse('GM-4', `the call ${name} of contents[${i}] lost its thoughtSignature`, missingSignature(name, i + 1));
      }
      return refuse('GM-4', `the call ${name} of contents[${i}] carries another thoughtSignature`, CORRUPTED_SIGNATURE);
    }
  }
  return null;
}

/** What the agent script answered: the parts of one model turn. */
interface GeminiAgentReply {
  kind: 'calls' | 'answer';
  parts: Part[];
}

export type StrictGeminiProvider = StrictFakeProvider<GeminiAgentReply, GoogleErrorBody>;

export interface StrictGeminiOptions extends StrictFakeOptions, GeminiValidateOptions {}

function systemText(system: unknown): string | undefined {
  if (typeof system === 'string') return system;
  const parts = (system as { parts?: unknown } | undefined)?.parts;
  const first = Array.isArray(parts) ? (parts[0] as { text?: unknown } | undefined) : undefined;
  return typeof first?.text === 'string' ? first.text : undefined;
}

const ROUTE = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

export async function startStrictGemini(options: StrictGeminiOptions = {}): Promise<StrictGeminiProvider> {
  const agentModel = options.agentModel ?? 'agent-model';
  const largeArgumentsChance = options.largeArgumentsChance ?? 0.15;
  const requests: StrictRequestRecord<GoogleErrorBody>[] = [];
  const rejections: StrictRequestRecord<GoogleErrorBody>[] = [];
  const agentReplies: GeminiAgentReply[] = [];
  const memory = newMemory();
  const scriptOf = agentScripts(options.seed ?? 1, agentModel);
  let responseCounter = 0;

  function agentParts(model: string, contents: Content[]): GeminiAgentReply {
    const script = scriptOf(model);
    const last = contents.at(-1);
    const afterUserRequest = (last?.role ?? 'user') === 'user' && !last?.parts?.some((p) => p.functionResponse !== undefined);
    const step = nextStep(script, afterUserRequest, largeArgumentsChance);
    if (step.kind === 'answer') return { kind: 'answer', parts: [{ text: step.text }] };
    const parts: Part[] = step.calls.map((c, k) => {
      const signature = k === 0 ? opaqueToken(script.rand, 'Cs', 64) : null;
      memory.signatures.set(callKey({ name: c.name, args: c.args }), signature);
      return { functionCall: { name: c.name, args: c.args }, ...(signature ? { thoughtSignature: signature } : {}) };
    });
    return { kind: 'calls', parts };
  }

  const server = await serveLocal(async (req, res) => {
    const route = req.method === 'POST' ? ROUTE.exec(req.path) : null;
    if (!route) {
      sendJson(res, 404, { error: { code: 404, message: `Method not found: ${req.method} ${req.path}`, status: 'NOT_FOUND' } });
      return;
    }
    const model = decodeURIComponent(route[1]);
    const stream = route[2] === 'streamGenerateContent';
    const body = req.body as { contents?: unknown; systemInstruction?: unknown } | undefined;
    const summariser =
      (options.summariserModel !== undefined && model === options.summariserModel) || !!systemText(body?.systemInstruction)?.startsWith(SUMMARISER_PREFIX);
    const caller: Caller = summariser ? 'summariser' : model.startsWith(agentModel) ? 'agent' : 'other';
    const refusal = validateGeminiRequest(body, memory, options);
    const record = recordOf({ caller, model, path: req.path, stream, items: Array.isArray(body?.contents) ? body.contents.length : 0, body }, refusal);
    requests.push(record);
    if (refusal) {
      rejections.push(record);
      sendJson(res, refusal.status, refusal.body);
      return;
    }
    const contents = body!.contents as Content[];
    let reply: GeminiAgentReply;
    if (caller === 'agent') {
      reply = agentParts(model, contents);
      agentReplies.push(reply);
    } else {
      const chars = JSON.stringify(contents).length;
      const n = responseCounter + 1;
      const text = caller === 'summariser' ? `Goal: continue the coding work.\nCompleted actions: summary ${n} of ${chars} characters.` : `Reply ${n}: noted.`;
      reply = { kind: 'answer', parts: [{ text }] };
    }
    const answer = (parts: Part[], final: boolean): GenerateContentResponse =>
      ({
        candidates: [{ content: { role: 'model', parts }, index: 0, ...(final ? { finishReason: 'STOP' } : {}) }],
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 },
        modelVersion: model,
        responseId: `gm_${++responseCounter}`,
      }) as GenerateContentResponse;
    if (!stream) {
      sendJson(res, 200, answer(reply.parts, true));
      return;
    }
    // Streamed: a text answer in two chunks, calls in one chunk (Gemini does not split a call).
    const only = reply.parts[0];
    const chunks =
      reply.kind === 'answer' && typeof only.text === 'string'
        ? [[{ text: only.text.slice(0, Math.ceil(only.text.length / 2)) }], [{ text: only.text.slice(Math.ceil(only.text.length / 2)) }]]
        : [reply.parts];
    sendEvents(
      res,
      chunks.map((parts, k) => ({ data: answer(parts, k === chunks.length - 1) })),
    );
  });

  return { url: server.origin, requests, rejections, agentReplies, close: () => server.close() };
}
