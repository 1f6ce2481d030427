/**
 * A strict local OpenAI Responses API server for tests: POST /v1/responses, streamed (SSE)
 * and not. It validates the `input` items the way OpenAI does and answers with OpenAI's
 * status, error body (`{error:{message, type:'invalid_request_error', param, code}}`) and
 * message exactly where OpenAI would refuse the transcript (rules RS-1…RS-8 of
 * /work/shared/reference/provider-rules.md). Every request is recorded, and every refusal
 * with its rule and reason, so a test can assert "0 rejected" and know that the assertion
 * could fail.
 *
 * Stateful like OpenAI: the server remembers what it generated — for every message and
 * function_call item id (`msg_…`, `fc_…`) the reasoning item of its response (RS-4), the
 * `encrypted_content` of every reasoning item and the model it was made for (RS-7), every
 * item (for `item_reference` while `store` is not false, RS-5) and every response (for
 * `previous_response_id`).
 *
 * It serves two callers:
 * - the service's summariser (its instructions, or the first input text, start "You compact
 *   the transcript", or it asks for `summariserModel`): answered with an assistant message
 *   holding a summary text;
 * - a scripted agent (model `agent-model`, or any model starting with it, each with its own
 *   script): answered from a seeded script with a reasoning item (`rs_…`, an opaque
 *   `encrypted_content`, `summary: []`) followed by one or several function_call items
 *   (`fc_…` ids, `call_…` call ids, JSON arguments, sometimes 5-20 KB) or by an assistant
 *   message (`msg_…`).
 *
 * `url` is the OpenAI SDK's `baseURL` (it ends in /v1).
 */
import type { ResponseOutputItem, ResponseStreamEvent } from 'openai/resources/responses/responses';
import {
  agentScripts,
  type Caller,
  nextStep,
  opaqueToken,
  recordOf,
  type ScriptStep,
  sendEvents,
  sendJson,
  serveLocal,
  type StrictFakeOptions,
  type StrictFakeProvider,
  type StrictRefusal,
  type StrictRequestRecord,
  SUMMARISER_PREFIX,
} from './strict-fake';

interface OpenAiErrorBody {
  error: { message: string; type: 'invalid_request_error'; param: string | null; code: string | null };
}

type ResponsesRefusal = StrictRefusal<OpenAiErrorBody>;

/** What the server generated, which later requests are checked against. */
interface ResponsesMemory {
  /** Message / function_call item id → the id of the reasoning item of its response. */
  reasoningOf: Map<string, string>;
  /** Reasoning item id → its encrypted content and the model it was generated for. */
  reasoning: Map<string, { encryptedContent: string; model: string }>;
  /** Every generated item, by id, and whether it was generated with `store` on. */
  items: Map<string, { item: Item; stored: boolean }>;
  /** Every response, by id: its whole context (input and output items) and whether it was stored. */
  responses: Map<string, { context: Item[]; stored: boolean }>;
  /**
   * Compaction item id (`cmp_…`) → its encrypted content and the model that made it
   * (`/responses/compact`). Absent in a stateless check: compaction items are then taken as they come.
   */
  compactions?: Map<string, { encryptedContent: string; model: string }>;
}

const newMemory = (): ResponsesMemory => ({ reasoningOf: new Map(), reasoning: new Map(), items: new Map(), responses: new Map() });

type Item = Record<string, unknown>;

const refuse = (
  rule: string,
  reason: string,
  message: string,
  param: string | null,
  code: string | null = null,
  status = 400,
): { refusal: ResponsesRefusal } => ({
  refusal: { status, rule, reason, body: { error: { message, type: 'invalid_request_error', param, code } } },
});

const missing = (field: string, rule = 'shape') =>
  refuse(rule, `${field} is missing`, `Missing required parameter: '${field}'.`, field, 'missing_required_parameter');

/** `type` of an input item; an easy input message has a role and no type, an item reference only an id. */
const kindOf = (item: Item): string => (typeof item.type === 'string' ? item.type : 'role' in item ? 'message' : 'item_reference');

/** The items a reasoning item can belong to: the assistant message or a tool call of its response. */
const OUTPUT_KINDS = new Set(['function_call', 'custom_tool_call', 'mcp_call', 'mcp_list_tools', 'mcp_approval_request', 'item_reference']);
const canFollowReasoning = (item: Item | undefined): boolean => {
  if (!item) return false;
  const kind = kindOf(item);
  return (kind === 'message' && item.role === 'assistant') || OUTPUT_KINDS.has(kind) || kind.endsWith('_call');
};

export const notPersisted = (id: string) =>
  `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`;

/**
 * Checks a request and returns what the server would work from: the whole context (the
 * previous response's, if `previous_response_id` names one, then the input with item
 * references resolved), or the refusal.
 */
function analyse(body: unknown, memory: ResponsesMemory): { refusal: ResponsesRefusal } | { context: Item[] } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return refuse('shape', 'the body is not a JSON object', 'We could not parse the JSON body of your request.', null);
  }
  const b = body as { model?: unknown; input?: unknown; store?: unknown; previous_response_id?: unknown };
  if (typeof b.model !== 'string' || b.model.length === 0) return missing('model');

  let context: Item[] = [];
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) {
    const id = String(b.previous_response_id);
    const previous = memory.responses.get(id);
    if (!previous?.stored) {
      return refuse('shape', `no stored response ${id}`, `Previous response with id '${id}' not found.`, 'previous_response_id', 'previous_response_not_found');
    }
    context = [...previous.context];
  }

  let input: unknown[];
  if (typeof b.input === 'string') input = [{ role: 'user', content: b.input }];
  else if (Array.isArray(b.input)) input = b.input;
  else if (b.input === undefined && context.length > 0) input = [];
  else if (b.input === undefined) return missing('input');
  else
    return refuse(
      'shape',
      'input is neither a string nor an array',
      "Invalid type for 'input': expected one of a string or array of input items, but got an object instead.",
      'input',
      'invalid_type',
    );

  // Each item's own shape.
  for (let i = 0; i < input.length; i++) {
    const raw = input[i];
    const at = `input[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      return refuse(
        'shape',
        `${at} is not an object`,
        `Invalid type for '${at}': expected an input item, but got ${Array.isArray(raw) ? 'an array' : typeof raw} instead.`,
        at,
        'invalid_type',
      );
    }
    const item = raw as Item;
    const kind = kindOf(item);
    if (kind === 'message') {
      if (!['user', 'assistant', 'system', 'developer'].includes(item.role as string)) {
        return refuse(
          'shape',
          `${at} has role ${String(item.role)}`,
          `Invalid value: '${String(item.role)}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`,
          `${at}.role`,
          'invalid_value',
        );
      }
      if (typeof item.content !== 'string' && !Array.isArray(item.content)) {
        if (item.content === undefined) return missing(`${at}.content`);
        return refuse(
          'shape',
          `${at}.content is neither a string nor an array`,
          `Invalid type for '${at}.content': expected one of a string or array of input content items, but got ${item.content === null ? 'null' : typeof item.content} instead.`,
          `${at}.content`,
          'invalid_type',
        );
      }
    } else if (kind === 'function_call') {
      for (const field of ['call_id', 'name', 'arguments']) if (typeof item[field] !== 'string') return missing(`${at}.${field}`);
    } else if (kind === 'function_call_output') {
      if (typeof item.call_id !== 'string') return missing(`${at}.call_id`);
      if (typeof item.output !== 'string' && !Array.isArray(item.output)) return missing(`${at}.output`);
    } else if (kind === 'reasoning') {
      // Stateless clients (Codex with store:false) send reasoning by its encrypted content, without an id.
      if (typeof item.id !== 'string' && typeof item.encrypted_content !== 'string') return missing(`${at}.id`);
      if (item.summary === undefined) return missing(`${at}.summary`, 'RS-8');
      if (!Array.isArray(item.summary)) {
        return refuse(
          'RS-8',
          `${at}.summary is not an array`,
          `Invalid type for '${at}.summary': expected an array, but got ${item.summary === null ? 'null' : typeof item.summary} instead.`,
          `${at}.summary`,
          'invalid_type',
        );
      }
    } else if (kind === 'item_reference') {
      if (typeof item.id !== 'string') return missing(`${at}.id`);
    }
  }

  // RS-5: with `store: false` nothing can be looked up by id; otherwise a reference is
  // resolved to the item it names (when this server generated it with `store` on).
  const store = b.store !== false;
  for (const raw of input) {
    const item = raw as Item;
    const kind = kindOf(item);
    const id = item.id as string;
    if (kind === 'item_reference') {
      const known = memory.items.get(id);
      if (!store || (known && !known.stored)) return refuse('RS-5', `item_reference ${id} with store:false`, notPersisted(id), 'input', null, 404);
      if (!known) return refuse('RS-5', `item_reference ${id} names no item`, `Item with id '${id}' not found.`, 'input', null, 404);
      context.push(known.item);
      continue;
    }
    if (kind === 'reasoning' && !store && typeof item.encrypted_content !== 'string') {
      return refuse('RS-5', `reasoning ${id} without encrypted_content under store:false must be looked up`, notPersisted(id), 'input', null, 404);
    }
    context.push(item);
  }

  // RS-6: no item id twice.
  const ids = new Set<string>();
  for (const item of context) {
    if (typeof item.id !== 'string') continue;
    if (ids.has(item.id)) {
      return refuse(
        'RS-6',
        `item id ${item.id} appears twice`,
        `Duplicate item found with id ${item.id}. Remove duplicate items from your input and try again.`,
        'input',
      );
    }
    ids.add(item.id);
  }

  // RS-1: every output answers an earlier call.
  const calls = new Set<string>();
  for (const item of context) {
    const kind = kindOf(item);
    if (kind === 'function_call') calls.add(item.call_id as string);
    if (kind === 'function_call_output' && !calls.has(item.call_id as string)) {
      const callId = item.call_id as string;
      return refuse(
        'RS-1',
        `function_call_output ${callId} has no earlier function_call`,
        `No tool call found for function call output with call_id ${callId}.`,
        'input',
      );
    }
  }

  // RS-3: a reasoning item is followed by an item of its response.
  for (let k = 0; k < context.length; k++) {
    if (kindOf(context[k]) !== 'reasoning' || canFollowReasoning(context[k + 1])) continue;
    const id = context[k].id as string;
    const next = context[k + 1];
    return refuse(
      'RS-3',
      `reasoning ${id} is followed by ${next ? kindOf(next) : 'nothing'}`,
      `Item '${id}' of type 'reasoning' was provided without its required following item.`,
      'input',
    );
  }

  // RS-4: an item that keeps a generated id comes after the reasoning item of its response.
  const reasoningSeen = new Set<string>();
  for (const item of context) {
    const kind = kindOf(item);
    if (kind === 'reasoning') reasoningSeen.add(item.id as string);
    const id = typeof item.id === 'string' ? item.id : undefined;
    const reasoning = id !== undefined ? memory.reasoningOf.get(id) : undefined;
    if (reasoning !== undefined && !reasoningSeen.has(reasoning)) {
      return refuse(
        'RS-4',
        `${kind} ${id} keeps its id but its reasoning ${reasoning} is not before it`,
        `Item '${id}' of type '${kind}' was provided without its required 'reasoning' item: '${reasoning}'.`,
        'input',
      );
    }
  }

  // RS-7: encrypted content comes back byte-identical, to the model it was made for.
  for (const item of context) {
    if (kindOf(item) !== 'reasoning' || typeof item.encrypted_content !== 'string') continue;
    const original = memory.reasoning.get(item.id as string);
    if (!original) continue;
    if (item.encrypted_content !== original.encryptedContent || original.model !== b.model) {
      const why = original.model !== b.model ? `was generated for ${original.model}, not ${b.model}` : 'was modified';
      return refuse(
        'RS-7',
        `encrypted_content of ${String(item.id)} ${why}`,
        `The encrypted content for item ${String(item.id)} could not be verified.`,
        null,
        'invalid_encrypted_content',
      );
    }
  }

  // RS-7 for compaction items: only the model that made one reads it, byte-exact; an item this
  // server never made (forged, altered id) is refused the same way.
  for (const item of memory.compactions ? context : []) {
    if (kindOf(item) !== 'compaction') continue;
    const original = typeof item.id === 'string' ? memory.compactions?.get(item.id) : undefined;
    if (!original || item.encrypted_content !== original.encryptedContent || original.model !== b.model) {
      const why = !original ? 'was not made here' : original.model !== b.model ? `was made by ${original.model}, not ${b.model}` : 'was modified';
      return refuse(
        'RS-7',
        `compaction item ${String(item.id)} ${why}`,
        `The encrypted content for item ${String(item.id)} could not be verified.`,
        null,
        'invalid_encrypted_content',
      );
    }
  }

  // RS-2: every call is answered before the model is asked again (the end of the input).
  const answered = new Set(context.filter((item) => kindOf(item) === 'function_call_output').map((item) => item.call_id as string));
  for (const item of context) {
    if (kindOf(item) === 'function_call' && !answered.has(item.call_id as string)) {
      const callId = item.call_id as string;
      return refuse('RS-2', `function_call ${callId} has no output`, `No tool output found for function call ${callId}.`, 'input');
    }
  }
  return { context };
}

/**
 * Validates a Responses API request body as OpenAI does. Returns the refusal (HTTP status,
 * OpenAI's error body, the rule and the reason), or null when the request is acceptable.
 * Without `memory` it knows no generated item (the stateful rules RS-4, RS-7 and references
 * then only see the request itself).
 */
export function validateResponsesRequest(body: unknown, memory: ResponsesMemory = newMemory()): ResponsesRefusal | null {
  const result = analyse(body, memory);
  return 'refusal' in result ? result.refusal : null;
}

/** What the agent script answered: the output items of one response. */
interface ResponsesAgentReply {
  kind: 'calls' | 'answer';
  responseId: string;
  output: ResponseOutputItem[];
}

/**
 * A fault the next `/responses/compact` request answers with: a 500 server error, an answer
 * with no compaction item (codex#42393), or no answer for `hangMs` (a hung provider).
 */
type CompactFault = 'error' | 'no-item' | 'hang';

/** What a test drives and reads of the fake's `/responses/compact`. */
interface ResponsesCompaction {
  /** Faults for the next compact requests, one each, in order. */
  faults: CompactFault[];
  /** How long a 'hang' holds its answer back. */
  hangMs: number;
  /** Every compact request, in arrival order (refused ones too), with its body. */
  requests: StrictRequestRecord<OpenAiErrorBody>[];
  /** Every compaction item made, by id: the model that made it. */
  made: Map<string, string>;
  /** The usage of every compaction answered, as sent: what the provider billed. */
  billed: Array<{ input_tokens: number; input_tokens_details: { cached_tokens: number }; output_tokens: number }>;
}

export type StrictResponsesProvider = StrictFakeProvider<ResponsesAgentReply, OpenAiErrorBody> & { compaction: ResponsesCompaction };

/** The text of the first input item, when it is a message (string content or first text part). */
function firstText(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  const first = Array.isArray(input) ? (input[0] as Item | undefined) : undefined;
  if (!first || kindOf(first) !== 'message') return undefined;
  if (typeof first.content === 'string') return first.content;
  const part = Array.isArray(first.content) ? (first.content[0] as { text?: unknown } | undefined) : undefined;
  return typeof part?.text === 'string' ? part.text : undefined;
}

const outputText = (text: string) => ({ type: 'output_text' as const, text, annotations: [], logprobs: [] });

export async function startStrictResponses(options: StrictFakeOptions = {}): Promise<StrictResponsesProvider> {
  const agentModel = options.agentModel ?? 'agent-model';
  const largeArgumentsChance = options.largeArgumentsChance ?? 0.15;
  const requests: StrictRequestRecord<OpenAiErrorBody>[] = [];
  const rejections: StrictRequestRecord<OpenAiErrorBody>[] = [];
  const agentReplies: ResponsesAgentReply[] = [];
  const memory: ResponsesMemory = { ...newMemory(), compactions: new Map() };
  const scriptOf = agentScripts(options.seed ?? 1, agentModel);
  let responseCounter = 0;
  let otherCounter = 0;

  function agentOutput(model: string, context: Item[]): { kind: 'calls' | 'answer'; output: ResponseOutputItem[] } {
    const script = scriptOf(model);
    const last = context.at(-1);
    const step: ScriptStep = options.answersOnly
      ? { kind: 'answer', replyNo: script.reply(), text: `Answer ${script.tag}: noted, and the order number you gave me is in this conversation.` }
      : nextStep(script, !!last && kindOf(last) === 'message' && last.role === 'user', largeArgumentsChance);
    const reasoning = {
      id: `rs_${script.tag}_${step.replyNo}`,
      type: 'reasoning' as const,
      summary: [],
      encrypted_content: opaqueToken(script.rand, 'gAAAAA', 96),
    };
    if (step.kind === 'answer') {
      const message = {
        id: `msg_${script.tag}_${step.replyNo}`,
        type: 'message' as const,
        role: 'assistant' as const,
        status: 'completed' as const,
        content: [outputText(step.text)],
      };
      return { kind: 'answer', output: [reasoning, message] };
    }
    const calls = step.calls.map((c) => ({
      id: `fc_${script.tag}_${c.n}`,
      type: 'function_call' as const,
      status: 'completed' as const,
      call_id: `call_${script.tag}_${c.n}`,
      name: c.name,
      arguments: JSON.stringify(c.args),
    }));
    return { kind: 'calls', output: [reasoning, ...calls] };
  }

  const compaction: ResponsesCompaction = { faults: [], hangMs: 60_000, requests: [], made: new Map(), billed: [] };
  let compactCounter = 0;

  /**
   * `POST /responses/compact`: the input checked like any other (a compaction item it did not
   * make for this model, byte-exact, is refused as `invalid_encrypted_content`), then every user
   * message verbatim followed by one `{type:'compaction', id:'cmp_…', encrypted_content}` item.
   */
  async function compact(body: { model?: unknown; input?: unknown; instructions?: unknown } | undefined, res: Parameters<Parameters<typeof serveLocal>[0]>[1]) {
    const result = analyse(body, memory);
    const model = String(body?.model);
    const refusal = 'refusal' in result ? result.refusal : null;
    const record = recordOf(
      { caller: 'other', model, path: '/v1/responses/compact', stream: false, items: Array.isArray(body?.input) ? body.input.length : 1, body },
      refusal,
    );
    requests.push(record);
    compaction.requests.push({ ...record, body });
    if ('refusal' in result) {
      rejections.push(record);
      sendJson(res, result.refusal.status, result.refusal.body);
      return;
    }
    const fault = compaction.faults.shift();
    if (fault === 'error') {
      sendJson(res, 500, {
        error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: 'server_error' },
      });
      return;
    }
    if (fault === 'hang') await new Promise((resolve) => setTimeout(resolve, compaction.hangMs));
    const n = ++compactCounter;
    const users = result.context.filter((item) => kindOf(item) === 'message' && item.role === 'user');
    const chars = JSON.stringify(result.context).length;
    const id = `cmp_${n}`;
    const encrypted = `gAAAAA${Buffer.from(JSON.stringify({ id, model, chars, items: result.context.length })).toString('base64')}`;
    const output: Item[] = fault === 'no-item' ? users : [...users, { id, type: 'compaction', encrypted_content: encrypted }];
    if (fault !== 'no-item') {
      memory.compactions?.set(id, { encryptedContent: encrypted, model });
      compaction.made.set(id, model);
    }
    const inputTokens = Math.ceil(chars / 4);
    const usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 200,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + 200,
    };
    compaction.billed.push(usage);
    sendJson(res, 200, { id: `resp_cmp_${n}`, object: 'response.compaction', created_at: Math.floor(Date.now() / 1000), output, usage });
  }

  const server = await serveLocal(async (req, res) => {
    if (req.method === 'POST' && req.path === '/v1/responses/compact') {
      await compact(req.body as { model?: unknown; input?: unknown; instructions?: unknown } | undefined, res);
      return;
    }
    if (req.method !== 'POST' || req.path !== '/v1/responses') {
      sendJson(res, 404, { error: { message: `Invalid URL (${req.method} ${req.path})`, type: 'invalid_request_error', param: null, code: null } });
      return;
    }
    const body = req.body as { model?: unknown; input?: unknown; instructions?: unknown; stream?: unknown; store?: unknown } | undefined;
    const model = String(body?.model);
    const summariser =
      (options.summariserModel !== undefined && model === options.summariserModel) ||
      (typeof body?.instructions === 'string' && body.instructions.startsWith(SUMMARISER_PREFIX)) ||
      !!firstText(body?.input)?.startsWith(SUMMARISER_PREFIX);
    const caller: Caller = summariser ? 'summariser' : model.startsWith(agentModel) ? 'agent' : 'other';
    const result = analyse(body, memory);
    const refusal = 'refusal' in result ? result.refusal : null;
    const record = recordOf(
      { caller, model, path: req.path, stream: body?.stream === true, items: Array.isArray(body?.input) ? body.input.length : 1, body },
      refusal,
    );
    requests.push(record);
    if ('refusal' in result) {
      rejections.push(record);
      sendJson(res, result.refusal.status, result.refusal.body);
      return;
    }

    const stored = body?.store !== false;
    const responseId = `resp_${++responseCounter}`;
    let output: ResponseOutputItem[];
    if (caller === 'agent') {
      const reply = agentOutput(model, result.context);
      output = reply.output;
      agentReplies.push({ ...reply, responseId });
      const reasoning = output[0] as { id: string; encrypted_content: string };
      memory.reasoning.set(reasoning.id, { encryptedContent: reasoning.encrypted_content, model });
      for (const item of output.slice(1)) memory.reasoningOf.set((item as { id: string }).id, reasoning.id);
    } else {
      const n = ++otherCounter;
      const chars = JSON.stringify(result.context).length;
      const text = caller === 'summariser' ? `Goal: continue the coding work.\nCompleted actions: summary ${n} of ${chars} characters.` : `Reply ${n}: noted.`;
      output = [{ id: `msg_other_${n}`, type: 'message', role: 'assistant', status: 'completed', content: [outputText(text)] }];
    }
    for (const item of output) memory.items.set((item as { id: string }).id, { item: item as unknown as Item, stored });
    memory.responses.set(responseId, { context: [...result.context, ...(output as unknown as Item[])], stored });

    const response = {
      id: responseId,
      object: 'response' as const,
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed' as const,
      completed_at: Math.floor(Date.now() / 1000),
      error: null,
      incomplete_details: null,
      instructions: typeof body?.instructions === 'string' ? body.instructions : null,
      metadata: {},
      model,
      output,
      parallel_tool_calls: true,
      temperature: 1,
      tool_choice: 'auto' as const,
      tools: [],
      top_p: 1,
      store: stored,
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 20,
        output_tokens_details: { reasoning_tokens: 10 },
        total_tokens: 120,
      },
    };
    if (body?.stream !== true) {
      sendJson(res, 200, response);
      return;
    }
    sendEvents(
      res,
      streamEvents(response).map((data) => ({ event: data.type, data })),
    );
  });

  return { url: `${server.origin}/v1`, requests, rejections, agentReplies, compaction, close: () => server.close() };
}

/** The events OpenAI streams for a response: created, each item added / filled / done, completed. */
function streamEvents(response: { output: ResponseOutputItem[] } & Record<string, unknown>): ResponseStreamEvent[] {
  const events: Record<string, unknown>[] = [];
  events.push({ type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } });
  response.output.forEach((item, output_index) => {
    const at = { item_id: item.id, output_index };
    if (item.type === 'message') {
      const text = item.content.map((part) => (part.type === 'output_text' ? part.text : '')).join('');
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } });
      events.push({ type: 'response.content_part.added', ...at, content_index: 0, part: outputText('') });
      const half = Math.ceil(text.length / 2);
      for (const delta of [text.slice(0, half), text.slice(half)]) {
        events.push({ type: 'response.output_text.delta', ...at, content_index: 0, delta, logprobs: [] });
      }
      events.push({ type: 'response.output_text.done', ...at, content_index: 0, text, logprobs: [] });
      events.push({ type: 'response.content_part.done', ...at, content_index: 0, part: outputText(text) });
    } else if (item.type === 'function_call') {
      events.push({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      const step = Math.max(1, Math.ceil(item.arguments.length / 3));
      for (let k = 0; k < item.arguments.length; k += step) {
        events.push({ type: 'response.function_call_arguments.delta', ...at, delta: item.arguments.slice(k, k + step) });
      }
      events.push({ type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: item.arguments });
    } else {
      const { encrypted_content: _hidden, ...bare } = item as unknown as { encrypted_content?: unknown } & Record<string, unknown>;
      events.push({ type: 'response.output_item.added', output_index, item: bare });
    }
    events.push({ type: 'response.output_item.done', output_index, item });
  });
  events.push({ type: 'response.completed', response });
  return events.map((event, sequence_number) => ({ ...event, sequence_number }) as unknown as ResponseStreamEvent);
}
