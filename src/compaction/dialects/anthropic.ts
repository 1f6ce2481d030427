/**
 * Anthropic Messages (`anthropic`): `{role: 'user' | 'assistant', content: string | Block[]}`
 * as agents store what the Messages API takes and returns (Claude Code logs among them), with
 * every extra field (`cache_control`, `citations`, ids, fields of block types this service
 * does not know) kept as it came. Rules: provider-rules.md, AN-1 to AN-9.
 *
 * A turn is a maximal run of consecutive entries of one role: the first-party API merges them
 * into one message (AN-5), and agents store them so (Claude Code writes the results of
 * parallel calls one per entry). The cut never falls inside a turn, and the provider rules are
 * checked on the merged view, with positions reported as the stored entries' (`messages.N`
 * is the N-th stored message, `content.M` its M-th block).
 *
 * Blocks: `text`, `image`, `document`, `tool_use` / `tool_result` (the client's tools, paired
 * across turns), `thinking` / `redacted_thinking`, the server's tools (`server_tool_use`,
 * `mcp_tool_use`) with their `*_tool_result` blocks (paired inside the assistant turn, AN-9),
 * and any other type, kept and never refused.
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
import type { Dialect, FieldProblem, Message, RenderCaps, StoredRole, ToolCall, ToolResult } from './types';

type Block = JsonObject;

/** A block with where it is stored: the entry's position and the block's position in its content. */
interface Placed {
  block: Block;
  at: number;
  j: number;
}

/** A run of consecutive entries of one role: what the first-party API sees as one message. */
interface Turn {
  role: string;
  start: number;
  end: number;
}

const SERVER_CALL_TYPES = ['server_tool_use', 'mcp_tool_use'];
const isThinking = (b: Block) => b.type === 'thinking' || b.type === 'redacted_thinking';
const isServerCall = (b: Block) => typeof b.type === 'string' && SERVER_CALL_TYPES.includes(b.type);
/** A server tool's result (`web_search_tool_result`, `code_execution_tool_result`, `mcp_tool_result`, ...): not the client's `tool_result`. */
const isServerResult = (b: Block) => typeof b.type === 'string' && b.type !== 'tool_result' && b.type.endsWith('_tool_result');

/** The message's blocks: string content is one text block (none when empty). */
function blocksOf(m: Message): Block[] {
  if (typeof m.content === 'string') return m.content === '' ? [] : [{ type: 'text', text: m.content }];
  if (!Array.isArray(m.content)) return [];
  return m.content.filter(isJsonObject);
}

const isEmptyContent = (m: Message) => m.content === '' || (Array.isArray(m.content) && m.content.length === 0);

function turnsOf(messages: readonly Message[]): Turn[] {
  const turns: Turn[] = [];
  messages.forEach((m, i) => {
    const role = String(m.role);
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.end = i;
    else turns.push({ role, start: i, end: i });
  });
  return turns;
}

function blocksIn(messages: readonly Message[], turn: Turn): Placed[] {
  const out: Placed[] = [];
  for (let at = turn.start; at <= turn.end; at++) blocksOf(messages[at]).forEach((block, j) => out.push({ block, at, j }));
  return out;
}

/** The text of a tool result's content (a string, or its text blocks, with placeholders for media). */
function resultText(content: JsonValue | undefined): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return asText(content);
  return content
    .map((b) => (isJsonObject(b) ? (b.type === 'text' && typeof b.text === 'string' ? b.text : mediaPlaceholder(b)) : asText(b)))
    .filter((s) => s !== '')
    .join(' ');
}

const textOf = (m: Message): string =>
  blocksOf(m)
    .filter((b) => b.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text as string)
    .join('\n');

// ---------------------------------------------------------------------------------------------
// check

function checkBlocks(blocks: JsonValue[], field: string): FieldProblem | undefined {
  for (let j = 0; j < blocks.length; j++) {
    const b = blocks[j];
    const at = `${field}[${j}]`;
    if (!isJsonObject(b)) return { field: at, detail: 'must be an object (a content block)' };
    if (typeof b.type !== 'string' || b.type === '') return { field: `${at}.type`, detail: 'must be a non-empty string' };
    if (b.type === 'text' && typeof b.text !== 'string') return { field: `${at}.text`, detail: 'a text block needs a string text' };
  }
  return undefined;
}

function checkMessage(raw: unknown, allowEmpty: boolean): FieldProblem | undefined {
  const shape = objectProblem(raw, '');
  if (shape) return shape;
  const m = raw as JsonObject;
  if (m.role !== 'user' && m.role !== 'assistant')
    return { field: 'role', detail: 'must be "user" or "assistant" (the system prompt is not a message in the Messages API)' };
  const content = m.content;
  if (typeof content === 'string') {
    if (content === '' && !allowEmpty) {
      return {
        field: 'content',
        detail: 'must not be empty: Anthropic refuses a message with empty content except an optional final assistant message (AN-4)',
      };
    }
    return undefined;
  }
  if (!Array.isArray(content)) return { field: 'content', detail: 'must be a string or an array of content blocks' };
  if (content.length === 0 && !allowEmpty) {
    return {
      field: 'content',
      detail: 'must hold at least one content block: Anthropic refuses a message with empty content except an optional final assistant message (AN-4)',
    };
  }
  const blocks = checkBlocks(content, 'content');
  if (blocks) return blocks;
  for (let j = 0; j < content.length; j++) {
    const b = content[j] as JsonObject;
    const at = `content[${j}]`;
    if (b.type === 'tool_use' || isServerCall(b)) {
      if (m.role !== 'assistant') return { field: `${at}.type`, detail: `a ${String(b.type)} block is only allowed in an assistant message` };
      const id = checkString(b.id, `${at}.id`, 1, 256);
      if (id) return id;
      const name = checkString(b.name, `${at}.name`, 1);
      if (name) return name;
      if (b.input !== undefined && !isJsonObject(b.input)) return { field: `${at}.input`, detail: 'must be an object (the tool input)' };
    } else if (b.type === 'tool_result') {
      if (m.role !== 'user') return { field: `${at}.type`, detail: 'a tool_result block is only allowed in a user message' };
      const id = checkString(b.tool_use_id, `${at}.tool_use_id`, 1, 256);
      if (id) return id;
      if (b.content !== undefined && typeof b.content !== 'string') {
        if (!Array.isArray(b.content)) return { field: `${at}.content`, detail: 'must be a string or an array of content blocks' };
        const inner = checkBlocks(b.content, `${at}.content`);
        if (inner) return inner;
      }
      if (b.is_error !== undefined && typeof b.is_error !== 'boolean') return { field: `${at}.is_error`, detail: 'must be a boolean' };
    } else if (isServerResult(b)) {
      const id = checkString(b.tool_use_id, `${at}.tool_use_id`, 1, 256);
      if (id) return id;
    } else if (b.type === 'thinking') {
      if (m.role !== 'assistant') return { field: `${at}.type`, detail: 'a thinking block is only allowed in an assistant message' };
      if (typeof b.thinking !== 'string') return { field: `${at}.thinking`, detail: 'a thinking block needs a string thinking' };
      if (b.signature !== undefined && typeof b.signature !== 'string') return { field: `${at}.signature`, detail: 'must be a string' };
    } else if (b.type === 'redacted_thinking') {
      if (m.role !== 'assistant') return { field: `${at}.type`, detail: 'a redacted_thinking block is only allowed in an assistant message' };
      if (typeof b.data !== 'string') return { field: `${at}.data`, detail: 'a redacted_thinking block needs a string data' };
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// calls, results, groups

/**
 * Calls and results by position: a `tool_result` answers a not yet answered `tool_use` with
 * its id in the immediately previous assistant turn (AN-1), so ids re-used across the
 * conversation pair correctly. Anything else is an orphan: a result after no such call, a
 * second result for one call, a server tool's result with no server call before it in its
 * assistant turn (AN-9). Server calls are answered inside their own turn, which is one group
 * anyway: they are not calls the agent answers, so they are not links.
 */
function links(messages: readonly Message[]): { calls: CallLink[]; orphans: number[]; turns: Turn[] } {
  const calls: CallLink[] = [];
  const orphans: number[] = [];
  const turns = turnsOf(messages);
  let previous: CallLink[] = [];
  for (const turn of turns) {
    const blocks = blocksIn(messages, turn);
    if (turn.role === 'assistant') {
      previous = [];
      const serverIds = new Set<string>();
      for (const { block, at } of blocks) {
        if (block.type === 'tool_use') {
          const link: CallLink = { at, id: String(block.id ?? ''), answeredAt: [] };
          calls.push(link);
          previous.push(link);
        } else if (isServerCall(block)) {
          serverIds.add(String(block.id ?? ''));
        } else if (isServerResult(block) && !serverIds.has(String(block.tool_use_id ?? ''))) {
          orphans.push(at);
        }
      }
      continue;
    }
    for (const { block, at } of blocks) {
      if (block.type !== 'tool_result') continue;
      const id = String(block.tool_use_id ?? '');
      const call = previous.find((c) => c.id === id && c.answeredAt.length === 0);
      if (call) call.answeredAt.push(at);
      else orphans.push(at);
    }
    previous = [];
  }
  return { calls, orphans, turns };
}

function groups(messages: readonly Message[]) {
  const { calls, orphans, turns } = links(messages);
  return {
    calls,
    groups: buildGroups(
      messages.length,
      calls,
      orphans,
      turns.map((t) => [t.start, t.end] as const),
    ),
  };
}

// ---------------------------------------------------------------------------------------------
// summary, requests, rendering

const isSummary = (m: Message) => (m.role === 'user' || m.role === 'assistant') && textOf(m).startsWith(SUMMARY_PREFIX);

function isRealUserRequest(m: Message): boolean {
  if (m.role !== 'user' || isSummary(m)) return false;
  const blocks = blocksOf(m);
  if (blocks.some((b) => b.type === 'tool_result')) return false;
  return blocks.some((b) => (b.type === 'text' ? typeof b.text === 'string' && b.text.trim().length > 0 : typeof b.type === 'string' && b.type !== ''));
}

const OPAQUE_KEYS = new Set(['encrypted_content', 'encrypted_index', 'signature', 'data']);
/** A server tool's result or an unknown block as readable JSON: no opaque payloads (encrypted page contents, signatures, base64 data). */
const readableJson = (value: JsonValue | undefined): string =>
  value === undefined ? '' : JSON.stringify(value, (k, v) => (OPAQUE_KEYS.has(k) ? undefined : v));

/** The readable strings inside a value, without opaque payloads. */
function readableLeaves(value: JsonValue | undefined, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) readableLeaves(v, out);
  else if (isJsonObject(value)) for (const [k, v] of Object.entries(value)) if (!OPAQUE_KEYS.has(k)) readableLeaves(v, out);
  return out;
}

function render(m: Message, caps: RenderCaps): string {
  const items: string[] = [];
  const calls: string[] = [];
  let onlyResults = true;
  for (const b of blocksOf(m)) {
    if (b.type === 'thinking' || b.type === 'redacted_thinking') continue; // no thinking text goes to the summariser
    if (b.type === 'tool_result') {
      const label = `${asText(b.tool_use_id)}${b.is_error === true ? ', error' : ''}`;
      items.push(`tool result (${label}): ${clip(resultText(b.content), caps.toolResultChars)}`);
      continue;
    }
    onlyResults = false;
    if (b.type === 'text') {
      if (typeof b.text === 'string' && b.text !== '') items.push(b.text);
    } else if (b.type === 'tool_use' || isServerCall(b)) {
      calls.push(`${asText(b.name)}(${clip(JSON.stringify(b.input ?? {}), caps.toolArgumentChars, 'these arguments')})`);
    } else if (isServerResult(b)) {
      const text = typeof b.content === 'string' ? b.content : readableJson(b.content);
      items.push(`tool result (${asText(b.tool_use_id)}, ${String(b.type)}): ${clip(text, caps.toolResultChars)}`);
    } else {
      items.push(mediaPlaceholder(b));
    }
  }
  if (m.role === 'user' && onlyResults && items.length > 0) return items.join(' ');
  return `${String(m.role)}:${items.length ? ` ${items.join(' ')}` : ''}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
}

/** Every text the provider counts: no signatures, no redacted or encrypted payloads, no base64 media, no citations (not counted as input). */
function texts(m: Message): string[] {
  const out: string[] = [];
  if (typeof m.content === 'string') return [m.content];
  for (const b of blocksOf(m)) {
    if (b.type === 'text') {
      if (typeof b.text === 'string') out.push(b.text);
    } else if (b.type === 'thinking') {
      if (typeof b.thinking === 'string') out.push(b.thinking);
    } else if (b.type === 'tool_use' || isServerCall(b)) {
      out.push(asText(b.name), JSON.stringify(b.input ?? {}), asText(b.id));
    } else if (b.type === 'tool_result') {
      out.push(asText(b.tool_use_id));
      if (typeof b.content === 'string') out.push(b.content);
      else if (Array.isArray(b.content)) for (const inner of b.content) if (isJsonObject(inner) && typeof inner.text === 'string') out.push(inner.text);
    } else if (isServerResult(b)) {
      out.push(asText(b.tool_use_id), ...readableLeaves(b.content));
    } else if (b.type === 'document' && isJsonObject(b.source)) {
      if (b.source.type === 'text' && typeof b.source.data === 'string') out.push(b.source.data);
      else if (Array.isArray(b.source.content))
        for (const inner of b.source.content) if (isJsonObject(inner) && typeof inner.text === 'string') out.push(inner.text);
      for (const k of ['title', 'context']) if (typeof b[k] === 'string') out.push(b[k]);
    } else if (b.type !== 'image' && b.type !== 'redacted_thinking') {
      // A block type this service does not know: its readable strings, without opaque payloads.
      const { type: _type, cache_control: _cache, citations: _citations, ...rest } = b;
      readableLeaves(rest, out);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// provider rules

/** `content[2].tool_use_id` → `content.2.tool_use_id`: Anthropic's way of naming a field. */
const apiPath = (field: string) => field.replace(/\[(\d+)\]/g, '.$1');
const code = (s: string) => `\`${s}\``;

function providerCheck(messages: readonly Message[]): string | undefined {
  if (messages.length === 0) return undefined;
  const lastIndex = messages.length - 1;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (isJsonObject(m) && isEmptyContent(m) && !(i === lastIndex && m.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    const problem = checkMessage(m, true);
    if (problem) return `messages.${i}${problem.field ? `.${apiPath(problem.field)}` : ''}: ${problem.detail}`;
  }
  if (messages[0].role !== 'user') return `messages.0: first message must use the "user" role`;

  const turns = turnsOf(messages);
  let calls: Map<string, Placed> | undefined; // the client calls of the previous (assistant) turn
  for (let t = 0; t < turns.length; t++) {
    const turn = turns[t];
    const blocks = blocksIn(messages, turn);
    if (turn.role === 'assistant') {
      // AN-7 (as far as it can be checked without the original): thinking blocks come first.
      if (blocks.some((p) => isThinking(p.block)) && !isThinking(blocks[0].block)) {
        const first = blocks[0];
        return `messages.${first.at}.content.${first.j}: an assistant message with ${code('thinking')} or ${code('redacted_thinking')} blocks must start with them (found a ${code(String(first.block.type))} block first); thinking blocks are never moved, merged or edited`;
      }
      calls = new Map();
      const serverCalls = new Map<string, Placed>();
      const serverAnswered = new Set<string>();
      for (const p of blocks) {
        const { block } = p;
        if (block.type === 'tool_use') {
          const id = String(block.id);
          if (calls.has(id)) return `messages.${p.at}.content.${p.j}: ${code('tool_use')} ids must be unique: ${id}`;
          calls.set(id, p);
        } else if (isServerCall(block)) {
          serverCalls.set(String(block.id), p);
        } else if (isServerResult(block)) {
          // AN-9: a server tool's result follows its call in the same assistant turn.
          const id = String(block.tool_use_id);
          if (!serverCalls.has(id) || serverAnswered.has(id)) {
            return `messages.${p.at}.content.${p.j}: unexpected ${code('tool_use_id')} found in ${code(String(block.type))} blocks: ${id}. Each ${code(String(block.type))} block must have a corresponding ${code('server_tool_use')} block before it in the same message.`;
          }
          serverAnswered.add(id);
        }
      }
      const unansweredServer = [...serverCalls.keys()].filter((id) => !serverAnswered.has(id));
      if (unansweredServer.length > 0 && t !== turns.length - 1) {
        const first = serverCalls.get(unansweredServer[0])!;
        return `messages.${first.at}.content.${first.j}: ${code('server_tool_use')} ids were found without their result blocks: ${unansweredServer.join(', ')}. Each server tool call must be followed by its result block in the same message (only a final, paused assistant message may end with one).`;
      }
      continue;
    }
    // A user turn: its tool_result blocks answer the previous assistant turn's tool_use blocks.
    const answered = new Set<string>();
    for (const p of blocks) {
      if (p.block.type !== 'tool_result') continue;
      const id = String(p.block.tool_use_id);
      if (!calls || !calls.has(id)) {
        return `messages.${p.at}.content.${p.j}: unexpected ${code('tool_use_id')} found in ${code('tool_result')} blocks: ${id}. Each ${code('tool_result')} block must have a corresponding ${code('tool_use')} block in the previous message.`;
      }
      if (answered.has(id))
        return `messages.${p.at}.content.${p.j}: each ${code('tool_use')} must have a single result. Found multiple ${code('tool_result')} blocks with id: ${id}`;
      answered.add(id);
    }
    if (calls && calls.size > 0) {
      // AN-3: the results come first in the user turn; a block before one hides it (the API reports AN-2).
      const firstOther = blocks.findIndex((p) => p.block.type !== 'tool_result');
      const late = firstOther < 0 ? [] : blocks.slice(firstOther).filter((p) => p.block.type === 'tool_result');
      // The last turn may answer only some calls: the agent is adding the rest (results of
      // parallel calls are stored one per entry), so those are open, not missing.
      const filling = t === turns.length - 1 && blocks.length > 0 && blocks.every((p) => p.block.type === 'tool_result');
      const missing = filling ? [] : [...calls.keys()].filter((id) => !answered.has(id));
      const notAfter = [...late.map((p) => String(p.block.tool_use_id)), ...missing];
      if (notAfter.length > 0) {
        const call = calls.get(notAfter[0])!;
        const before = late.length > 0 ? blocks[firstOther] : undefined;
        const note = before
          ? ` (${code('tool_result')} blocks must come first in that message: messages.${before.at}.content.${before.j} is a ${code(String(before.block.type))} block before them)`
          : '';
        return `messages.${call.at}: ${code('tool_use')} ids were found without ${code('tool_result')} blocks immediately after: ${notAfter.join(', ')}. Each ${code('tool_use')} block must have a corresponding ${code('tool_result')} block in the next message.${note}`;
      }
    }
    calls = undefined;
  }
  // tool_use blocks of a final assistant turn are open: the agent is about to add their results.
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// hold

function holdReason(messages: readonly Message[]): string | undefined {
  const thinkingOn = messages.some((m) => m.role === 'assistant' && blocksOf(m).some(isThinking));
  if (!thinkingOn) return undefined;
  const turns = turnsOf(messages);
  const last = turns[turns.length - 1];
  if (!last) return undefined;
  const blocks = blocksIn(messages, last).map((p) => p.block);
  const open = last.role === 'assistant' ? blocks.some((b) => b.type === 'tool_use') : blocks.some((b) => b.type === 'tool_result');
  if (!open) return undefined;
  return "an Anthropic tool loop is open with thinking on: its final assistant turn's thinking must stay valid (AN-6, AN-8); compact after the loop closes";
}

function toolCalls(m: Message): ToolCall[] {
  if (m.role !== 'assistant') return [];
  return blocksOf(m)
    .filter((b) => b.type === 'tool_use' || isServerCall(b))
    .map((b) => ({ id: asText(b.id), name: asText(b.name), input: b.input ?? {} }));
}

const asResult = (b: Block): ToolResult => ({ id: asText(b.tool_use_id), text: resultText(b.content), isError: b.is_error === true });

function toolResults(m: Message): ToolResult[] {
  return m.role === 'user'
    ? blocksOf(m)
        .filter((b) => b.type === 'tool_result')
        .map(asResult)
    : [];
}

/** Only the client's `tool_result` blocks are replaced: a server tool's result is the model's own turn. */
function maskResults(m: Message, placeholder: (result: ToolResult) => string): Message | undefined {
  if (m.role !== 'user' || !Array.isArray(m.content) || toolResults(m).length === 0) return undefined;
  return { ...m, content: m.content.map((b) => (isJsonObject(b) && b.type === 'tool_result' ? { ...b, content: placeholder(asResult(b)) } : b)) };
}

export const anthropic: Dialect = {
  name: 'anthropic',
  summaryMarkerField: 'content',
  estimateTexts: (m) => stringLeaves(m),
  keepsOpeningGroups: false,
  check: (message) => checkMessage(message, false),
  roleOf(m): StoredRole {
    if (m.role === 'assistant') return 'assistant';
    const blocks = blocksOf(m);
    return blocks.length > 0 && blocks.every((b) => b.type === 'tool_result') ? 'tool' : 'user';
  },
  texts,
  textOf,
  isInstruction: () => false,
  groups: (messages) => groups(messages).groups,
  isRealUserRequest,
  isSummary,
  posesAsSummary: (m) => blocksOf(m).some((b) => b.type === 'text' && typeof b.text === 'string' && carriesMarker(b.text)),
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
    const { calls, turns } = links(messages);
    const turn = turns.find((t) => t.start <= index && index <= t.end);
    if (!turn) return [];
    const positions = calls.filter((c) => c.at >= turn.start && c.at <= turn.end && ids.includes(c.id)).flatMap((c) => c.answeredAt);
    return [...new Set(positions)].sort((a, b) => a - b);
  },
  holdReason,
  toolCalls,
  toolResults,
  maskResults,
  forProvider: (messages) => [...messages],
};
