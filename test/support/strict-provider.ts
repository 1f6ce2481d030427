/**
 * A strict local OpenAI-compatible chat-completions server for tests: POST
 * /v1/chat/completions, streamed (SSE) and not. Unlike fake-llm.ts it validates every request
 * the way the OpenAI chat API does and answers HTTP 400, with OpenAI's error body shape and
 * messages, exactly where OpenAI would reject the transcript (tool results without their
 * call, calls without their results, duplicate ids, null content, unknown roles, an empty
 * array). Every request is recorded, and every rejection with its reason, so a test can
 * assert "0 rejected" and know that the assertion could fail.
 *
 * It serves two callers:
 * - the service's summariser (its system prompt starts "You compact the transcript", or it
 *   asks for `summariserModel`): answered with a short summary text;
 * - a scripted agent (model `agent-model`): answered from a deterministic seeded script of a
 *   coding agent: tool calls (single or parallel, sometimes with large arguments) or a plain
 *   answer. The same seed gives the same replies in the same order.
 *
 * The error texts are OpenAI's as observed in public bug reports (including its spelling
 * "preceeding"); where OpenAI's exact wording is not on record (duplicate ids inside
 * `tool_calls`) the text follows the same pattern and says which rule fired.
 */
import { sendCompletion, serveChatCompletions, startChunkStream } from './openai-server';

export interface OpenAiError {
  message: string;
  type: 'invalid_request_error';
  param: string | null;
  code: string | null;
}

const KNOWN_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

const invalid = (message: string, param: string | null, code: string | null = null): OpenAiError => ({ message, type: 'invalid_request_error', param, code });

export const TOOL_WITHOUT_CALL = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
export const CALL_WITHOUT_RESULT =
  "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ";

interface WireToolCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

interface WireMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
}

/**
 * Validates a chat-completions request body as the OpenAI API does. Returns the error OpenAI
 * would answer with (HTTP 400), or null when the request is acceptable.
 */
export function validateChatRequest(body: unknown): OpenAiError | null {
  if (!body || typeof body !== 'object') return invalid('We could not parse the JSON body of your request.', null);
  const { model, messages } = body as { model?: unknown; messages?: unknown };
  if (typeof model !== 'string' || model.length === 0) return invalid('you must provide a model parameter', null);
  if (messages === undefined) return invalid("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(messages)) return invalid("Invalid type for 'messages': expected an array, but got an object instead.", 'messages', 'invalid_type');
  if (messages.length === 0) {
    return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array');
  }

  // Per-message shape.
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as WireMessage;
    if (!m || typeof m !== 'object')
      return invalid(`Invalid type for 'messages[${i}]': expected an object, but got ${typeof m} instead.`, `messages[${i}]`, 'invalid_type');
    if (typeof m.role !== 'string' || !KNOWN_ROLES.includes(m.role)) {
      return invalid(
        `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      );
    }
    const hasCalls = m.tool_calls !== undefined && m.tool_calls !== null;
    if (hasCalls && m.role !== 'assistant') {
      return invalid(`Invalid parameter: only messages with role 'assistant' can have 'tool_calls'.`, `messages.[${i}].tool_calls`);
    }
    if (hasCalls) {
      if (!Array.isArray(m.tool_calls))
        return invalid(
          `Invalid type for 'messages[${i}].tool_calls': expected an array, but got an object instead.`,
          `messages[${i}].tool_calls`,
          'invalid_type',
        );
      if (m.tool_calls.length === 0) {
        return invalid(
          `Invalid 'messages[${i}].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
          `messages[${i}].tool_calls`,
          'empty_array',
        );
      }
      for (let j = 0; j < m.tool_calls.length; j++) {
        const c = m.tool_calls[j] as WireToolCall;
        if (typeof c?.id !== 'string')
          return invalid(
            `Missing required parameter: 'messages[${i}].tool_calls[${j}].id'.`,
            `messages[${i}].tool_calls[${j}].id`,
            'missing_required_parameter',
          );
        if (c.type !== 'function')
          return invalid(
            `Missing required parameter: 'messages[${i}].tool_calls[${j}].type'.`,
            `messages[${i}].tool_calls[${j}].type`,
            'missing_required_parameter',
          );
        if (typeof c.function?.name !== 'string' || typeof c.function?.arguments !== 'string') {
          return invalid(
            `Missing required parameter: 'messages[${i}].tool_calls[${j}].function'.`,
            `messages[${i}].tool_calls[${j}].function`,
            'missing_required_parameter',
          );
        }
      }
    }
    const content = m.content;
    if (content === null || content === undefined) {
      if (!(m.role === 'assistant' && hasCalls)) return invalid("Invalid value for 'content': expected a string, got null.", `messages.[${i}].content`);
    } else if (typeof content !== 'string' && !Array.isArray(content)) {
      return invalid(
        `Invalid type for 'messages[${i}].content': expected one of a string or array of objects, but got an object instead.`,
        `messages[${i}].content`,
        'invalid_type',
      );
    }
    if (m.name !== undefined && (typeof m.name !== 'string' || !/^[^\s<|\\/>]+$/.test(m.name))) {
      return invalid(
        `Invalid 'messages[${i}].name': string does not match pattern. Expected a string that matches the pattern '^[^\\s<|\\\\/>]+$'.`,
        `messages[${i}].name`,
        'invalid_value',
      );
    }
    if (m.role === 'tool' && typeof m.tool_call_id !== 'string') {
      return invalid("Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.", `messages.[${i}].tool_call_id`);
    }
  }

  // Tool-call structure: every result follows its call, every call is answered before the
  // next non-tool message (and before the end), each id is used once.
  const callAt = new Map<string, number>(); // tool_call id -> index of the assistant message
  let open: { index: number; ids: string[]; answeredAt: Map<string, number> } | undefined;
  const unanswered = () => (open ? open.ids.filter((id) => !open!.answeredAt.has(id)) : []);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as WireMessage;
    if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      if (!open || !open.ids.includes(id)) return invalid(TOOL_WITHOUT_CALL, `messages.[${i}].role`);
      const earlier = open.answeredAt.get(id);
      if (earlier !== undefined) {
        return invalid(
          `Invalid parameter: Duplicate value for 'tool_call_id' of '${id}', in messages[${earlier}] and messages[${i}].`,
          `messages.[${i}].tool_call_id`,
        );
      }
      open.answeredAt.set(id, i);
      continue;
    }
    const missing = unanswered();
    if (missing.length > 0) return invalid(`${CALL_WITHOUT_RESULT}${missing.join(', ')}`, `messages.[${open!.index}].role`);
    open = undefined;
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      const ids: string[] = [];
      for (const c of m.tool_calls as WireToolCall[]) {
        const id = c.id as string;
        const earlier = callAt.get(id);
        if (earlier !== undefined) {
          return invalid(
            `Invalid parameter: Duplicate value for 'tool_calls[].id' of '${id}', in messages[${earlier}] and messages[${i}].`,
            `messages.[${i}].tool_calls`,
          );
        }
        callAt.set(id, i);
        ids.push(id);
      }
      open = { index: i, ids, answeredAt: new Map() };
    }
  }
  const missing = unanswered();
  if (missing.length > 0) return invalid(`${CALL_WITHOUT_RESULT}${missing.join(', ')}`, `messages.[${open!.index}].role`);
  return null;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Deterministic filler text of about `chars` characters, looking like source code or logs. */
export function fillerText(rand: () => number, chars: number, label: string): string {
  const words = ['const', 'value', 'parser', 'token', 'return', 'assert', 'expect', 'buffer', 'session', 'compact', 'error', 'line', 'ok', 'fail'];
  const lines: string[] = [];
  let n = 0;
  for (let line = 1; n < chars; line++) {
    const parts: string[] = [`${label}:${line}`];
    const count = 4 + Math.floor(rand() * 8);
    for (let k = 0; k < count; k++) parts.push(words[Math.floor(rand() * words.length)]);
    const text = parts.join(' ');
    lines.push(text);
    n += text.length + 1;
  }
  return lines.join('\n').slice(0, chars);
}

interface ScriptedToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

type AgentReply = { kind: 'tool_calls'; content: string | null; toolCalls: ScriptedToolCall[] } | { kind: 'answer'; content: string };

export interface StrictProviderOptions {
  /** Seed of the agent script. */
  seed?: number;
  /** The model the scripted agent asks for; any model starting with it is an agent with its own script. */
  agentModel?: string;
  /** The model the summariser asks for (COMPACTION_MODEL of the worker). */
  summariserModel?: string;
  /** Chance that a tool-call reply carries one call with large arguments (5-20 KB). */
  largeArgumentsChance?: number;
  /** Latency of each summary answer, so that appends land while a summary runs. */
  summaryDelayMs?: number;
}

type Caller = 'agent' | 'summariser' | 'other';

interface ProviderRequest {
  caller: Caller;
  model: string;
  stream: boolean;
  messageCount: number;
  /** The request body as received (kept for summariser requests and rejections only). */
  body?: unknown;
  status: number;
  error?: OpenAiError;
  at: number;
}

export interface StrictProvider {
  baseURL: string;
  /** Every request, in arrival order. */
  requests: ProviderRequest[];
  /** Every rejected (HTTP 400) request, with OpenAI's error. */
  rejections: ProviderRequest[];
  /** The replies the agent script has given, in order. */
  agentReplies: AgentReply[];
  close(): Promise<void>;
}

const TOOLS = ['run_tests', 'read_file', 'grep', 'edit_file', 'list_dir'] as const;

function isSummariserRequest(body: { model?: unknown; messages?: unknown }, summariserModel: string | undefined): boolean {
  if (summariserModel && body.model === summariserModel) return true;
  const first = Array.isArray(body.messages) ? (body.messages[0] as WireMessage | undefined) : undefined;
  return first?.role === 'system' && typeof first.content === 'string' && first.content.startsWith('You compact the transcript');
}

export async function startStrictProvider(options: StrictProviderOptions = {}): Promise<StrictProvider> {
  const agentModel = options.agentModel ?? 'agent-model';
  const largeArgumentsChance = options.largeArgumentsChance ?? 0.15;
  const requests: ProviderRequest[] = [];
  const rejections: ProviderRequest[] = [];
  const agentReplies: AgentReply[] = [];
  let summaryCounter = 0;
  // One script per agent model (`agent-model`, `agent-model-2`, ...), each seeded from the
  // seed and its name, so agents running at once each get a reproducible script.
  const scripts = new Map<string, { rand: () => number; calls: number; replies: number; tag: string }>();
  const scriptOf = (model: string) => {
    let script = scripts.get(model);
    if (!script) {
      let h = options.seed ?? 1;
      for (const ch of model) h = (Math.imul(h, 31) + ch.charCodeAt(0)) >>> 0;
      script = { rand: seededRandom(h), calls: 0, replies: 0, tag: `${options.seed ?? 1}${model === agentModel ? '' : `_${h.toString(36)}`}` };
      scripts.set(model, script);
    }
    return script;
  };

  function nextAgentReply(model: string, messages: WireMessage[]): AgentReply {
    const script = scriptOf(model);
    const { rand } = script;
    const replyNo = ++script.replies;
    const last = messages[messages.length - 1];
    // A fresh user request always starts work with tools; otherwise mostly more tools.
    if (last?.role !== 'user' && rand() < 0.2) {
      return { kind: 'answer', content: `Answer ${replyNo}: the step is done and the tests pass.` };
    }
    const calls = rand() < 0.35 ? 2 + Math.floor(rand() * 2) : 1;
    const large = rand() < largeArgumentsChance ? Math.floor(rand() * calls) : -1;
    const toolCalls: ScriptedToolCall[] = [];
    for (let k = 0; k < calls; k++) {
      const n = ++script.calls;
      const id = `call_${script.tag}_${n}`;
      if (k === large) {
        const text = fillerText(rand, 5_000 + Math.floor(rand() * 15_000), `edit-${n}`);
        toolCalls.push({ id, type: 'function', function: { name: 'edit_file', arguments: JSON.stringify({ path: `src/file-${n}.ts`, content: text }) } });
      } else {
        const name = TOOLS[Math.floor(rand() * TOOLS.length)];
        toolCalls.push({ id, type: 'function', function: { name, arguments: JSON.stringify({ target: `src/module-${n}.ts` }) } });
      }
    }
    return { kind: 'tool_calls', content: rand() < 0.5 ? null : `Reply ${replyNo}: running ${calls} tool(s).`, toolCalls };
  }

  const server = await serveChatCompletions(async (raw, _req, res) => {
    let body: { model?: unknown; messages?: unknown; stream?: unknown };
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined as never;
    }
    const caller: Caller =
      body && isSummariserRequest(body, options.summariserModel)
        ? 'summariser'
        : typeof body?.model === 'string' && body.model.startsWith(agentModel)
          ? 'agent'
          : 'other';
    const error = validateChatRequest(body);
    const record: ProviderRequest = {
      caller,
      model: String(body?.model),
      stream: body?.stream === true,
      messageCount: Array.isArray(body?.messages) ? body.messages.length : 0,
      status: error ? 400 : 200,
      at: Date.now(),
      ...(error ? { error, body } : caller === 'summariser' ? { body } : {}),
    };
    requests.push(record);
    if (error) {
      rejections.push(record);
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error }));
      return;
    }
    const model = String(body.model);
    const messages = body.messages as WireMessage[];
    let reply: AgentReply;
    if (caller === 'agent') {
      reply = nextAgentReply(model, messages);
      agentReplies.push(reply);
    } else {
      if (options.summaryDelayMs) await new Promise((resolve) => setTimeout(resolve, options.summaryDelayMs));
      summaryCounter++;
      const input = messages.map((m) => (typeof m.content === 'string' ? m.content.length : 0)).reduce((a, b) => a + b, 0);
      reply = { kind: 'answer', content: `Goal: continue the coding work.\nCompleted actions: summary ${summaryCounter} of ${input} characters.` };
    }
    const toolCalls = reply.kind === 'tool_calls' ? reply.toolCalls : undefined;
    const finishReason = toolCalls ? 'tool_calls' : 'stop';
    const id = `chatcmpl-${requests.length}`;
    if (body.stream !== true) {
      sendCompletion(res, {
        id,
        model,
        message: { role: 'assistant', content: reply.content, ...(toolCalls ? { tool_calls: toolCalls } : {}), refusal: null },
        finishReason,
      });
      return;
    }
    const stream = startChunkStream(res, id, model);
    stream.delta({ role: 'assistant', content: '' });
    if (reply.content) {
      const half = Math.ceil(reply.content.length / 2);
      stream.delta({ content: reply.content.slice(0, half) });
      stream.delta({ content: reply.content.slice(half) });
    }
    toolCalls?.forEach((call, index) => {
      stream.delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
      const args = call.function.arguments;
      const step = Math.max(1, Math.ceil(args.length / 3));
      for (let at = 0; at < args.length; at += step) stream.delta({ tool_calls: [{ index, function: { arguments: args.slice(at, at + step) } }] });
    });
    stream.delta({}, finishReason);
    stream.end();
  });

  return {
    baseURL: server.baseURL,
    requests,
    rejections,
    agentReplies,
    close: () => server.close(),
  };
}
