/**
 * The Vercel AI SDK's `ModelMessage` (`ai-sdk`, ai 7): what `generateText` / `streamText`
 * take as `messages` and hand back as `response.messages`, stored as JSON. A message is
 * `{role: 'system' | 'user' | 'assistant' | 'tool', content, providerOptions?}`:
 * - system: `content` a string;
 * - user: a string, or `text`, `image` and `file` parts;
 * - assistant: a string, or `text`, `file`, `reasoning`, `reasoning-file`, `custom`,
 *   `tool-call`, `tool-result` (a provider-executed tool's) and `tool-approval-request` parts;
 * - tool: `tool-result` and `tool-approval-response` parts.
 * A `tool-result`'s `output` is one of `text`, `json`, `error-text`, `error-json`,
 * `execution-denied` and `content`. Image and file data are base64 strings, URL strings or
 * provider references (`{openai: 'file-…'}`); bytes (a `Uint8Array`) are not JSON and are
 * converted by the adapter before they are appended. `providerOptions` (Anthropic's thinking
 * `signature` on a reasoning part among them) and every field this service does not know are
 * kept as they came. A part type the AI SDK does not know is refused: its converter cannot
 * send it to any provider.
 *
 * The AI SDK converts these messages for every provider it reaches (OpenAI Responses and
 * Chat, Anthropic, Gemini, ...), so the provider rules are what all of them accept
 * (provider-rules.md; test/support/strict-ai-sdk.ts converts with the AI SDK's own provider
 * packages and checks what they send with the strict fakes):
 * - system messages only at the start (Anthropic and Gemini take them as the instructions);
 * - the first message after them is the user's (Anthropic, Gemini);
 * - every user and assistant message sends some content (the AI SDK drops empty text parts;
 *   Anthropic and Gemini refuse an empty message);
 * - a message with tool calls comes right after a user message or tool results (Gemini, GM-1);
 *   its calls are answered, each once, by the run of tool messages right after it (the AI SDK
 *   merges that run into one message), and a result answers a call of the assistant message
 *   its run follows; calls of the final messages are open (the agent adds their results
 *   before it sends the head: the AI SDK itself refuses to send a call without its result);
 * - a tool call id is used once in the head (OpenAI and Anthropic refuse it twice);
 * - no provider-executed tool call or result: only the provider that ran it takes it back;
 * - file parts are images or PDF (the media every provider takes), not inline text;
 * - reasoning that Anthropic signed (`providerOptions.anthropic.signature` or
 *   `redactedData`: a thinking block) comes first in its assistant turn and does not end it,
 *   as the anthropic dialect checks (consecutive assistant messages are one turn for Anthropic).
 * The summary is a user message first after the system messages, with an acknowledgement
 * when a user message follows (keepsOpeningGroups false: Anthropic and Gemini want the first
 * turn to be the user's). With Anthropic thinking on, a compaction inside an open tool loop
 * is held, as in the anthropic dialect.
 */
import { isJsonObject, stringLeaves, type JsonObject, type JsonValue } from '../json';
import { asText, buildGroups, type CallLink, carriesMarker, checkString, clip, objectProblem, openCallsOf, SUMMARY_ACK_TEXT, SUMMARY_PREFIX } from './common';
import type { Dialect, FieldProblem, Message, RenderCaps, StoredRole, ToolCall, ToolResult } from './types';

type Part = JsonObject;

const ROLES = ['system', 'user', 'assistant', 'tool'] as const;
const PARTS: Record<string, readonly string[]> = {
  user: ['text', 'image', 'file'],
  assistant: ['text', 'file', 'reasoning', 'reasoning-file', 'custom', 'tool-call', 'tool-result', 'tool-approval-request'],
  tool: ['tool-result', 'tool-approval-response'],
};
const OUTPUT_TYPES = ['text', 'json', 'error-text', 'error-json', 'execution-denied', 'content'];
const CONTENT_OUTPUT_TYPES = [
  'text',
  'file',
  'file-data',
  'file-url',
  'file-id',
  'file-reference',
  'image-data',
  'image-url',
  'image-file-id',
  'image-file-reference',
  'custom',
];

/** The message's parts: string content is one text part (none when empty). */
function partsOf(m: Message): Part[] {
  if (typeof m.content === 'string') return m.content === '' ? [] : [{ type: 'text', text: m.content }];
  if (!Array.isArray(m.content)) return [];
  return m.content.filter(isJsonObject);
}

const isClientCall = (p: Part) => p.type === 'tool-call' && p.providerExecuted !== true;
const isProviderCall = (p: Part) => p.type === 'tool-call' && p.providerExecuted === true;
const anthropicOptions = (p: Part): JsonObject | undefined =>
  isJsonObject(p.providerOptions) && isJsonObject(p.providerOptions.anthropic) ? p.providerOptions.anthropic : undefined;
/** A reasoning part Anthropic sends back as a thinking block: it carries Anthropic's signature (or its redacted data). */
const isSignedThinking = (p: Part) => {
  const options = p.type === 'reasoning' ? anthropicOptions(p) : undefined;
  return options !== undefined && (typeof options.signature === 'string' || typeof options.redactedData === 'string');
};
/** What a part sends: an empty text part and approval requests are dropped (by the AI SDK's converter or the providers'). */
const sends = (p: Part) => !(p.type === 'text' && p.text === '') && p.type !== 'tool-approval-request';

const textOf = (m: Message): string =>
  partsOf(m)
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('');

// ---------------------------------------------------------------------------------------------
// check

const must = (field: string, detail: string): FieldProblem => ({ field, detail });

/** Image or file data as JSON holds it: a base64 or URL string, a tagged `{type, ...}` object, or a provider reference. */
function dataProblem(value: JsonValue | undefined, field: string, tagged: readonly string[]): FieldProblem | undefined {
  if (typeof value === 'string') return undefined;
  if (!isJsonObject(value))
    return must(field, 'must be a base64 or URL string, tagged data or a provider reference (bytes are converted to base64 before they are appended)');
  const type = value.type;
  if (typeof type === 'string' && ['data', 'url', 'reference', 'text'].includes(type)) {
    if (!tagged.includes(type)) return must(`${field}.type`, `must be one of ${tagged.join(', ')}`);
    if (type === 'data' && typeof value.data !== 'string') return must(`${field}.data`, 'must be a base64 string');
    if (type === 'url' && typeof value.url !== 'string') return must(`${field}.url`, 'must be a URL string');
    if (type === 'reference' && !isReference(value.reference)) return must(`${field}.reference`, 'must map provider names to file ids');
    if (type === 'text' && typeof value.text !== 'string') return must(`${field}.text`, 'must be a string');
    return undefined;
  }
  return isReference(value) ? undefined : must(field, 'must map provider names to file ids (a provider reference)');
}

const isReference = (value: JsonValue | undefined) => isJsonObject(value) && Object.values(value).every((v) => typeof v === 'string');

function outputProblem(output: JsonValue | undefined, field: string): FieldProblem | undefined {
  if (!isJsonObject(output)) return must(field, 'must be an object with a type (text, json, error-text, error-json, execution-denied, content)');
  const type = output.type;
  if (typeof type !== 'string' || !OUTPUT_TYPES.includes(type)) return must(`${field}.type`, `must be one of ${OUTPUT_TYPES.join(', ')}`);
  if ((type === 'text' || type === 'error-text') && typeof output.value !== 'string') return must(`${field}.value`, 'must be a string');
  if ((type === 'json' || type === 'error-json') && output.value === undefined) return must(`${field}.value`, 'is required (any JSON value)');
  if (type === 'execution-denied' && output.reason !== undefined && typeof output.reason !== 'string') return must(`${field}.reason`, 'must be a string');
  if (type === 'content') {
    if (!Array.isArray(output.value)) return must(`${field}.value`, 'must be an array of content parts');
    for (let k = 0; k < output.value.length; k++) {
      const part = output.value[k];
      const at = `${field}.value[${k}]`;
      if (!isJsonObject(part)) return must(at, 'must be an object (a content part)');
      if (typeof part.type !== 'string' || !CONTENT_OUTPUT_TYPES.includes(part.type))
        return must(`${at}.type`, `must be one of ${CONTENT_OUTPUT_TYPES.join(', ')}`);
      if (part.type === 'text' && typeof part.text !== 'string') return must(`${at}.text`, 'must be a string');
      if (part.type === 'file') {
        const data = dataProblem(part.data, `${at}.data`, ['data', 'url', 'reference', 'text']);
        if (data) return data;
        if (!isJsonObject(part.data)) return must(`${at}.data`, 'must be tagged data ({type: data | url | reference | text, ...})');
        if (typeof part.mediaType !== 'string') return must(`${at}.mediaType`, 'must be a string');
      }
    }
  }
  return undefined;
}

function partProblem(p: Part, role: string, at: string): FieldProblem | undefined {
  const type = p.type as string;
  switch (type) {
    case 'text':
    case 'reasoning':
      return typeof p.text === 'string' ? undefined : must(`${at}.text`, `a ${type} part needs a string text`);
    case 'image':
      if (p.mediaType !== undefined && typeof p.mediaType !== 'string') return must(`${at}.mediaType`, 'must be a string');
      return dataProblem(p.image, `${at}.image`, []);
    case 'file':
    case 'reasoning-file': {
      const data = dataProblem(p.data, `${at}.data`, type === 'file' ? ['data', 'url', 'reference', 'text'] : ['data', 'url']);
      if (data) return data;
      if (type === 'reasoning-file' && isJsonObject(p.data) && !['data', 'url'].includes(String(p.data.type)))
        return must(`${at}.data`, 'must be a base64 or URL string, or tagged data or url');
      if (typeof p.mediaType !== 'string' || p.mediaType === '') return must(`${at}.mediaType`, 'must be a non-empty string (an IANA media type)');
      if (p.filename !== undefined && typeof p.filename !== 'string') return must(`${at}.filename`, 'must be a string');
      return undefined;
    }
    case 'custom':
      return checkString(p.kind, `${at}.kind`, 1);
    case 'tool-call': {
      const id = checkString(p.toolCallId, `${at}.toolCallId`, 1);
      if (id) return id;
      const name = checkString(p.toolName, `${at}.toolName`, 1);
      if (name) return name;
      if (!isJsonObject(p.input)) return must(`${at}.input`, 'must be an object (the tool input)');
      if (p.providerExecuted !== undefined && typeof p.providerExecuted !== 'boolean') return must(`${at}.providerExecuted`, 'must be a boolean');
      return undefined;
    }
    case 'tool-result': {
      const id = checkString(p.toolCallId, `${at}.toolCallId`, 1);
      if (id) return id;
      const name = checkString(p.toolName, `${at}.toolName`, 1);
      if (name) return name;
      return outputProblem(p.output, `${at}.output`);
    }
    case 'tool-approval-request': {
      const approval = checkString(p.approvalId, `${at}.approvalId`, 1);
      return approval ?? checkString(p.toolCallId, `${at}.toolCallId`, 1);
    }
    case 'tool-approval-response': {
      const approval = checkString(p.approvalId, `${at}.approvalId`, 1);
      if (approval) return approval;
      return typeof p.approved === 'boolean' ? undefined : must(`${at}.approved`, 'must be a boolean');
    }
    default:
      return must(`${at}.type`, `a ${role} message takes ${PARTS[role].join(', ')} parts`);
  }
}

function check(raw: unknown): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  const role = m.role;
  if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) return must('role', `must be one of ${ROLES.join(', ')}`);
  if (m.providerOptions !== undefined && !isJsonObject(m.providerOptions)) return must('providerOptions', 'must be an object');
  const content = m.content;
  if (role === 'system')
    return typeof content === 'string' && content !== '' ? undefined : must('content', 'a system message needs a non-empty string content');
  if (typeof content === 'string') {
    if (role === 'tool') return must('content', 'a tool message needs an array of tool-result parts');
    return content === '' ? must('content', 'must not be empty (Anthropic and Gemini refuse a message without content)') : undefined;
  }
  if (!Array.isArray(content)) return must('content', `must be ${role === 'tool' ? 'an array of parts' : 'a string or an array of parts'}`);
  if (content.length === 0) return must('content', 'must hold at least one part (Anthropic and Gemini refuse a message without content)');
  for (let j = 0; j < content.length; j++) {
    const p = content[j];
    const at = `content[${j}]`;
    if (!isJsonObject(p)) return must(at, 'must be an object (a part)');
    if (typeof p.type !== 'string' || p.type === '') return must(`${at}.type`, 'must be a non-empty string');
    if (!PARTS[role].includes(p.type)) return must(`${at}.type`, `a ${role} message takes ${PARTS[role].join(', ')} parts, not ${p.type}`);
    if (p.providerOptions !== undefined && !isJsonObject(p.providerOptions)) return must(`${at}.providerOptions`, 'must be an object');
    const problem = partProblem(p, role, at);
    if (problem) return problem;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// calls, results, groups

/**
 * Calls and results by position: the results in the run of tool messages right after an
 * assistant message answer its (client) calls, each once, so ids re-used across turns pair
 * correctly. A result anywhere else, or a second one for a call, is an orphan. A
 * provider-executed call is answered inside its own message: not a link.
 */
function links(messages: readonly Message[]): { calls: CallLink[]; orphans: number[] } {
  const calls: CallLink[] = [];
  const orphans: number[] = [];
  let open: CallLink[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      for (const p of partsOf(m)) {
        if (p.type !== 'tool-result') continue;
        const call = open.find((c) => c.id === p.toolCallId && c.answeredAt.length === 0);
        if (call) call.answeredAt.push(i);
        else orphans.push(i);
      }
      return;
    }
    open = [];
    if (m.role !== 'assistant') return;
    for (const p of partsOf(m)) {
      if (!isClientCall(p)) continue;
      const link: CallLink = { at: i, id: String(p.toolCallId ?? ''), answeredAt: [] };
      calls.push(link);
      open.push(link);
    }
  });
  return { calls, orphans };
}

function groups(messages: readonly Message[]) {
  const { calls, orphans } = links(messages);
  return { calls, groups: buildGroups(messages.length, calls, orphans) };
}

// ---------------------------------------------------------------------------------------------
// summary, requests, rendering

const isSummary = (m: Message) => (m.role === 'user' || m.role === 'assistant') && textOf(m).startsWith(SUMMARY_PREFIX);

function isRealUserRequest(m: Message): boolean {
  if (m.role !== 'user' || isSummary(m)) return false;
  return partsOf(m).some((p) => (p.type === 'text' ? typeof p.text === 'string' && p.text.trim().length > 0 : p.type === 'image' || p.type === 'file'));
}

/** A media or file part as the summariser sees it: its kind and name or media type, never its data. */
function placeholder(p: Part): string {
  const label = p.filename ?? p.mediaType;
  return `[${String(p.type)}${typeof label === 'string' && label !== '' ? `: ${label}` : ''}]`;
}

/** A tool result's output as text: strings as they are, JSON as JSON, content parts' texts with placeholders for media. */
function outputText(output: JsonValue | undefined): string {
  if (!isJsonObject(output)) return asText(output);
  switch (output.type) {
    case 'text':
    case 'error-text':
      return asText(output.value);
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value ?? null);
    case 'execution-denied':
      return `[execution denied${typeof output.reason === 'string' && output.reason !== '' ? `: ${output.reason}` : ''}]`;
    case 'content':
      return (Array.isArray(output.value) ? output.value : [])
        .map((v) => (isJsonObject(v) ? (v.type === 'text' && typeof v.text === 'string' ? v.text : placeholder(v)) : asText(v)))
        .filter((s) => s !== '')
        .join(' ');
    default:
      return asText(output.value);
  }
}

const isErrorOutput = (output: JsonValue | undefined) =>
  isJsonObject(output) && (output.type === 'error-text' || output.type === 'error-json' || output.type === 'execution-denied');

function render(m: Message, caps: RenderCaps): string {
  const items: string[] = [];
  const calls: string[] = [];
  let onlyResults = true;
  for (const p of partsOf(m)) {
    if (p.type === 'reasoning' || p.type === 'reasoning-file') continue; // no reasoning goes to the summariser
    if (p.type === 'tool-approval-request' || p.type === 'tool-approval-response') continue;
    if (p.type === 'tool-result') {
      const label = `${asText(p.toolName)}, ${asText(p.toolCallId)}${isErrorOutput(p.output) ? ', error' : ''}`;
      items.push(`tool result (${label}): ${clip(outputText(p.output), caps.toolResultChars)}`);
      continue;
    }
    onlyResults = false;
    if (p.type === 'text') {
      if (typeof p.text === 'string' && p.text !== '') items.push(p.text);
    } else if (p.type === 'tool-call') {
      calls.push(`${asText(p.toolName)}(${clip(JSON.stringify(p.input ?? {}), caps.toolArgumentChars, 'these arguments')})`);
    } else if (p.type === 'custom') {
      items.push(`[custom: ${asText(p.kind)}]`);
    } else {
      items.push(placeholder(p));
    }
  }
  if (m.role === 'tool' && onlyResults) return items.join(' ');
  return `${String(m.role)}:${items.length ? ` ${items.join(' ')}` : ''}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
}

/** The texts of a tool result's output a provider counts: no media data. */
function outputTexts(output: JsonValue | undefined): string[] {
  if (!isJsonObject(output)) return [];
  if (output.type === 'content') {
    const out: string[] = [];
    for (const v of Array.isArray(output.value) ? output.value : []) if (isJsonObject(v) && typeof v.text === 'string') out.push(v.text);
    return out;
  }
  if (output.type === 'execution-denied') return typeof output.reason === 'string' ? [output.reason] : [];
  return [output.type === 'text' || output.type === 'error-text' ? asText(output.value) : JSON.stringify(output.value ?? null)];
}

/** Every text a provider counts: no signatures, no provider options, no media data. */
function texts(m: Message): string[] {
  if (typeof m.content === 'string') return [m.content];
  const out: string[] = [];
  for (const p of partsOf(m)) {
    if (p.type === 'text' || p.type === 'reasoning') {
      if (typeof p.text === 'string') out.push(p.text);
    } else if (p.type === 'tool-call') {
      out.push(asText(p.toolName), JSON.stringify(p.input ?? {}), asText(p.toolCallId));
    } else if (p.type === 'tool-result') {
      out.push(asText(p.toolCallId), asText(p.toolName), ...outputTexts(p.output));
    } else if (p.type === 'file' && isJsonObject(p.data) && p.data.type === 'text' && typeof p.data.text === 'string') {
      out.push(p.data.text);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// provider rules

const apiPath = (field: string) => field.replace(/\[(\d+)\]/g, '.$1');

/** The media types every provider the AI SDK reaches takes in a file part: images and PDF. */
const sendableMedia = (mediaType: JsonValue | undefined) =>
  typeof mediaType === 'string' && (/^image(\/|$)/.test(mediaType) || mediaType === 'application/pdf');

function providerCheck(messages: readonly Message[]): string | undefined {
  if (messages.length === 0) return undefined;
  for (let i = 0; i < messages.length; i++) {
    const problem = check(messages[i]);
    if (problem) return `messages.${i}${problem.field ? `.${apiPath(problem.field)}` : ''}: ${problem.detail}`;
  }
  let first = 0;
  while (first < messages.length && messages[first].role === 'system') first++;
  const late = messages.findIndex((m, i) => i > first && m.role === 'system');
  if (late >= 0)
    return `messages.${late}: system messages are only supported at the beginning of the conversation (Anthropic and Gemini take them as the instructions)`;
  if (first === messages.length) return `messages: a request needs a user message after the system messages`;
  if (messages[first].role !== 'user')
    return `messages.${first}: the first message after the system messages must be the user's (Anthropic and Gemini refuse another first turn)`;

  const seen = new Map<string, number>(); // every tool call id of the head: OpenAI and Anthropic refuse one used twice
  let callsOfRun: Map<string, number> | undefined; // the client calls the current run of tool messages answers
  let answered = new Set<string>();
  let caller = -1;
  const unanswered = (until: number) => {
    if (!callsOfRun) return undefined;
    const missing = [...callsOfRun.keys()].filter((id) => !answered.has(id));
    return missing.length > 0
      ? `messages.${caller}: tool calls ${missing.join(', ')} have no tool-result in the tool messages right after them (before message ${until}); every tool call needs its result before the conversation goes on`
      : undefined;
  };
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const parts = partsOf(m);
    if (m.role === 'tool') {
      for (let j = 0; j < parts.length; j++) {
        const p = parts[j];
        if (p.type !== 'tool-result') continue;
        const id = String(p.toolCallId);
        if (!callsOfRun?.has(id)) return `messages.${i}.content.${j}: tool-result ${id} answers no tool-call of the assistant message its tool messages follow`;
        if (answered.has(id)) return `messages.${i}.content.${j}: tool call ${id} is answered twice`;
        answered.add(id);
      }
      continue;
    }
    const missing = unanswered(i);
    if (missing) return missing;
    callsOfRun = undefined;
    answered = new Set();
    if (m.role === 'system') continue;
    if (parts.filter(sends).length === 0)
      return `messages.${i}: the message sends no content (only empty text or approval requests); Anthropic and Gemini refuse a message without content`;
    for (let j = 0; j < parts.length; j++) {
      const p = parts[j];
      if (p.type === 'file' && (!sendableMedia(p.mediaType) || (isJsonObject(p.data) && p.data.type === 'text')))
        return `messages.${i}.content.${j}: a file of media type ${String(p.mediaType)}${isJsonObject(p.data) && p.data.type === 'text' ? ' given as text' : ''} is not taken by every provider the AI SDK reaches (images and PDF are)`;
    }
    if (m.role !== 'assistant') continue;
    const client = new Map<string, number>();
    for (let j = 0; j < parts.length; j++) {
      const p = parts[j];
      if (isProviderCall(p) || p.type === 'tool-result')
        return `messages.${i}.content.${j}: a provider-executed tool ${p.type === 'tool-result' ? 'result' : 'call'} is sent back only to the provider that ran it (OpenAI by item reference, Anthropic as its server tool block); another provider refuses it`;
      if (!isClientCall(p)) continue;
      const id = String(p.toolCallId);
      if (seen.has(id))
        return `messages.${i}.content.${j}: tool call id ${id} is used twice (first in message ${seen.get(id)}); OpenAI and Anthropic refuse a request with an id twice`;
      seen.set(id, i);
      client.set(id, j);
    }
    if (client.size > 0) {
      const before = messages[i - 1]?.role;
      if (before !== 'user' && before !== 'tool')
        return `messages.${i}: a message with tool calls must come right after a user message or tool results (Gemini: function call turn comes immediately after a user turn or after a function response turn)`;
      callsOfRun = client;
      caller = i;
    }
  }
  // Calls of the final assistant message (and a partial run of results after it) are open: the
  // agent adds the rest of the results before it sends the head (the AI SDK refuses to send it so).

  // Anthropic's thinking (AN-7 as far as order goes): signed reasoning comes first in its
  // assistant turn, and a turn does not end with it (consecutive assistant messages are one turn).
  for (let i = 0; i < messages.length; i++) {
    if (messages[i].role !== 'assistant' || messages[i - 1]?.role === 'assistant') continue;
    let end = i;
    while (messages[end + 1]?.role === 'assistant') end++;
    const turn = messages.slice(i, end + 1).flatMap((m, k) => partsOf(m).flatMap((p, j) => (sends(p) ? [{ p, at: i + k, j }] : [])));
    if (!turn.some(({ p }) => isSignedThinking(p))) continue;
    const firstOther = turn.findIndex(({ p }) => !isSignedThinking(p));
    const misplaced = firstOther < 0 ? undefined : turn.slice(firstOther).find(({ p }) => isSignedThinking(p));
    if (misplaced) {
      const other = turn[firstOther];
      return `messages.${misplaced.at}.content.${misplaced.j}: reasoning Anthropic signed (a thinking block) must come first in its assistant turn, before messages.${other.at}.content.${other.j} (a ${String(other.p.type)} part); thinking blocks are never moved, merged or edited`;
    }
    const last = turn[turn.length - 1];
    if (isSignedThinking(last.p))
      return `messages.${last.at}.content.${last.j}: an assistant turn cannot end with reasoning Anthropic signed (a thinking block)`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// hold, tools, masking

function holdReason(messages: readonly Message[]): string | undefined {
  const thinkingOn = messages.some((m) => m.role === 'assistant' && partsOf(m).some(isSignedThinking));
  if (!thinkingOn) return undefined;
  let at = messages.length - 1;
  while (at >= 0 && messages[at].role === 'tool') at--;
  const last = messages[messages.length - 1];
  const open = last?.role === 'tool' ? messages[at]?.role === 'assistant' : last?.role === 'assistant' && partsOf(last).some(isClientCall);
  if (!open) return undefined;
  return "an Anthropic tool loop is open with thinking on: its final assistant turn's thinking must stay valid (AN-6, AN-8); compact after the loop closes";
}

const asResult = (p: Part): ToolResult => ({
  id: asText(p.toolCallId),
  name: asText(p.toolName),
  text: outputText(p.output),
  isError: isErrorOutput(p.output),
});

/** Only the tool messages' results: a provider-executed tool's result in an assistant message is the model's own turn. */
const toolResults = (m: Message): ToolResult[] =>
  m.role === 'tool'
    ? partsOf(m)
        .filter((p) => p.type === 'tool-result')
        .map(asResult)
    : [];

/** A masked result keeps its ids, name and error mark: its output becomes `{type: 'text'}` (`error-text` for an error) of the placeholder. */
function maskResults(m: Message, placeholder: (result: ToolResult) => string): Message | undefined {
  if (m.role !== 'tool' || !Array.isArray(m.content) || toolResults(m).length === 0) return undefined;
  return {
    ...m,
    content: m.content.map((p) => {
      if (!isJsonObject(p) || p.type !== 'tool-result') return p;
      const result = asResult(p);
      return { ...p, output: { type: result.isError ? 'error-text' : 'text', value: placeholder(result) } };
    }),
  };
}

export const aiSdk: Dialect = {
  name: 'ai-sdk',
  summaryMarkerField: 'content',
  estimateTexts: (m) => stringLeaves(m),
  keepsOpeningGroups: false,
  check,
  roleOf: (m): StoredRole => (m.role === 'system' || m.role === 'assistant' || m.role === 'tool' ? m.role : 'user'),
  texts,
  textOf,
  isInstruction: (m) => m.role === 'system',
  groups: (messages) => groups(messages).groups,
  isRealUserRequest,
  isSummary,
  posesAsSummary: (m) => partsOf(m).some((p) => p.type === 'text' && typeof p.text === 'string' && carriesMarker(p.text)),
  summaryMessages(text, next) {
    const summary: Message = { role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\n${text.trim()}` }] };
    return next?.role === 'user' ? [summary, { role: 'assistant', content: [{ type: 'text', text: SUMMARY_ACK_TEXT }] }] : [summary];
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
  holdReason,
  toolCalls: (m): ToolCall[] =>
    m.role === 'assistant'
      ? partsOf(m)
          .filter((p) => p.type === 'tool-call')
          .map((p) => ({ id: asText(p.toolCallId), name: asText(p.toolName), input: p.input ?? {} }))
      : [],
  toolResults,
  maskResults,
  forProvider: (messages) => [...messages],
};
