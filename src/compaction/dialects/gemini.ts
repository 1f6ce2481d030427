/**
 * Google Gemini contents (`gemini`): `{role: 'user' | 'model', parts: Part[]}` as
 * `generateContent` takes them and `candidates[0].content` returns them. A Part holds one of
 * `text`, `inlineData`, `fileData`, `functionCall`, `functionResponse`, `executableCode`,
 * `codeExecutionResult`, with `thought` (a thought summary) and `thoughtSignature` beside it;
 * unknown keys are kept, never refused. Rules: provider-rules.md, GM-1 to GM-5.
 *
 * Decisions:
 * - Role `function` is accepted for a turn of function responses (older API versions and
 *   samples used it; the API still takes it); it holds only `functionResponse` parts.
 * - Field names are read in both spellings the API's JSON accepts: `functionCall` and
 *   `function_call` (Python SDKs' `model_dump()` writes snake_case); messages are kept as they came.
 * - Each content is one turn (Gemini does not merge consecutive contents of one role): a model
 *   content with `functionCall` parts is grouped with the directly following content holding
 *   `functionResponse` parts (GM-2). Responses pair with calls by id when both have one, then
 *   by name, then by order; responses beyond the calls' count are orphans (GM-3).
 * - A call without an id is known by its function name (the id `openCalls` reports).
 */
import { isJsonObject, stringLeaves, type JsonObject, type JsonValue } from '../json';
import {
  asText,
  buildGroups,
  type CallLink,
  carriesMarker,
  checkString,
  clip,
  mediaPlaceholder,
  objectProblem,
  openCallsOf,
  SUMMARY_ACK_TEXT,
  SUMMARY_PREFIX,
} from './common';
import type { Dialect, FieldProblem, Message, RenderCaps, StoredRole, ToolResult } from './types';

type Part = JsonObject;

const ROLES = ['user', 'model', 'function'];

const SNAKE: Record<string, string> = {
  inlineData: 'inline_data',
  fileData: 'file_data',
  functionCall: 'function_call',
  functionResponse: 'function_response',
  executableCode: 'executable_code',
  codeExecutionResult: 'code_execution_result',
  thoughtSignature: 'thought_signature',
  mimeType: 'mime_type',
  fileUri: 'file_uri',
};

/** The key under which a field is stored (camelCase or snake_case), or undefined. */
const keyOf = (o: JsonObject, key: string): string | undefined => (key in o ? key : SNAKE[key] && SNAKE[key] in o ? SNAKE[key] : undefined);
const get = (o: JsonObject, key: string): JsonValue | undefined => {
  const k = keyOf(o, key);
  return k === undefined ? undefined : o[k];
};
const objectAt = (o: JsonObject, key: string): JsonObject | undefined => {
  const v = get(o, key);
  return isJsonObject(v) ? v : undefined;
};

const partsOf = (m: Message): Part[] => (Array.isArray(m.parts) ? m.parts.filter(isJsonObject) : []);
const callOf = (p: Part) => objectAt(p, 'functionCall');
const responseOf = (p: Part) => objectAt(p, 'functionResponse');
const isThought = (p: Part) => p.thought === true;
const callsIn = (m: Message) =>
  m.role === 'model'
    ? partsOf(m)
        .map(callOf)
        .filter((c) => c !== undefined)
    : [];
const responsesIn = (m: Message) =>
  m.role === 'model'
    ? []
    : partsOf(m)
        .map(responseOf)
        .filter((r) => r !== undefined);
const idOf = (fn: JsonObject): string | undefined => (typeof fn.id === 'string' && fn.id !== '' ? fn.id : undefined);
/** A call's id: its own, or (Gemini pairs id-less calls by name) its function name. */
const callId = (fn: JsonObject): string => idOf(fn) ?? String(fn.name ?? '');

const textOf = (m: Message): string =>
  partsOf(m)
    .filter((p) => typeof p.text === 'string' && !isThought(p))
    .map((p) => p.text as string)
    .join('\n');

// ---------------------------------------------------------------------------------------------
// check

function check(raw: unknown): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  if (typeof m.role !== 'string' || !ROLES.includes(m.role))
    return { field: 'role', detail: `must be "user" or "model" ("function" is taken for a turn of function responses)` };
  if (!Array.isArray(m.parts) || m.parts.length === 0) return { field: 'parts', detail: 'must be a non-empty array of parts' };
  for (let j = 0; j < m.parts.length; j++) {
    const p = m.parts[j];
    const at = `parts[${j}]`;
    if (!isJsonObject(p)) return { field: at, detail: 'must be an object (a part)' };
    if (p.text !== undefined && typeof p.text !== 'string') return { field: `${at}.text`, detail: 'must be a string' };
    if (p.thought !== undefined && typeof p.thought !== 'boolean') return { field: `${at}.thought`, detail: 'must be a boolean' };
    const signatureKey = keyOf(p, 'thoughtSignature');
    if (signatureKey && typeof p[signatureKey] !== 'string') return { field: `${at}.${signatureKey}`, detail: 'must be a string' };
    for (const key of ['inlineData', 'fileData', 'executableCode', 'codeExecutionResult']) {
      const k = keyOf(p, key);
      if (k && !isJsonObject(p[k])) return { field: `${at}.${k}`, detail: 'must be an object' };
    }
    const callKey = keyOf(p, 'functionCall');
    if (callKey) {
      const fc = p[callKey];
      if (!isJsonObject(fc)) return { field: `${at}.${callKey}`, detail: 'must be an object with a name' };
      if (m.role !== 'model') return { field: `${at}.${callKey}`, detail: 'a functionCall part is only allowed in a model turn' };
      const name = checkString(fc.name, `${at}.${callKey}.name`, 1);
      if (name) return name;
      if (fc.args !== undefined && fc.args !== null && !isJsonObject(fc.args)) return { field: `${at}.${callKey}.args`, detail: 'must be an object' };
      if (fc.id !== undefined && typeof fc.id !== 'string') return { field: `${at}.${callKey}.id`, detail: 'must be a string' };
    }
    const responseKey = keyOf(p, 'functionResponse');
    if (responseKey) {
      const fr = p[responseKey];
      if (!isJsonObject(fr)) return { field: `${at}.${responseKey}`, detail: 'must be an object with a name' };
      if (m.role === 'model') return { field: `${at}.${responseKey}`, detail: 'a functionResponse part is only allowed in a user (or function) turn' };
      const name = checkString(fr.name, `${at}.${responseKey}.name`, 1);
      if (name) return name;
      if (fr.response !== undefined && fr.response !== null && !isJsonObject(fr.response))
        return { field: `${at}.${responseKey}.response`, detail: 'must be an object' };
      if (fr.id !== undefined && typeof fr.id !== 'string') return { field: `${at}.${responseKey}.id`, detail: 'must be a string' };
    } else if (m.role === 'function') {
      return { field: at, detail: 'a turn of role "function" holds only functionResponse parts' };
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// calls, results, groups

interface OpenCall {
  link: CallLink;
  fn: JsonObject;
}

function links(messages: readonly Message[]): { calls: CallLink[]; orphans: number[] } {
  const calls: CallLink[] = [];
  const orphans: number[] = [];
  let previous: OpenCall[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'model') {
      previous = callsIn(m).map((fn) => ({ link: { at: i, id: callId(fn), answeredAt: [] }, fn }));
      calls.push(...previous.map((c) => c.link));
      return;
    }
    for (const r of responsesIn(m)) {
      const open = previous.filter((c) => c.link.answeredAt.length === 0);
      const id = idOf(r);
      const call = (id !== undefined ? open.find((c) => idOf(c.fn) === id) : undefined) ?? open.find((c) => c.fn.name === r.name) ?? open[0];
      if (call) call.link.answeredAt.push(i);
      else orphans.push(i);
    }
    previous = [];
  });
  return { calls, orphans };
}

function groups(messages: readonly Message[]) {
  const { calls, orphans } = links(messages);
  return { calls, groups: buildGroups(messages.length, calls, orphans) };
}

// ---------------------------------------------------------------------------------------------
// summary, requests, rendering

const isSummary = (m: Message) => (m.role === 'user' || m.role === 'model') && textOf(m).startsWith(SUMMARY_PREFIX);

function isRealUserRequest(m: Message): boolean {
  if (m.role !== 'user' || isSummary(m)) return false;
  const parts = partsOf(m);
  if (parts.some((p) => responseOf(p) !== undefined)) return false;
  return parts.some(
    (p) => (typeof p.text === 'string' && !isThought(p) && p.text.trim().length > 0) || get(p, 'inlineData') !== undefined || get(p, 'fileData') !== undefined,
  );
}

function placeholder(p: Part): string {
  const inline = objectAt(p, 'inlineData');
  if (inline) return mediaPlaceholder({ type: 'inlineData', inlineData: { mimeType: get(inline, 'mimeType') ?? null } });
  const file = objectAt(p, 'fileData');
  if (file) return mediaPlaceholder({ type: 'fileData', fileData: { fileUri: get(file, 'fileUri') ?? get(file, 'mimeType') ?? null } });
  const known = Object.keys(p).filter((k) => k !== 'thoughtSignature' && k !== 'thought_signature' && k !== 'thought');
  return `[${known[0] ?? 'part'}]`;
}

function render(m: Message, caps: RenderCaps): string {
  const items: string[] = [];
  const calls: string[] = [];
  let onlyResults = true;
  for (const p of partsOf(m)) {
    if (isThought(p)) continue; // thought summaries are not rendered; thought signatures never are
    const fr = responseOf(p);
    if (fr) {
      const label = idOf(fr) ? `${asText(fr.name)}, ${idOf(fr)}` : asText(fr.name);
      items.push(`tool result (${label}): ${clip(asText(fr.response ?? {}), caps.toolResultChars)}`);
      continue;
    }
    onlyResults = false;
    const fc = callOf(p);
    const codePart = objectAt(p, 'executableCode');
    const codeResult = objectAt(p, 'codeExecutionResult');
    if (fc) calls.push(`${asText(fc.name)}(${clip(JSON.stringify(fc.args ?? {}), caps.toolArgumentChars, 'these arguments')})`);
    else if (typeof p.text === 'string') {
      if (p.text !== '') items.push(p.text);
    } else if (codePart)
      items.push(`[code${codePart.language ? ` (${asText(codePart.language)})` : ''}: ${clip(asText(codePart.code), caps.toolArgumentChars, 'this code')}]`);
    else if (codeResult) items.push(`code result (${asText(codeResult.outcome ?? 'done')}): ${clip(asText(codeResult.output), caps.toolResultChars)}`);
    else if (Object.keys(p).some((k) => k !== 'thoughtSignature' && k !== 'thought_signature')) items.push(placeholder(p));
  }
  const role = m.role === 'model' ? 'assistant' : String(m.role);
  if (m.role !== 'model' && onlyResults && items.length > 0) return items.join(' ');
  return `${role}:${items.length ? ` ${items.join(' ')}` : ''}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
}

function texts(m: Message): string[] {
  const out: string[] = [];
  for (const p of partsOf(m)) {
    if (typeof p.text === 'string') out.push(p.text);
    const fc = callOf(p);
    if (fc) out.push(asText(fc.name), JSON.stringify(fc.args ?? {}), asText(fc.id));
    const fr = responseOf(p);
    if (fr) out.push(asText(fr.name), JSON.stringify(fr.response ?? {}), asText(fr.id));
    const codePart = objectAt(p, 'executableCode');
    if (codePart) out.push(asText(codePart.code));
    const codeResult = objectAt(p, 'codeExecutionResult');
    if (codeResult) out.push(asText(codeResult.output));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// provider rules

const GM1 = 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.';
const GM2 = 'Please ensure that function response turn comes immediately after a function call turn.';
const GM3 = 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';

function providerCheck(messages: readonly Message[]): string | undefined {
  if (messages.length === 0) return undefined;
  for (let i = 0; i < messages.length; i++) {
    const problem = check(messages[i]);
    if (problem) return `contents[${i}]${problem.field ? `.${problem.field}` : ''}: ${problem.detail}`;
  }
  if (messages[0].role !== 'user')
    return `contents[0]: Please ensure that the conversation starts with a user turn (the first content has role '${String(messages[0].role)}').`;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const calls = callsIn(m).length;
    if (calls > 0) {
      const before = messages[i - 1];
      if (!before || before.role === 'model') return `contents[${i}]: ${GM1}`;
      const after = messages[i + 1];
      // An open call turn at the very end is allowed: the agent is about to add the responses.
      if (after && responsesIn(after).length !== calls) return `contents[${i + 1}]: ${GM3}`;
    }
    if (responsesIn(m).length > 0) {
      const before = messages[i - 1];
      if (!before || callsIn(before).length === 0) return `contents[${i}]: ${GM2}`;
    }
  }
  return undefined;
}

function asResult(fr: JsonObject): ToolResult {
  const response = isJsonObject(fr.response) ? fr.response : {};
  const text = typeof response.output === 'string' ? response.output : typeof response.error === 'string' ? response.error : asText(fr.response ?? {});
  return { id: callId(fr), name: asText(fr.name), text, isError: response.error !== undefined && response.error !== null };
}

/** A masked response keeps its name and id; its `response` becomes `{output: placeholder}`, or `{error: placeholder}` for an error (the API's keys). */
function maskResults(m: Message, placeholder: (result: ToolResult) => string): Message | undefined {
  if (m.role === 'model' || responsesIn(m).length === 0) return undefined;
  const parts = (m.parts as JsonValue[]).map((p) => {
    if (!isJsonObject(p)) return p;
    const key = keyOf(p, 'functionResponse');
    const fr = key ? responseOf(p) : undefined;
    if (!key || !fr) return p;
    const result = asResult(fr);
    const response: JsonObject = result.isError ? { error: placeholder(result) } : { output: placeholder(result) };
    return { ...p, [key]: { ...fr, response } };
  });
  return { ...m, parts };
}

export const gemini: Dialect = {
  name: 'gemini',
  summaryMarkerField: 'parts',
  estimateTexts: (m) => stringLeaves(m),
  keepsOpeningGroups: false,
  check,
  roleOf(m): StoredRole {
    if (m.role === 'model') return 'assistant';
    const parts = partsOf(m);
    return parts.length > 0 && parts.every((p) => responseOf(p) !== undefined) ? 'tool' : 'user';
  },
  texts,
  textOf,
  isInstruction: () => false,
  groups: (messages) => groups(messages).groups,
  isRealUserRequest,
  isSummary,
  posesAsSummary: (m) => partsOf(m).some((p) => typeof p.text === 'string' && carriesMarker(p.text)),
  summaryMessages(text, next) {
    const summary: Message = { role: 'user', parts: [{ text: `${SUMMARY_PREFIX}\n${text.trim()}` }] };
    return next !== undefined && next.role !== 'model' ? [summary, { role: 'model', parts: [{ text: SUMMARY_ACK_TEXT }] }] : [summary];
  },
  render,
  providerCheck,
  openCalls(messages) {
    const { calls, groups: gs } = groups(messages);
    return openCallsOf(gs, calls);
  },
  resultsOf(messages, index, ids) {
    const { calls } = links(messages);
    const positions = calls.filter((c) => c.at === index && ids.includes(c.id)).flatMap((c) => c.answeredAt);
    return [...new Set(positions)].sort((a, b) => a - b);
  },
  holdReason: () => undefined,
  toolCalls: (m) => callsIn(m).map((fc) => ({ id: callId(fc), name: asText(fc.name), input: fc.args ?? {} })),
  toolResults: (m) => responsesIn(m).map(asResult),
  maskResults,
  forProvider: (messages) => [...messages],
};
