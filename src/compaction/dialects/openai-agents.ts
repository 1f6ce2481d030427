/**
 * The OpenAI Agents SDK's history items (`openai-agents`): what its `Session` stores and its
 * `Runner` reads back (`AgentInputItem` of `@openai/agents-core`, the `TResponseInputItem`
 * dicts of the Python `openai-agents`). They are the Responses API's items in the SDK's own
 * spelling, which the SDK's model turns into Responses input on every call:
 * - calls and their results are paired by `callId` (TypeScript) or `call_id` (Python);
 * - a function's result is `function_call_result` (its `output` a string, a `{type:'text'}`
 *   part or a list of parts) in TypeScript, `function_call_output` in Python; a computer
 *   call's is `computer_call_result` / `computer_call_output`;
 * - a reasoning item holds its summary as `content` (TypeScript) or `summary` (Python);
 * - `hosted_tool_call`, `compaction` and `unknown` items carry their results inline.
 * Messages (`{role, content}`, with `type: 'message'` or without) are the Responses ones.
 *
 * Every rule of the Responses dialect applies to the same items once the SDK has converted
 * them (provider-rules.md, RS-1 to RS-8), so this dialect reads each item through
 * `asResponsesItem`, a view used only for the cut, the gates and the summariser: messages are
 * stored and returned exactly as the SDK wrote them, and the provider view is the SDK's own
 * items (with the ids RS-4 requires dropped, as in the Responses dialect).
 */
import { isJsonObject, stringLeaves, type JsonObject } from '../json';
import { checkString, objectProblem } from './common';
import { openaiResponses } from './openai-responses';
import type { Dialect, FieldProblem, Message } from './types';

/** SDK item types spelled differently in the Responses API. */
const RESPONSES_TYPE: Record<string, string> = {
  function_call_result: 'function_call_output',
  computer_call_result: 'computer_call_output',
  program: 'program_call',
  program_output: 'program_call_output',
};
/** Items that name their call, in either spelling: a call id is required on them. */
const CALL_ITEMS = new Set([
  'function_call',
  'function_call_result',
  'function_call_output',
  'computer_call',
  'computer_call_result',
  'computer_call_output',
  'shell_call',
  'shell_call_output',
  'apply_patch_call',
  'apply_patch_call_output',
  'program',
  'program_output',
]);

/**
 * The Responses item an SDK item becomes on the wire, as far as the rules read it: call ids
 * as `call_id`, result types renamed, a TypeScript reasoning item's `content` as its
 * `summary`, a single output part as a list. Messages are the same item.
 */
export function asResponsesItem(m: Message): Message {
  const type = typeof m.type === 'string' ? m.type : undefined;
  if (type === undefined || type === 'message') return m;
  const { callId, ...rest } = m;
  const view: JsonObject = { ...rest };
  if (RESPONSES_TYPE[type]) view.type = RESPONSES_TYPE[type];
  if (typeof callId === 'string') view.call_id = callId;
  if (type === 'reasoning' && view.summary === undefined) {
    const parts = Array.isArray(m.content) ? m.content : [];
    view.summary = parts.map((p) => (isJsonObject(p) && typeof p.text === 'string' ? { type: 'summary_text', text: p.text } : p));
    delete view.content;
  }
  if (isJsonObject(view.output) && (type === 'function_call_result' || type === 'function_call_output')) view.output = [view.output];
  return view;
}

const views = (messages: readonly Message[]): Message[] => messages.map(asResponsesItem);

/** The field a call id is read from, in the spelling the item uses. */
const callIdField = (m: JsonObject): string => (m.callId === undefined && m.call_id !== undefined ? 'call_id' : 'callId');

function check(raw: unknown): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  const type = m.type;
  if (type === undefined || type === 'message') return openaiResponses.check(m);
  if (typeof type !== 'string' || type === '') return { field: 'type', detail: 'must be a non-empty string' };
  if (CALL_ITEMS.has(type)) {
    const field = callIdField(m);
    const id = checkString(m[field], field, 1);
    if (id) return id;
  }
  if (type === 'function_call') {
    const name = checkString(m.name, 'name', 1);
    if (name) return name;
    if (typeof m.arguments !== 'string') return { field: 'arguments', detail: 'must be a string' };
  }
  if (type === 'function_call_result' || type === 'function_call_output') {
    const output = m.output;
    if (typeof output !== 'string' && !Array.isArray(output) && !isJsonObject(output)) {
      return { field: 'output', detail: output === undefined ? 'is required' : 'must be a string, a content part or a list of them' };
    }
  }
  if (type === 'reasoning') {
    for (const field of ['content', 'summary']) {
      if (m[field] !== undefined && !Array.isArray(m[field])) return { field, detail: 'must be an array of parts' };
    }
  }
  return undefined; // other and unknown items are kept as they came
}

const withoutId = (m: Message): Message => {
  const { id: _id, ...rest } = m;
  return rest;
};

export const openaiAgents: Dialect = {
  name: 'openai-agents',
  summaryMarkerField: 'content',
  estimateTexts: (m) => stringLeaves(m),
  keepsOpeningGroups: openaiResponses.keepsOpeningGroups,
  check,
  roleOf: (m) => openaiResponses.roleOf(asResponsesItem(m)),
  texts: (m) => openaiResponses.texts(asResponsesItem(m)),
  textOf: (m) => openaiResponses.textOf(asResponsesItem(m)),
  isInstruction: (m) => openaiResponses.isInstruction(asResponsesItem(m)),
  groups: (messages) => openaiResponses.groups(views(messages)),
  isRealUserRequest: (m) => openaiResponses.isRealUserRequest(asResponsesItem(m)),
  isSummary: (m) => openaiResponses.isSummary(asResponsesItem(m)),
  posesAsSummary: (m) => openaiResponses.posesAsSummary(asResponsesItem(m)),
  // A user message item: the same in the SDK's spelling as in the API's.
  summaryMessages: (text, next) => openaiResponses.summaryMessages(text, next && asResponsesItem(next)),
  render: (m, caps) => openaiResponses.render(asResponsesItem(m), caps),
  providerCheck: (messages) => openaiResponses.providerCheck(views(messages)),
  openCalls: (messages) => openaiResponses.openCalls(views(messages)),
  resultsOf: (messages, index, ids) => openaiResponses.resultsOf(views(messages), index, ids),
  holdReason: (messages) => openaiResponses.holdReason(views(messages)),
  toolCalls: (m) => openaiResponses.toolCalls(asResponsesItem(m)),
  toolResults: (m) => openaiResponses.toolResults(asResponsesItem(m)),
  maskResults(m, placeholder) {
    // The SDK's own spelling: a `function_call_result` keeps its output's shape (a string, or a text part).
    const [result] = openaiResponses.toolResults(asResponsesItem(m));
    if (m.type === 'function_call_result' && result) {
      const text = placeholder(result);
      return { ...m, output: typeof m.output === 'string' ? text : { type: 'text', text } };
    }
    return openaiResponses.maskResults(m, placeholder);
  },
  forProvider(messages) {
    // The Responses view drops RS-4's ids; the same ids are dropped from the SDK's own items.
    const seen = views(messages);
    const ready = openaiResponses.forProvider(seen);
    return messages.map((m, i) => (ready[i] === seen[i] ? m : withoutId(m)));
  },
};
