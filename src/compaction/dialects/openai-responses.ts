/**
 * OpenAI Responses API input items (`openai-responses`): what `response.output` holds and
 * what agents (Codex CLI, the Agents SDKs) send back as `input`. One message is one item:
 * `message` (or the easy form `{role, content}`), `reasoning` (with `summary` and
 * `encrypted_content`), `function_call` / `function_call_output` paired by `call_id`, the
 * other tool calls (`custom_tool_call`, `local_shell_call`, `computer_call`, `shell_call`,
 * `apply_patch_call` and their outputs; `web_search_call`, `mcp_call`, ... with inline
 * results), `item_reference`, `compaction`, and item types this service does not know
 * (Codex's `ghost_snapshot`), which are kept verbatim and never refused for being unknown.
 * Rules: provider-rules.md, RS-1 to RS-8.
 *
 * Model turns: a run of contiguous model items (assistant messages, reasoning, `*_call`
 * items, MCP requests) is one response of the model; items of unknown type inside a run are
 * passed over, anything the agent sends (an input message, a tool output, a compaction item)
 * ends it. A reasoning item is grouped with the rest of its run (RS-3, RS-4).
 */
import { isJsonObject, stringLeaves, type JsonObject, type JsonValue } from '../json';
import { asText, buildGroups, type CallLink, carriesMarker, checkString, clip, mediaPlaceholder, objectProblem, openCallsOf, SUMMARY_PREFIX } from './common';
import type { Dialect, FieldProblem, Message, RenderCaps, StoredRole, ToolCall, ToolResult } from './types';

const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'];
/** Content parts whose `text` is the message's text. */
const TEXT_PARTS = new Set(['input_text', 'output_text', 'text']);
/** Parts shown to the summariser as a placeholder, never as their data. */
const MEDIA_PARTS = new Set(['input_image', 'input_file', 'input_audio', 'computer_screenshot', 'image']);
/** Calls the agent answers with an output item before the model is asked again (RS-2); other calls carry their results inline. */
const NEEDS_OUTPUT = new Set(['function_call', 'custom_tool_call', 'local_shell_call', 'computer_call', 'shell_call', 'apply_patch_call']);
/** Model items besides messages, reasoning and `*_call` items. */
const OTHER_MODEL_TYPES = new Set(['mcp_list_tools', 'mcp_approval_request']);
/** Model items whose `id` is optional on input, stripped when their turn has lost its reasoning (RS-4). */
const STRIPPABLE_TYPES = new Set(['function_call', 'custom_tool_call']);
/** Fields of other items that are not text the model reads (ids, status, opaque or binary data). */
const NON_TEXT_KEYS = new Set(['type', 'id', 'status', 'encrypted_content', 'result']);

const typeOf = (m: Message): string | undefined => (typeof m.type === 'string' ? m.type : undefined);

/** A message item: `{type:'message', role, content}` or the easy form `{role, content}`. */
const isMessageItem = (m: Message): boolean => m.type === 'message' || (m.type === undefined && typeof m.role === 'string');

/** An item that references another by id only: `{type:'item_reference', id}` or just `{id}`. */
const isItemReference = (m: Message): boolean => m.type === 'item_reference' || (m.type === undefined && m.role === undefined && typeof m.id === 'string');

const isOutputItem = (m: Message): boolean => {
  const t = typeOf(m);
  return t !== undefined && (t.endsWith('_output') || t === 'mcp_approval_response');
};

type Kind = 'input' | 'model' | 'output' | 'other';

/** input: what the agent says (ends a model turn); model: what the model said; output: a tool's answer; other: unknown, passed over. */
function kindOf(m: Message): Kind {
  if (isMessageItem(m)) return m.role === 'assistant' ? 'model' : 'input';
  const t = typeOf(m);
  if (t === undefined) return 'other';
  if (isOutputItem(m)) return 'output';
  if (t === 'reasoning' || t.endsWith('_call') || OTHER_MODEL_TYPES.has(t)) return 'model';
  if (t === 'compaction') return 'input';
  return 'other';
}

/** The model turns: [first, last] positions of each maximal run of model items (unknown items inside passed over). */
function modelRuns(messages: readonly Message[]): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  let start = -1;
  let end = -1;
  messages.forEach((m, i) => {
    const kind = kindOf(m);
    if (kind === 'model') {
      if (start < 0) start = i;
      end = i;
    } else if (kind !== 'other' && start >= 0) {
      runs.push([start, end]);
      start = -1;
    }
  });
  if (start >= 0) runs.push([start, end]);
  return runs;
}

const label = (type: string) => type.replace(/_/g, ' ');

// ---------------------------------------------------------------- text

const partText = (p: JsonValue): string =>
  isJsonObject(p) && typeof p.type === 'string' && TEXT_PARTS.has(p.type) && typeof p.text === 'string' ? p.text : '';

function contentText(content: JsonValue | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map(partText).join('');
}

function textOf(m: Message): string {
  return isMessageItem(m) ? contentText(m.content) : '';
}

/** A tool output as text: strings as they are (JSON text too), parts by their text, media as placeholders, anything else as JSON. */
function outputText(value: JsonValue | undefined): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value))
    return value
      .map(outputText)
      .filter((s) => s !== '')
      .join(' ');
  if (isJsonObject(value)) {
    if (typeof value.type === 'string' && MEDIA_PARTS.has(value.type)) return mediaPlaceholder(value);
    if (typeof value.type === 'string' && TEXT_PARTS.has(value.type) && typeof value.text === 'string') return value.text;
  }
  return JSON.stringify(value);
}

/** The text pieces of a tool output a provider counts (media parts are not text). */
function outputTexts(value: JsonValue | undefined): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(outputTexts);
  if (isJsonObject(value) && typeof value.type === 'string') {
    if (MEDIA_PARTS.has(value.type)) return [];
    if (TEXT_PARTS.has(value.type) && typeof value.text === 'string') return [value.text];
  }
  return [JSON.stringify(value)];
}

function texts(m: Message): string[] {
  if (isMessageItem(m)) {
    if (typeof m.content === 'string') return [m.content];
    if (!Array.isArray(m.content)) return [];
    return m.content.flatMap((p) => {
      if (!isJsonObject(p)) return [];
      if (typeof p.text === 'string') return [p.text];
      if (typeof p.refusal === 'string') return [p.refusal];
      return [];
    });
  }
  const t = typeOf(m);
  if (t === 'reasoning') {
    // The summary (and open reasoning text where a model returns it), never the encrypted content.
    const pieces: string[] = [];
    for (const field of [m.summary, m.content]) {
      if (Array.isArray(field)) for (const p of field) if (isJsonObject(p) && typeof p.text === 'string') pieces.push(p.text);
    }
    return pieces;
  }
  if (t === 'function_call') return [asText(m.name), asText(m.arguments), asText(m.call_id)];
  if (t === 'custom_tool_call') return [asText(m.name), asText(m.input), asText(m.call_id)];
  if (isOutputItem(m)) return [...(typeof m.call_id === 'string' ? [m.call_id] : []), ...outputTexts(m.output)];
  const pieces: string[] = [];
  for (const [key, value] of Object.entries(m)) if (!NON_TEXT_KEYS.has(key)) stringLeaves(value, pieces);
  return pieces;
}

// ---------------------------------------------------------------- check

function checkParts(parts: JsonValue[], field: string): FieldProblem | undefined {
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j];
    const at = `${field}[${j}]`;
    if (!isJsonObject(part)) return { field: at, detail: 'must be an object' };
    if (typeof part.type !== 'string' || part.type === '') return { field: `${at}.type`, detail: 'must be a non-empty string' };
    if (TEXT_PARTS.has(part.type) && typeof part.text !== 'string') return { field: `${at}.text`, detail: `a ${part.type} part needs a string text` };
  }
  return undefined;
}

function checkMessage(m: JsonObject): FieldProblem | undefined {
  if (typeof m.role !== 'string' || !MESSAGE_ROLES.includes(m.role)) return { field: 'role', detail: `must be one of ${MESSAGE_ROLES.join(', ')}` };
  if (typeof m.content === 'string') return undefined;
  if (Array.isArray(m.content)) return checkParts(m.content, 'content');
  return { field: 'content', detail: m.content === undefined ? 'is required' : 'must be a string or an array of content parts' };
}

function check(raw: unknown): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  if (m.type === undefined) {
    if (m.role !== undefined) return checkMessage(m);
    if (typeof m.id === 'string' && m.id !== '') return undefined; // an item reference: `type` is optional on it
    return { field: 'type', detail: 'is required (a string item type, or a role for an easy-form message)' };
  }
  if (typeof m.type !== 'string' || m.type === '') return { field: 'type', detail: 'must be a non-empty string' };
  const type = m.type;
  if (type === 'message') return checkMessage(m);
  if (type === 'reasoning') {
    // RS-8: `summary` is kept when present (even []); an item without it is kept, as it came.
    if (m.summary === undefined) return undefined;
    if (!Array.isArray(m.summary)) return { field: 'summary', detail: 'must be an array of summary parts' };
    for (let j = 0; j < m.summary.length; j++) if (!isJsonObject(m.summary[j])) return { field: `summary[${j}]`, detail: 'must be an object' };
    return undefined;
  }
  if (type === 'function_call' || type === 'custom_tool_call') {
    const callId = checkString(m.call_id, 'call_id', 1);
    if (callId) return callId;
    const name = checkString(m.name, 'name', 1);
    if (name) return name;
    const input = type === 'function_call' ? 'arguments' : 'input';
    if (typeof m[input] !== 'string') return { field: input, detail: 'must be a string' };
    return undefined;
  }
  if (type.endsWith('_call_output')) {
    // The API's local_shell_call_output names its call by `id`; Codex answers by `call_id`.
    if (type === 'local_shell_call_output' && m.call_id === undefined) {
      return checkString(m.id, 'id', 1) ? { field: 'call_id', detail: 'must be a string that is not empty (or `id`, naming the local shell call)' } : undefined;
    }
    const callId = checkString(m.call_id, 'call_id', 1);
    if (callId) return callId;
    if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      if (typeof m.output === 'string') return undefined;
      if (Array.isArray(m.output)) return checkParts(m.output, 'output');
      return { field: 'output', detail: m.output === undefined ? 'is required' : 'must be a string or an array of content parts' };
    }
    return undefined;
  }
  if (type === 'item_reference') return checkString(m.id, 'id', 1);
  return undefined; // other and unknown item types are kept as they came
}

// ---------------------------------------------------------------- links and groups

/** Which call an output answers: its `call_id`, or (an API local_shell_call_output) its `id`. */
function outputKey(m: Message): { key: string; byId: boolean } | undefined {
  if (typeof m.call_id === 'string') return { key: m.call_id, byId: false };
  if (m.type === 'local_shell_call_output' && typeof m.id === 'string') return { key: m.id, byId: true };
  return undefined;
}

interface Links {
  /** Calls that need an output, and calls of other kinds that have one. */
  calls: CallLink[];
  callTypes: Map<number, string>;
  orphans: number[];
  joins: Array<[number, number]>;
}

/**
 * Calls and outputs by position: an output answers the nearest earlier unanswered call with
 * its call id, whatever the call's type (Codex answers a local_shell_call with a
 * function_call_output). An output no earlier call waits for is an orphan. A reasoning item
 * joins the rest of its model turn, the calls of one turn join each other (parallel calls:
 * the cut never keeps one and summarises the other), an MCP approval request joins its response.
 */
function links(messages: readonly Message[]): Links {
  const all: Array<CallLink & { itemId: string | undefined; needsOutput: boolean }> = [];
  const callTypes = new Map<number, string>();
  const orphans: number[] = [];
  const joins: Array<[number, number]> = [];
  const approvals = new Map<string, number>();
  messages.forEach((m, i) => {
    // A reference by id only cannot be kept (with store:false nothing is looked up, RS-5): the
    // cut summarises it like an orphan, so it never stays in a head the gate would refuse.
    if (isItemReference(m)) {
      orphans.push(i);
      return;
    }
    const t = typeOf(m);
    if (t === undefined || isMessageItem(m)) return;
    if (t === 'mcp_approval_request') {
      if (typeof m.id === 'string') approvals.set(m.id, i);
      return;
    }
    if (t === 'mcp_approval_response') {
      const at = typeof m.approval_request_id === 'string' ? approvals.get(m.approval_request_id) : undefined;
      if (at !== undefined) joins.push([at, i]);
      return;
    }
    if (t.endsWith('_output')) {
      const wanted = outputKey(m);
      if (!wanted) return;
      let call: CallLink | undefined;
      for (let k = all.length - 1; k >= 0 && !call; k--) {
        const c = all[k];
        if (c.answeredAt.length === 0 && (c.id === wanted.key || (wanted.byId && c.itemId === wanted.key))) call = c;
      }
      if (call) call.answeredAt.push(i);
      else orphans.push(i);
      return;
    }
    if (t.endsWith('_call') && typeof m.call_id === 'string') {
      all.push({ at: i, id: m.call_id, answeredAt: [], itemId: typeof m.id === 'string' ? m.id : undefined, needsOutput: NEEDS_OUTPUT.has(t) });
      callTypes.set(i, t);
    }
  });
  const calls = all.filter((c) => c.needsOutput || c.answeredAt.length > 0).map(({ at, id, answeredAt }) => ({ at, id, answeredAt }));
  for (const [start, end] of modelRuns(messages)) {
    for (let i = start; i < end; i++) {
      if (messages[i].type === 'reasoning') {
        joins.push([i, end]);
        break;
      }
    }
    // The calls of one model turn (parallel calls) stay together, answered or not.
    const inRun = calls.filter((c) => c.at >= start && c.at <= end);
    if (inRun.length > 1) joins.push([inRun[0].at, inRun[inRun.length - 1].at]);
  }
  return { calls, callTypes, orphans, joins };
}

function groups(messages: readonly Message[]) {
  const { calls, orphans, joins } = links(messages);
  return { calls, groups: buildGroups(messages.length, calls, orphans, joins) };
}

// ---------------------------------------------------------------- requests and summaries

const isSummary = (m: Message): boolean => isMessageItem(m) && textOf(m).startsWith(SUMMARY_PREFIX);

function hasRequestContent(content: JsonValue | undefined): boolean {
  if (typeof content === 'string') return content.trim().length > 0;
  if (!Array.isArray(content)) return false;
  return content.some((p) => isJsonObject(p) && (typeof p.type !== 'string' || !TEXT_PARTS.has(p.type) || partText(p).trim().length > 0));
}

// ---------------------------------------------------------------- render

function renderMessage(m: Message): string {
  const parts: string[] = [];
  const text = contentText(m.content);
  if (text) parts.push(text);
  if (Array.isArray(m.content)) {
    for (const p of m.content) {
      if (!isJsonObject(p) || (typeof p.type === 'string' && TEXT_PARTS.has(p.type))) continue;
      if (p.type === 'refusal' && typeof p.refusal === 'string') parts.push(`(refused: ${p.refusal})`);
      else parts.push(mediaPlaceholder(p));
    }
  }
  return `${String(m.role)}: ${parts.join(' ')}`;
}

function render(m: Message, caps: RenderCaps): string {
  if (isMessageItem(m)) return renderMessage(m);
  const t = typeOf(m) ?? 'item_reference';
  const args = (value: JsonValue | undefined) => clip(asText(value), caps.toolArgumentChars, 'these arguments');
  const result = (value: string) => clip(value, caps.toolResultChars);
  // No thinking text goes to the summariser: neither the summary nor the encrypted content.
  if (t === 'reasoning') return '';
  if (t === 'mcp_approval_response') {
    const reason = typeof m.reason === 'string' && m.reason ? `: ${m.reason}` : '';
    return `tool result (${asText(m.approval_request_id)}): ${m.approve === true ? 'approved' : 'declined'}${reason}`;
  }
  if (isOutputItem(m)) {
    const key = outputKey(m)?.key ?? 'tool';
    const text = m.output === undefined && typeof m.status === 'string' ? `(${m.status})` : outputText(m.output);
    return `tool result (${key}): ${result(text)}`;
  }
  if (t === 'mcp_approval_request') return `assistant: [approval request ${asText(m.id)}] ${asText(m.server_label)}.${asText(m.name)}(${args(m.arguments)})`;
  if (t.endsWith('_call')) {
    const base = t.slice(0, -'_call'.length);
    const name = typeof m.name === 'string' ? (typeof m.server_label === 'string' ? `${m.server_label}.${m.name}` : m.name) : base;
    const input = m.arguments ?? m.input ?? m.action ?? m.operation ?? m.code ?? m.queries;
    const id = typeof m.call_id === 'string' ? `[call ${m.call_id}] ` : '';
    let line = `assistant: ${id}${name}(${input === undefined ? '' : args(input)})`;
    if (t === 'image_generation_call') line += ' -> [generated image]';
    else {
      const inline = [m.output, m.error, m.outputs, m.results].find((v) => v !== undefined && v !== null);
      if (inline !== undefined) line += ` -> ${result(outputText(inline))}`;
    }
    return line;
  }
  return `[item ${t}]`;
}

// ---------------------------------------------------------------- provider rules

/** Where the last model turn and the outputs after it begin: calls there are open, about to be answered (RS-2 allows them). */
function tailStart(messages: readonly Message[]): number {
  let i = messages.length;
  while (i > 0 && ['output', 'other'].includes(kindOf(messages[i - 1]))) i--;
  while (i > 0 && ['model', 'other'].includes(kindOf(messages[i - 1]))) i--;
  return i;
}

function followedByModelItem(messages: readonly Message[], at: number): boolean {
  for (let j = at + 1; j < messages.length; j++) {
    const kind = kindOf(messages[j]);
    if (kind === 'model') return true;
    if (kind !== 'other') return false;
  }
  return false;
}

/**
 * RS-1, RS-2, RS-3, RS-5 (item references), RS-6 and RS-8, the first problem by position.
 * RS-4 (an item carrying a provider id needs its reasoning item) depends on which model wrote
 * the item, which the input does not tell: a non-reasoning model's `msg_`/`fc_` items are
 * valid without reasoning. It is left to forProvider, which strips those ids from every
 * model turn without a reasoning item, and to the strict fake provider, which keeps state.
 */
function providerCheck(messages: readonly Message[]): string | undefined {
  const { calls, callTypes, orphans } = links(messages);
  const problems = new Map<number, string>();
  const note = (at: number, problem: string) => {
    if (!problems.has(at)) problems.set(at, problem);
  };
  const ids = new Set<string>();
  messages.forEach((m, i) => {
    if (isItemReference(m)) {
      note(i, `Item with id '${asText(m.id)}' not found. Items are not persisted when \`store\` is set to false.`);
      return;
    }
    // An API local_shell_call_output names its call by the call's `id`: not a duplicate.
    const namesItsCall = m.type === 'local_shell_call_output' && m.call_id === undefined;
    if (typeof m.id === 'string' && m.id !== '' && !namesItsCall) {
      if (ids.has(m.id)) note(i, `Duplicate item found with id ${m.id}. Remove duplicate items from your input and try again.`);
      ids.add(m.id);
    }
    if (m.type === 'reasoning') {
      if (!Array.isArray(m.summary)) note(i, `Missing required parameter: 'input[${i}].summary'.`);
      if (!followedByModelItem(messages, i)) {
        note(i, `Item '${typeof m.id === 'string' ? m.id : `input[${i}]`}' of type 'reasoning' was provided without its required following item.`);
      }
    }
  });
  for (const o of orphans) {
    const m = messages[o];
    note(o, `No tool call found for ${label(typeOf(m) ?? 'function_call_output')} with call_id ${outputKey(m)?.key ?? ''}.`);
  }
  const tail = tailStart(messages);
  for (const c of calls) {
    if (c.answeredAt.length === 0 && c.at < tail) note(c.at, `No tool output found for ${label(callTypes.get(c.at) ?? 'function_call')} ${c.id}.`);
  }
  if (problems.size === 0) return undefined;
  return problems.get(Math.min(...problems.keys()));
}

// ---------------------------------------------------------------- provider view

const strippable = (m: Message): boolean => 'id' in m && ((isMessageItem(m) && m.role === 'assistant') || STRIPPABLE_TYPES.has(typeOf(m) ?? ''));

/**
 * The head as the provider takes it (RS-4): in a model turn with no reasoning item left (its
 * reasoning was summarised away, or the head starts inside it), the provider ids of assistant
 * messages, function calls and custom tool calls are dropped, so the provider does not look
 * for the reasoning they came with. Every other item, and every item of a turn that keeps its
 * reasoning, is returned as it is (encrypted content byte-identical, unknown items kept).
 */
function forProvider(messages: readonly Message[]): Message[] {
  const out = messages.slice();
  for (const [start, end] of modelRuns(messages)) {
    let hasReasoning = false;
    for (let i = start; i <= end; i++) if (messages[i].type === 'reasoning') hasReasoning = true;
    if (hasReasoning) continue;
    for (let i = start; i <= end; i++) {
      if (!strippable(messages[i])) continue;
      const { id: _id, ...rest } = messages[i];
      out[i] = rest;
    }
  }
  return out;
}

// ---------------------------------------------------------------- the dialect

function roleOf(m: Message): StoredRole {
  if (isMessageItem(m)) return MESSAGE_ROLES.includes(m.role as string) ? (m.role as StoredRole) : 'user';
  return isOutputItem(m) ? 'tool' : 'assistant';
}

function toolCalls(m: Message): ToolCall[] {
  const t = typeOf(m);
  if (t === undefined || !t.endsWith('_call')) return [];
  const input = m.arguments ?? m.input ?? m.action ?? m.operation ?? m.code ?? m.queries ?? {};
  return [{ id: typeof m.call_id === 'string' ? m.call_id : undefined, name: typeof m.name === 'string' ? m.name : t.slice(0, -'_call'.length), input }];
}

function toolResults(m: Message): ToolResult[] {
  if (!isOutputItem(m) || m.type === 'mcp_approval_response') return [];
  const text = m.output === undefined && typeof m.status === 'string' ? `(${m.status})` : outputText(m.output);
  return [{ id: outputKey(m)?.key, text, isError: m.status === 'failed' }];
}

/** Outputs whose `output` the API takes as a string: the ones the masking rung may replace. */
const MASKABLE_OUTPUTS = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

export const openaiResponses: Dialect = {
  name: 'openai-responses',
  summaryMarkerField: 'content',
  estimateTexts: (m) => stringLeaves(m),
  keepsOpeningGroups: true,
  check,
  roleOf,
  texts,
  textOf,
  isInstruction: (m) => isMessageItem(m) && (m.role === 'system' || m.role === 'developer'),
  groups: (messages) => groups(messages).groups,
  isRealUserRequest: (m) => isMessageItem(m) && m.role === 'user' && !isSummary(m) && hasRequestContent(m.content),
  isSummary,
  posesAsSummary: (m) => carriesMarker(textOf(m)),
  summaryMessages: (text) => [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX}\n${text.trim()}` }] }],
  render,
  providerCheck,
  openCalls(messages) {
    const { calls, groups: all } = groups(messages);
    return openCallsOf(all, calls);
  },
  resultsOf(messages, index, ids) {
    const { calls } = links(messages);
    return calls.filter((c) => c.at === index && ids.includes(c.id)).flatMap((c) => c.answeredAt);
  },
  holdReason: () => undefined,
  toolCalls,
  toolResults,
  maskResults(m, placeholder) {
    if (!MASKABLE_OUTPUTS.has(typeOf(m) ?? '') || m.output === undefined) return undefined;
    return { ...m, output: placeholder(toolResults(m)[0]) };
  },
  forProvider,
};
