/**
 * A strict local Anthropic Messages API server for tests: POST /v1/messages, streamed (SSE)
 * and not. It validates `messages` the way the first-party Anthropic API does and answers
 * HTTP 400 with Anthropic's error body (`{type:'error', error:{type:'invalid_request_error',
 * message}}`) and message exactly where Anthropic would refuse the transcript (rules AN-1…AN-7
 * of /work/shared/reference/provider-rules.md). Every request is recorded, and every refusal
 * with its rule and reason, so a test can assert "0 rejected" and know that the assertion
 * could fail.
 *
 * Like the first-party API it merges consecutive messages of one role into one turn before
 * checking the tool pairing (AN-5): a turn stored as several entries is fine, a note that
 * lands before the `tool_result` blocks of its turn is not (AN-3). Error positions
 * (`messages.N.content.M`) name the message and block as sent, before merging.
 *
 * Stateful like Anthropic: every thinking block it generated is remembered (its text under its
 * signature), and a thinking block must come back byte-identical, signature included (AN-7);
 * a signature it never issued is refused the same way. `redacted_thinking` blocks are taken as
 * they come (the fake never issues one, so it has nothing to compare them with).
 *
 * AN-6 reads "the assistant turn of an open tool loop" as Anthropic does: the assistant
 * messages since the last real user message (one without `tool_result` blocks) are one turn,
 * and its first message must start with a thinking block; the later messages of the loop may
 * have none (thinking without interleaving).
 *
 * It serves two callers:
 * - the service's summariser (its `system` starts "You compact the transcript", or it asks
 *   for `summariserModel`), or a request whose last user message asks for text only (Claude
 *   Code's compaction): answered with a text block holding a summary;
 * - a scripted agent (model `agent-model`, or any model starting with it, each with its own
 *   script): answered from a seeded script with, when the request has thinking on, a thinking
 *   block with a signature (always at the start of a tool loop, on half the later replies of
 *   one, as interleaved thinking does), then one or several `tool_use` blocks (`toolu_…` ids,
 *   sometimes with 5-20 KB of input) or a text answer. A request that offers client tools
 *   (`tools` with names) is answered, like Anthropic, with calls of those tools only: the
 *   script's call n uses the n-th offered tool (round robin), its input built from the tool's
 *   `input_schema` (each required string property `src/module-<n>.ts`); without `tools` the
 *   script's own tool names and inputs are used.
 *
 * `url` is the Anthropic SDK's `baseURL` (no /v1: the SDK adds /v1/messages).
 */
import type { ContentBlock, Message, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import {
  agentScripts,
  type Caller,
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

interface AnthropicErrorBody {
  type: 'error';
  error: { type: 'invalid_request_error' | 'not_found_error'; message: string };
}

type AnthropicRefusal = StrictRefusal<AnthropicErrorBody>;

/** What the server generated: the text of every thinking block, under its signature; every compaction block, under its encrypted content. */
interface AnthropicMemory {
  thinking: Map<string, string>;
  /** Absent in a stateless check (test/support/strict-check.ts): compaction blocks are then taken as they come. */
  compactions?: Map<string, { content: string; model: string }>;
}

const newMemory = (): AnthropicMemory => ({ thinking: new Map() });

/** Anthropic's compact_20260112 edit compacts only from this many input tokens. */
const COMPACTION_TRIGGER_MINIMUM = 50_000;
const invalidCompaction = (n: number, m: number) => `messages.${n}.content.${m}: Invalid \`encrypted_content\` in \`compaction\` block`;

const refuse = (rule: string, reason: string, message: string): AnthropicRefusal => ({
  status: 400,
  rule,
  reason,
  body: { type: 'error', error: { type: 'invalid_request_error', message } },
});

export const emptyContent = (n: number) => `messages.${n}: all messages must have non-empty content except for the optional final assistant message`;
export const FIRST_MESSAGE_USER = 'messages: first message must use the "user" role';
export const unexpectedToolUseId = (n: number, m: number, id: string) =>
  `messages.${n}.content.${m}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
export const toolUseWithoutResult = (n: number, ids: string[]) =>
  `messages.${n}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${ids.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
export const thinkingFirst = (n: number, found: string) =>
  `messages.${n}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
export const invalidSignature = (n: number, m: number) => `messages.${n}.content.${m}: Invalid \`signature\` in \`thinking\` block`;
export const thinkingNotFirst = (n: number, found: string) =>
  `messages.${n}.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found ${found}.`;
export const thinkingLast = (n: number) => `messages.${n}: The final block in an assistant message cannot be \`thinking\`.`;
export const thinkingDisabledFinal = (n: number, m: number) =>
  `messages.${n}.content.${m}: When thinking is disabled, an \`assistant\` message in the final position cannot contain \`thinking\`. To use thinking blocks, enable \`thinking\` in your request.`;
export const thinkingModified = (n: number, m: number) =>
  `messages.${n}.content.${m}: \`thinking\` or \`redacted_thinking\` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`;

type Block = Record<string, unknown> & { type?: unknown };

/**
 * A `system` message in `messages` (the API's mid-conversation system messages,
 * `SystemMessageParam`: `content` a string or text blocks). Refused where it is not text, is
 * empty, comes first (the first message is a user's), or sits between an assistant message's
 * `tool_use` blocks and the results that must follow them at once.
 */
function checkSystemMessage(content: unknown, n: number, previous: { role: string; blocks: Placed[] } | undefined): AnthropicRefusal | null {
  if (typeof content !== 'string' && !Array.isArray(content))
    return refuse('shape', `messages.${n}.content is missing`, `messages.${n}.content: Field required`);
  if (content.length === 0) return refuse('AN-4', `messages.${n} has empty content`, emptyContent(n));
  if (Array.isArray(content)) {
    for (let m = 0; m < content.length; m++) {
      const block = content[m] as Block | null;
      if (block?.type !== 'text') {
        return refuse('shape', `messages.${n}.content.${m} is not a text block in a system message`, `messages.${n}.content.${m}.type: Input should be 'text'`);
      }
      if (typeof block.text !== 'string' || block.text.length === 0) {
        return refuse('AN-4', `messages.${n}.content.${m} is an empty text block`, 'messages: text content blocks must be non-empty');
      }
    }
  }
  if (!previous) return refuse('AN-5', 'the first message is a system message', FIRST_MESSAGE_USER);
  const calls = previous.role === 'assistant' ? previous.blocks.filter((p) => p.block.type === 'tool_use') : [];
  if (calls.length > 0) {
    const ids = calls.map((p) => p.block.id as string);
    return refuse('AN-2', `a system message comes between tool_use ${ids.join(', ')} and its results`, toolUseWithoutResult(calls[0].n, ids));
  }
  return null;
}
/** A content block with where it was sent: message `n`, block `m`. */
interface Placed {
  block: Block;
  n: number;
  m: number;
}
/** Consecutive messages of one role, merged as the first-party API merges them. */
interface Turn {
  role: 'user' | 'assistant';
  /** Index of the first message of the turn. */
  n: number;
  blocks: Placed[];
}

const isThinking = (block: Block) => block.type === 'thinking' || block.type === 'redacted_thinking';

/**
 * Validates a Messages API request body as the first-party Anthropic API does. Returns the
 * refusal (HTTP status, Anthropic's error body, the rule and the reason), or null when the
 * request is acceptable. Without `memory` it knows no signature: every thinking block is then
 * refused as forged (AN-7), as Anthropic refuses a signature it did not issue.
 */
export function validateAnthropicRequest(body: unknown, memory: AnthropicMemory = newMemory()): AnthropicRefusal | null {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return refuse('shape', 'the body is not a JSON object', 'There was an error parsing the body of your request.');
  const b = body as { model?: unknown; max_tokens?: unknown; messages?: unknown; thinking?: { type?: unknown } | null };
  if (typeof b.model !== 'string' || b.model.length === 0) return refuse('shape', 'model is missing', 'model: Field required');
  if (typeof b.max_tokens !== 'number') return refuse('shape', 'max_tokens is missing', 'max_tokens: Field required');
  if (!Array.isArray(b.messages)) return refuse('shape', 'messages is missing', 'messages: Field required');
  const messages = b.messages as unknown[];
  if (messages.length === 0) return refuse('shape', 'messages is empty', 'messages: at least one message is required');

  // Each message: its role, its content as blocks, no empty content (AN-4).
  const placed: { role: 'user' | 'assistant'; blocks: Placed[] }[] = [];
  for (let n = 0; n < messages.length; n++) {
    const message = messages[n] as { role?: unknown; content?: unknown } | null;
    if (!message || typeof message !== 'object') return refuse('shape', `messages.${n} is not an object`, `messages.${n}: Input should be a valid dictionary`);
    if (message.role === 'system') {
      // A mid-conversation system message (SystemMessageParam): text only, never first, never
      // between a tool_use and its results; it is no part of the user/assistant turns.
      const refusal = checkSystemMessage(message.content, n, placed.at(-1));
      if (refusal) return refusal;
      continue;
    }
    if (message.role !== 'user' && message.role !== 'assistant') {
      return refuse('shape', `messages.${n} has role ${String(message.role)}`, `messages.${n}.role: Input should be 'user', 'assistant' or 'system'`);
    }
    const content = message.content;
    if (typeof content !== 'string' && !Array.isArray(content))
      return refuse('shape', `messages.${n}.content is missing`, `messages.${n}.content: Field required`);
    const finalAssistant = n === messages.length - 1 && message.role === 'assistant';
    if (content.length === 0 && !finalAssistant) return refuse('AN-4', `messages.${n} has empty content`, emptyContent(n));
    const blocks: Placed[] = [];
    if (typeof content === 'string') {
      if (content.length > 0) blocks.push({ block: { type: 'text', text: content }, n, m: 0 });
    } else {
      for (let m = 0; m < content.length; m++) {
        const block = content[m] as Block | null;
        if (!block || typeof block !== 'object' || typeof block.type !== 'string') {
          return refuse('shape', `messages.${n}.content.${m} has no type`, `messages.${n}.content.${m}.type: Field required`);
        }
        if (block.type === 'text' && (typeof block.text !== 'string' || block.text.length === 0)) {
          return refuse('AN-4', `messages.${n}.content.${m} is an empty text block`, 'messages: text content blocks must be non-empty');
        }
        if (block.type === 'tool_use' && (typeof block.id !== 'string' || typeof block.name !== 'string')) {
          return refuse('shape', `messages.${n}.content.${m} is a tool_use without id or name`, `messages.${n}.content.${m}.tool_use.id: Field required`);
        }
        if (block.type === 'tool_result' && typeof block.tool_use_id !== 'string') {
          return refuse(
            'shape',
            `messages.${n}.content.${m} is a tool_result without tool_use_id`,
            `messages.${n}.content.${m}.tool_result.tool_use_id: Field required`,
          );
        }
        if (block.type === 'thinking' && (typeof block.thinking !== 'string' || typeof block.signature !== 'string')) {
          const field = typeof block.thinking !== 'string' ? 'thinking' : 'signature';
          return refuse(
            'AN-7',
            `messages.${n}.content.${m} is a thinking block without ${field}`,
            `messages.${n}.content.${m}.thinking.${field}: Field required`,
          );
        }
        blocks.push({ block, n, m });
      }
    }
    placed.push({ role: message.role, blocks });
  }

  // AN-5: a user first; consecutive messages of one role are one turn.
  // A compaction block sent back first stands for the messages it summarised: the conversation may start with it.
  const startsWithCompaction = placed[0]?.role === 'assistant' && placed[0].blocks[0]?.block.type === 'compaction';
  if (placed.length === 0 || (placed[0].role !== 'user' && !startsWithCompaction))
    return refuse('AN-5', 'the first message is not a user message', FIRST_MESSAGE_USER);
  const turns: Turn[] = [];
  placed.forEach((message, n) => {
    const last = turns.at(-1);
    if (last?.role === message.role) last.blocks.push(...message.blocks);
    else turns.push({ role: message.role, n, blocks: [...message.blocks] });
  });

  // `tool_use` ids are unique across the conversation.
  const toolUseIds = new Set<string>();
  for (const turn of turns) {
    for (const { block, n, m } of turn.blocks) {
      if (block.type !== 'tool_use') continue;
      const id = block.id as string;
      if (toolUseIds.has(id)) return refuse('AN-1', `tool_use id ${id} is used twice`, `messages.${n}.content.${m}: \`tool_use\` ids must be unique`);
      toolUseIds.add(id);
    }
  }

  // AN-1 / AN-2 / AN-3: each result answers a call of the previous turn; each call is answered
  // by the leading tool_result blocks of the next turn.
  for (let t = 0; t < turns.length; t++) {
    const turn = turns[t];
    if (turn.role === 'user') {
      const previous = t > 0 ? turns[t - 1] : undefined;
      const calls = new Set((previous?.blocks ?? []).filter((p) => p.block.type === 'tool_use').map((p) => p.block.id as string));
      for (const { block, n, m } of turn.blocks) {
        if (block.type !== 'tool_result' || calls.has(block.tool_use_id as string)) continue;
        const id = block.tool_use_id as string;
        return refuse('AN-1', `tool_result ${id} answers no tool_use of the previous turn`, unexpectedToolUseId(n, m, id));
      }
      continue;
    }
    const uses = turn.blocks.filter((p) => p.block.type === 'tool_use');
    if (uses.length === 0) continue;
    const next = turns[t + 1];
    const leading = new Set<string>();
    const later = new Set<string>();
    let inLead = true;
    for (const { block } of next?.blocks ?? []) {
      if (block.type !== 'tool_result') inLead = false;
      else (inLead ? leading : later).add(block.tool_use_id as string);
    }
    const unanswered = uses.filter((p) => !leading.has(p.block.id as string));
    if (unanswered.length > 0) {
      const ids = unanswered.map((p) => p.block.id as string);
      const afterText = ids.filter((id) => later.has(id));
      return afterText.length > 0
        ? refuse('AN-3', `tool_result blocks for ${afterText.join(', ')} come after other content in their turn`, toolUseWithoutResult(unanswered[0].n, ids))
        : refuse('AN-2', `tool_use ${ids.join(', ')} not answered in the next turn`, toolUseWithoutResult(unanswered[0].n, ids));
    }
  }

  // AN-7: thinking blocks are byte-identical to what was generated (signature included); with
  // thinking off the final assistant message holds none; a turn that holds thinking starts with
  // it and does not end with it; in the latest assistant turn no thinking block follows other
  // content (two responses merged into one turn, a block moved). Anthropic's texts for each.
  for (const turn of turns) {
    if (turn.role !== 'assistant') continue;
    for (const { block, n, m } of turn.blocks) {
      if (block.type !== 'thinking') continue;
      const original = memory.thinking.get(block.signature as string);
      if (original === undefined || original !== block.thinking) {
        return refuse(
          'AN-7',
          original !== undefined ? `thinking text of messages.${n}.content.${m} was changed` : `messages.${n}.content.${m} has a signature never issued`,
          invalidSignature(n, m),
        );
      }
    }
  }
  // Compaction blocks come back byte-exact, to the model that made them (a failed one, `content: null`, is a no-op).
  for (const turn of memory.compactions ? turns : []) {
    for (const { block, n, m } of turn.blocks) {
      if (block.type !== 'compaction' || block.content === null || block.content === undefined) continue;
      const original = typeof block.encrypted_content === 'string' ? memory.compactions?.get(block.encrypted_content) : undefined;
      if (!original || original.content !== block.content || original.model !== b.model) {
        const why = !original ? 'was never issued' : original.model !== b.model ? `was made by ${original.model}, not ${String(b.model)}` : 'was modified';
        return refuse('AN-C', `the compaction block messages.${n}.content.${m} ${why}`, invalidCompaction(n, m));
      }
    }
  }
  const thinkingOn = b.thinking?.type === 'enabled' || b.thinking?.type === 'adaptive';
  const finalMessage = placed.at(-1)!;
  const finalThinking = finalMessage.role === 'assistant' ? finalMessage.blocks.find((p) => isThinking(p.block)) : undefined;
  if (!thinkingOn && finalThinking) {
    return refuse('AN-7', 'thinking is off and the final assistant message holds thinking', thinkingDisabledFinal(finalThinking.n, finalThinking.m));
  }
  for (const turn of turns) {
    if (turn.role !== 'assistant' || !turn.blocks.some((p) => isThinking(p.block))) continue;
    const first = turn.blocks[0];
    if (!isThinking(first.block)) {
      return refuse(
        'AN-7',
        `an assistant turn holds thinking but starts with ${String(first.block.type)}`,
        thinkingNotFirst(first.n, String(first.block.type)),
      );
    }
    const final = turn.blocks.at(-1)!;
    if (final.block.type === 'thinking') return refuse('AN-7', `the assistant turn of messages.${final.n} ends with a thinking block`, thinkingLast(final.n));
  }
  const latest = [...turns].reverse().find((turn) => turn.role === 'assistant');
  if (latest) {
    const firstOther = latest.blocks.findIndex((p) => !isThinking(p.block));
    const misplaced = firstOther < 0 ? undefined : latest.blocks.slice(firstOther).find((p) => isThinking(p.block));
    if (misplaced) {
      return refuse('AN-7', `a thinking block of the latest assistant turn comes after other content`, thinkingModified(misplaced.n, misplaced.m));
    }
  }

  // AN-6: with thinking on and a tool loop open (the last turn returns tool results), the
  // assistant turn of the loop (its first message after the last real user message) starts
  // with a thinking block.
  const last = turns.at(-1)!;
  if (thinkingOn && last.role === 'user' && last.blocks.some((p) => p.block.type === 'tool_result')) {
    let u = turns.length - 1;
    while (u >= 0 && !(turns[u].role === 'user' && !turns[u].blocks.some((p) => p.block.type === 'tool_result'))) u--;
    const loopStart = turns.slice(u + 1).find((turn) => turn.role === 'assistant');
    const first = loopStart?.blocks[0];
    if (loopStart && first && !isThinking(first.block)) {
      return refuse(
        'AN-6',
        `thinking is on and the open tool loop's assistant turn starts with ${String(first.block.type)}`,
        thinkingFirst(first.n, String(first.block.type)),
      );
    }
  }
  return null;
}

/** What the agent script answered: the content of one message. */
interface AnthropicAgentReply {
  kind: 'tool_use' | 'answer';
  content: ContentBlock[];
}

/**
 * A fault the next compacting request answers with: a 500 overloaded error, a failed compaction
 * (`content: null`), an answer with no compaction block, or no answer for `hangMs`.
 */
type AnthropicCompactFault = 'error' | 'null-content' | 'no-block' | 'hang';

/** What a test drives and reads of the fake's compaction (the compact_20260112 edit). */
interface AnthropicCompaction {
  faults: AnthropicCompactFault[];
  hangMs: number;
  /** Every request that carried the compact_20260112 edit, in arrival order. */
  requests: StrictRequestRecord<AnthropicErrorBody>[];
  /** Every compaction block made: its encrypted content → the model that made it. */
  made: Map<string, string>;
  /** The usage of every answer that compacted, as sent: what the provider billed. */
  billed: Array<{
    iterations: Array<{ type: string; input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number }>;
  }>;
}

export type StrictAnthropicProvider = StrictFakeProvider<AnthropicAgentReply, AnthropicErrorBody> & { compaction: AnthropicCompaction };

function systemText(system: unknown): string | undefined {
  if (typeof system === 'string') return system;
  const first = Array.isArray(system) ? (system[0] as { text?: unknown } | undefined) : undefined;
  return typeof first?.text === 'string' ? first.text : undefined;
}

const USAGE = {
  input_tokens: 100,
  output_tokens: 20,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: null,
  inference_geo: null,
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: 'standard' as const,
  speed: null,
};

/**
 * Claude Code's compaction asks the agent's own model for a summary, with the tools still
 * offered, in a last user message that says to answer with text only: answered as the
 * summariser is (a text block), as a model following that instruction would.
 */
const TEXT_ONLY_REQUEST = 'Respond with TEXT ONLY';

function asksForTextOnly(messages: unknown): boolean {
  const last = Array.isArray(messages) ? (messages.at(-1) as { role?: unknown; content?: unknown } | undefined) : undefined;
  if (last?.role !== 'user') return false;
  const texts = typeof last.content === 'string' ? [last.content] : Array.isArray(last.content) ? (last.content as Block[]).map((b) => b.text) : [];
  return texts.some((text) => typeof text === 'string' && text.includes(TEXT_ONLY_REQUEST));
}

/** A client tool a request offers (`tools`): server tools (with a `type` other than `custom`) and deferred ones are not called by the script. */
interface OfferedTool {
  name: string;
  input_schema?: { properties?: Record<string, { type?: unknown } | undefined>; required?: unknown };
}

function offeredTools(tools: unknown): OfferedTool[] {
  if (!Array.isArray(tools)) return [];
  return (tools as (Record<string, unknown> | null)[]).filter(
    // A tool with `defer_loading` is not in the model's context until a tool search finds it: never called.
    (t): t is Record<string, unknown> & OfferedTool =>
      !!t && typeof t.name === 'string' && (t.type === undefined || t.type === 'custom') && t.defer_loading !== true,
  );
}

/** An input that fits the tool's schema: each required property set (a string one to `src/module-<n>.ts`). */
function inputFor(tool: OfferedTool, n: number): Record<string, unknown> {
  const required = Array.isArray(tool.input_schema?.required) ? (tool.input_schema.required as unknown[]).filter((k) => typeof k === 'string') : [];
  const value = (type: unknown) => (type === 'number' || type === 'integer' ? n : type === 'boolean' ? false : `src/module-${n}.ts`);
  return Object.fromEntries(required.map((key) => [key, value(tool.input_schema?.properties?.[key]?.type)]));
}

export async function startStrictAnthropic(options: StrictFakeOptions = {}): Promise<StrictAnthropicProvider> {
  const agentModel = options.agentModel ?? 'agent-model';
  const largeArgumentsChance = options.largeArgumentsChance ?? 0.15;
  const requests: StrictRequestRecord<AnthropicErrorBody>[] = [];
  const rejections: StrictRequestRecord<AnthropicErrorBody>[] = [];
  const agentReplies: AnthropicAgentReply[] = [];
  const memory: AnthropicMemory = { ...newMemory(), compactions: new Map() };
  const scriptOf = agentScripts(options.seed ?? 1, agentModel);
  let messageCounter = 0;

  function agentContent(model: string, messages: { role: string; content: unknown }[], thinkingOn: boolean, tools: OfferedTool[]): AnthropicAgentReply {
    const script = scriptOf(model);
    const last = messages.at(-1);
    const lastHasResults = Array.isArray(last?.content) && (last.content as Block[]).some((block) => block.type === 'tool_result');
    const afterUserRequest = last?.role === 'user' && !lastHasResults;
    const step = nextStep(script, afterUserRequest, largeArgumentsChance);
    const content: ContentBlock[] = [];
    if (thinkingOn && (afterUserRequest || script.rand() < 0.5)) {
      const thinking = `Thinking ${step.replyNo}: ${step.kind === 'answer' ? 'the work is done; report it' : 'the next step needs tools'}.`;
      const signature = opaqueToken(script.rand, 'Eq', 96);
      memory.thinking.set(signature, thinking);
      content.push({ type: 'thinking', thinking, signature });
    }
    if (step.kind === 'answer') {
      content.push({ type: 'text', text: step.text, citations: null });
      return { kind: 'answer', content };
    }
    for (const c of step.calls) {
      const tool = tools.length > 0 ? tools[c.n % tools.length] : undefined;
      const [name, input] = tool ? [tool.name, inputFor(tool, c.n)] : [c.name, c.args];
      content.push({ type: 'tool_use', id: `toolu_${script.tag}_${c.n}`, name, input, caller: { type: 'direct' } });
    }
    return { kind: 'tool_use', content };
  }

  const compaction: AnthropicCompaction = { faults: [], hangMs: 60_000, requests: [], made: new Map(), billed: [] };

  /** The compact_20260112 edit of a request (with the beta header it needs), a refusal, or undefined when it has none. */
  function compactEdit(
    body: { context_management?: unknown } | undefined,
    beta: string,
  ): { trigger: number; pause: boolean } | { refusal: AnthropicRefusal } | undefined {
    const edits = (body?.context_management as { edits?: unknown } | undefined)?.edits;
    const edit = Array.isArray(edits) ? (edits as Record<string, unknown>[]).find((e) => e?.type === 'compact_20260112') : undefined;
    if (!edit) return undefined;
    if (
      !beta
        .split(',')
        .map((x) => x.trim())
        .includes('compact-2026-01-12')
    ) {
      return {
        refusal: refuse(
          'shape',
          'compact_20260112 without its beta',
          'context_management.edits.0: compact_20260112 requires the beta header compact-2026-01-12',
        ),
      };
    }
    const value = (edit.trigger as { value?: unknown } | null | undefined)?.value;
    const trigger = typeof value === 'number' ? value : 150_000;
    if (trigger < COMPACTION_TRIGGER_MINIMUM) {
      return {
        refusal: refuse(
          'shape',
          `trigger ${trigger} under the minimum`,
          `context_management.edits.0.trigger.value: Input should be greater than or equal to ${COMPACTION_TRIGGER_MINIMUM}`,
        ),
      };
    }
    return { trigger, pause: edit.pause_after_compaction === true };
  }

  const server = await serveLocal(async (req, res) => {
    if (req.method !== 'POST' || req.path !== '/v1/messages') {
      sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'Not found' } });
      return;
    }
    const edit = compactEdit(req.body as { context_management?: unknown } | undefined, String(req.headers['anthropic-beta'] ?? ''));
    if (edit) {
      const body = req.body as { model?: unknown; messages?: unknown };
      const model = String(body?.model);
      const refusal = 'refusal' in edit ? edit.refusal : validateAnthropicRequest(body, memory);
      const record = recordOf(
        { caller: 'other', model, path: req.path, stream: false, items: Array.isArray(body?.messages) ? body.messages.length : 0, body },
        refusal,
      );
      requests.push(record);
      compaction.requests.push({ ...record, body });
      if (refusal) {
        rejections.push(record);
        sendJson(res, refusal.status, refusal.body);
        return;
      }
      const fault = compaction.faults.shift();
      if (fault === 'error') {
        sendJson(res, 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
        return;
      }
      if (fault === 'hang') await new Promise((resolve) => setTimeout(resolve, compaction.hangMs));
      const chars = JSON.stringify(body.messages).length;
      const inputTokens = Math.ceil(chars / 4);
      const n = ++messageCounter;
      const trigger = (edit as { trigger: number }).trigger;
      const compacts = inputTokens >= trigger && fault !== 'no-block';
      const summary = `Compacted ${Array.isArray(body.messages) ? body.messages.length : 0} messages (${chars} characters): the user asked for coding work; it continues.`;
      const encrypted = `EncC${Buffer.from(JSON.stringify({ n, model, chars })).toString('base64')}`;
      const block =
        fault === 'null-content'
          ? { type: 'compaction', content: null, encrypted_content: null }
          : { type: 'compaction', content: summary, encrypted_content: encrypted };
      if (compacts && fault !== 'null-content') {
        memory.compactions?.set(encrypted, { content: summary, model });
        compaction.made.set(encrypted, model);
      }
      const iteration = {
        type: 'compaction',
        input_tokens: inputTokens,
        output_tokens: 300,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_creation: null,
      };
      const usage = { ...USAGE, iterations: compacts ? [iteration] : null };
      if (compacts && fault !== 'null-content') compaction.billed.push({ iterations: [iteration] });
      sendJson(res, 200, {
        id: `msg_${String(n).padStart(6, '0')}`,
        type: 'message',
        role: 'assistant',
        model,
        content: compacts ? [block] : [{ type: 'text', text: `Reply ${n}: noted.`, citations: null }],
        container: null,
        stop_details: null,
        stop_reason: compacts ? 'compaction' : 'end_turn',
        stop_sequence: null,
        context_management: null,
        // The compaction step's tokens are only in usage.iterations, not the top-level usage.
        usage,
      });
      return;
    }
    const body = req.body as
      { model?: unknown; messages?: unknown; system?: unknown; stream?: unknown; thinking?: { type?: unknown }; tools?: unknown } | undefined;
    const model = String(body?.model);
    const summariser =
      (options.summariserModel !== undefined && model === options.summariserModel) || !!systemText(body?.system)?.startsWith(SUMMARISER_PREFIX);
    const caller: Caller = summariser || asksForTextOnly(body?.messages) ? 'summariser' : model.startsWith(agentModel) ? 'agent' : 'other';
    const refusal = validateAnthropicRequest(body, memory);
    const record = recordOf(
      { caller, model, path: req.path, stream: body?.stream === true, items: Array.isArray(body?.messages) ? body.messages.length : 0, body },
      refusal,
    );
    requests.push(record);
    if (refusal) {
      rejections.push(record);
      sendJson(res, refusal.status, refusal.body);
      return;
    }
    const id = `msg_${String(++messageCounter).padStart(6, '0')}`;
    const messages = body!.messages as { role: string; content: unknown }[];
    let reply: AnthropicAgentReply;
    if (caller === 'agent') {
      const thinkingOn = body?.thinking?.type === 'enabled' || body?.thinking?.type === 'adaptive';
      reply = agentContent(model, messages, thinkingOn, offeredTools(body?.tools));
      agentReplies.push(reply);
    } else {
      const chars = JSON.stringify(messages).length;
      const text =
        caller === 'summariser'
          ? `Goal: continue the coding work.\nCompleted actions: summary ${messageCounter} of ${chars} characters.`
          : `Reply ${messageCounter}: noted.`;
      reply = { kind: 'answer', content: [{ type: 'text', text, citations: null }] };
    }
    const message: Message = {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: reply.content,
      container: null,
      diagnostics: null,
      stop_details: null,
      stop_reason: reply.kind === 'tool_use' ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: USAGE,
    };
    if (body?.stream !== true) {
      sendJson(res, 200, message);
      return;
    }
    sendEvents(
      res,
      streamEvents(message).map((data) => ({ event: data.type, data })),
    );
  });

  return { url: server.origin, requests, rejections, agentReplies, compaction, close: () => server.close() };
}

/** The events Anthropic streams for a message: start, each block started / filled / stopped, delta, stop. */
function streamEvents(message: Message): RawMessageStreamEvent[] {
  const events: Record<string, unknown>[] = [
    { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...USAGE, output_tokens: 1 } } },
  ];
  message.content.forEach((block, index) => {
    const halves = (s: string) => [s.slice(0, Math.ceil(s.length / 2)), s.slice(Math.ceil(s.length / 2))];
    if (block.type === 'thinking') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const thinking of halves(block.thinking)) events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } });
      for (const text of halves(block.text)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
    } else if (block.type === 'tool_use') {
      events.push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      for (const partial_json of halves(JSON.stringify(block.input)))
        events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: message.usage.output_tokens },
  });
  events.push({ type: 'message_stop' });
  return events as unknown as RawMessageStreamEvent[];
}
