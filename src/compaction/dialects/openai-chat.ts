/**
 * OpenAI Chat Completions messages (`openai-chat`): what `completion.choices[0].message`
 * is, and what agents push onto their message arrays, with every extra field a real SDK or
 * gateway adds (`refusal`, `annotations`, `audio`, `tool_calls[].index`, `cache_control`,
 * `name` on tool results) kept as it came. Rules: provider-rules.md, CC-1 to CC-5.
 */
import { isJsonObject, type JsonObject, type JsonValue } from '../json';
import { SUMMARY_MESSAGE_NAME } from '../messages';
import { asText, buildGroups, type CallLink, carriesMarker, checkString, clip, mediaPlaceholder, objectProblem, openCallsOf, SUMMARY_PREFIX } from './common';
import type { Dialect, FieldProblem, Message, RenderCaps, StoredRole, ToolResult } from './types';

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

interface Call {
  id: string;
  name: string;
  input: string;
}

/** A message's tool calls (function or custom), or the legacy `function_call` as one call. */
function callsOf(m: Message): Call[] {
  const out: Call[] = [];
  if (Array.isArray(m.tool_calls)) {
    for (const c of m.tool_calls) {
      if (!isJsonObject(c)) continue;
      const fn = isJsonObject(c.function) ? c.function : isJsonObject(c.custom) ? c.custom : {};
      out.push({ id: String(c.id ?? ''), name: String(fn.name ?? ''), input: asText(fn.arguments ?? fn.input) });
    }
  }
  return out;
}

function contentText(content: JsonValue | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p) => (isJsonObject(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
}

function checkContentParts(parts: JsonValue[], field: string): FieldProblem | undefined {
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j];
    const at = `${field}[${j}]`;
    if (!isJsonObject(part)) return { field: at, detail: 'must be an object' };
    if (typeof part.type !== 'string' || part.type === '') return { field: `${at}.type`, detail: 'must be a non-empty string' };
    if (part.type === 'text' && typeof part.text !== 'string') return { field: `${at}.text`, detail: 'a text part needs a string text' };
  }
  return undefined;
}

function check(raw: unknown): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  if (typeof m.role !== 'string' || !ROLES.includes(m.role)) return { field: 'role', detail: `must be one of ${ROLES.join(', ')}` };
  const hasCalls = m.tool_calls !== undefined && m.tool_calls !== null;
  const hasFunctionCall = isJsonObject(m.function_call);
  if (hasCalls) {
    if (m.role !== 'assistant') return { field: 'tool_calls', detail: 'are only allowed on assistant messages' };
    if (!Array.isArray(m.tool_calls) || m.tool_calls.length === 0) return { field: 'tool_calls', detail: 'must be a non-empty array of tool calls' };
    for (let j = 0; j < m.tool_calls.length; j++) {
      const c = m.tool_calls[j];
      const at = `tool_calls[${j}]`;
      if (!isJsonObject(c)) return { field: at, detail: 'must be an object' };
      const id = checkString(c.id, `${at}.id`, 1, 256);
      if (id) return id;
      // Ids may come back in later turns (results pair by position), but never twice in one message.
      if (m.tool_calls.slice(0, j).some((o) => isJsonObject(o) && o.id === c.id)) return { field: `${at}.id`, detail: 'appears twice in this message' };
      if (c.type === 'function' || c.type === undefined) {
        if (!isJsonObject(c.function)) return { field: `${at}.function`, detail: 'must be an object with name and arguments' };
        const name = checkString(c.function.name, `${at}.function.name`, 1, 256);
        if (name) return name;
        if (typeof c.function.arguments !== 'string') return { field: `${at}.function.arguments`, detail: 'must be a string' };
      } else if (c.type === 'custom') {
        if (!isJsonObject(c.custom)) return { field: `${at}.custom`, detail: 'must be an object with name and input' };
        const name = checkString(c.custom.name, `${at}.custom.name`, 1, 256);
        if (name) return name;
        if (typeof c.custom.input !== 'string') return { field: `${at}.custom.input`, detail: 'must be a string' };
      } else {
        return { field: `${at}.type`, detail: 'must be "function" or "custom"' };
      }
    }
  }
  if (m.role === 'tool') {
    const id = checkString(m.tool_call_id, 'tool_call_id', 1, 256);
    if (id) return { field: 'tool_call_id', detail: 'is required on tool messages (a string of 1 to 256 characters)' };
  } else if (m.tool_call_id !== undefined) {
    return { field: 'tool_call_id', detail: 'is only allowed on tool messages' };
  }
  if (m.name !== undefined) {
    const name = checkString(m.name, 'name', 1, 256);
    if (name) return name;
  }
  const content = m.content;
  if (content === undefined || content === null) {
    if (!(m.role === 'assistant' && (hasCalls || hasFunctionCall || typeof m.refusal === 'string' || isJsonObject(m.audio)))) {
      return { field: 'content', detail: content === null ? 'may be null only on an assistant message with tool_calls' : 'is required' };
    }
  } else if (Array.isArray(content)) {
    if (content.length === 0) return { field: 'content', detail: 'must hold at least one content part' };
    const parts = checkContentParts(content, 'content');
    if (parts) return parts;
  } else if (typeof content !== 'string') {
    return { field: 'content', detail: 'must be a string, an array of content parts, or null' };
  }
  return undefined;
}

/** Positions of calls and results: a result answers the nearest open call of the assistant message its run of results follows. */
function links(messages: readonly Message[]): { calls: CallLink[]; orphans: number[] } {
  const calls: CallLink[] = [];
  const orphans: number[] = [];
  let open: CallLink[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'tool' || m.role === 'function') {
      const wanted = m.role === 'tool' ? String(m.tool_call_id ?? '') : `function:${String(m.name ?? '')}`;
      const call = open.find((c) => c.id === wanted && c.answeredAt.length === 0);
      if (call) call.answeredAt.push(i);
      else orphans.push(i);
      return;
    }
    open = [];
    for (const c of callsOf(m)) {
      const link = { at: i, id: c.id, answeredAt: [] };
      calls.push(link);
      open.push(link);
    }
    if (isJsonObject(m.function_call)) {
      const link = { at: i, id: `function:${String(m.function_call.name ?? '')}`, answeredAt: [] };
      calls.push(link);
      open.push(link);
    }
  });
  return { calls, orphans };
}

const isSummary = (m: Message) => m.name === SUMMARY_MESSAGE_NAME && contentText(m.content).startsWith(SUMMARY_PREFIX);

function hasRequestContent(content: JsonValue | undefined): boolean {
  if (typeof content === 'string') return content.trim().length > 0;
  if (!Array.isArray(content)) return false;
  return content.some((p) => isJsonObject(p) && (p.type !== 'text' || (typeof p.text === 'string' && p.text.trim().length > 0)));
}

function render(m: Message, caps: RenderCaps): string {
  const parts: string[] = [];
  const text = contentText(m.content);
  if (text) parts.push(text);
  if (Array.isArray(m.content)) for (const p of m.content) if (isJsonObject(p) && p.type !== 'text') parts.push(mediaPlaceholder(p));
  if (typeof m.refusal === 'string' && m.refusal) parts.push(`(refused: ${m.refusal})`);
  if (m.role === 'tool' || m.role === 'function') {
    return `tool result (${asText(m.name ?? m.tool_call_id ?? 'tool')}): ${clip(parts.join(' '), caps.toolResultChars)}`;
  }
  const calls = callsOf(m).map((c) => `${c.name}(${clip(c.input, caps.toolArgumentChars, 'these arguments')})`);
  if (isJsonObject(m.function_call))
    calls.push(`${asText(m.function_call.name)}(${clip(asText(m.function_call.arguments), caps.toolArgumentChars, 'these arguments')})`);
  return `${String(m.role)}: ${parts.join(' ')}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
}

function providerCheck(messages: readonly Message[]): string | undefined {
  let pending: Set<string> | undefined; // calls of the current assistant message not yet answered
  let groupCalls: Set<string> | undefined; // all calls of the assistant message the current results follow
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') {
      const id = typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined;
      if (!groupCalls || !id || !groupCalls.has(id)) return `message ${i} is a tool result for ${id ?? '(no id)'} that does not follow its tool call`;
      if (!pending!.delete(id)) return `message ${i} answers tool call ${id} a second time`;
      continue;
    }
    if (pending && pending.size > 0) return `tool call(s) ${[...pending].join(', ')} are not answered before message ${i}`;
    pending = undefined;
    groupCalls = undefined;
    const calls = callsOf(m);
    const speaks = calls.length > 0 || isJsonObject(m.function_call) || typeof m.refusal === 'string' || isJsonObject(m.audio);
    if ((m.content === null || m.content === undefined) && !(m.role === 'assistant' && speaks)) return `message ${i} has no content and no tool calls`;
    if (calls.length > 0) {
      if (m.role !== 'assistant') return `message ${i} carries tool calls but is a ${String(m.role)} message`;
      const ids = new Set<string>();
      for (const c of calls) {
        if (ids.has(c.id)) return `tool call id ${c.id} appears twice in message ${i}`;
        ids.add(c.id);
      }
      pending = new Set(ids);
      groupCalls = new Set(ids);
    }
  }
  return undefined; // calls still pending here are open at the end, which is allowed
}

/** The head as the Chat API takes it back: no `annotations`, no null `function_call`, `audio` as `{id}`, no stream `index` on calls. */
function forProvider(messages: readonly Message[]): Message[] {
  return messages.map((m) => {
    if (m.role !== 'assistant') return m;
    const { annotations: _annotations, ...rest } = m;
    const out: JsonObject = { ...rest };
    if (out.function_call === null) delete out.function_call;
    if (isJsonObject(out.audio)) out.audio = { id: out.audio.id ?? null };
    else if (out.audio === null) delete out.audio;
    if (Array.isArray(out.tool_calls)) {
      out.tool_calls = out.tool_calls.map((c) => {
        if (!isJsonObject(c) || !('index' in c)) return c;
        const { index: _index, ...call } = c;
        return call;
      });
    }
    return out;
  });
}

const isResult = (m: Message) => m.role === 'tool' || m.role === 'function';

function toolResults(m: Message): ToolResult[] {
  if (!isResult(m)) return [];
  const id = m.role === 'tool' ? asText(m.tool_call_id) : `function:${asText(m.name)}`;
  return [{ id, name: typeof m.name === 'string' ? m.name : undefined, text: contentText(m.content), isError: false }];
}

export const openaiChat: Dialect = {
  name: 'openai-chat',
  summaryMarkerField: 'content',
  estimateTexts: (m) => openaiChat.texts(m),
  reservedName: SUMMARY_MESSAGE_NAME,
  keepsOpeningGroups: true,
  check,
  roleOf: (m) => (m.role === 'function' ? 'tool' : (m.role as StoredRole)),
  texts(m) {
    const texts = [contentText(m.content)];
    for (const c of callsOf(m)) texts.push(c.name, c.input, c.id);
    if (typeof m.tool_call_id === 'string') texts.push(m.tool_call_id);
    if (typeof m.name === 'string') texts.push(m.name);
    return texts;
  },
  textOf: (m) => contentText(m.content),
  isInstruction: (m) => m.role === 'system' || m.role === 'developer',
  groups(messages) {
    const { calls, orphans } = links(messages);
    return buildGroups(messages.length, calls, orphans);
  },
  isRealUserRequest: (m) => m.role === 'user' && !isSummary(m) && hasRequestContent(m.content),
  isSummary,
  posesAsSummary: (m) => m.name === SUMMARY_MESSAGE_NAME || carriesMarker(contentText(m.content)),
  summaryMessages: (text) => [{ role: 'assistant', name: SUMMARY_MESSAGE_NAME, content: `${SUMMARY_PREFIX}\n${text.trim()}` }],
  render,
  providerCheck,
  openCalls(messages) {
    const { calls, orphans } = links(messages);
    return openCallsOf(buildGroups(messages.length, calls, orphans), calls);
  },
  resultsOf(messages, index, ids) {
    const { calls } = links(messages);
    return calls.filter((c) => c.at === index && ids.includes(c.id)).flatMap((c) => c.answeredAt);
  },
  holdReason: () => undefined,
  toolCalls: (m) => [
    ...callsOf(m),
    ...(isJsonObject(m.function_call)
      ? [{ id: `function:${asText(m.function_call.name)}`, name: asText(m.function_call.name), input: m.function_call.arguments ?? '' }]
      : []),
  ],
  toolResults,
  maskResults(m, placeholder) {
    const [result] = toolResults(m);
    return result ? { ...m, content: placeholder(result) } : undefined;
  },
  forProvider,
};
