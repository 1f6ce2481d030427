import { type ChatMessage, latestUserRequestIndex, textOf } from './messages';
import { estimateTextTokens } from './tokens';

/** One request to the summariser: a chunk of the middle, folded into the summary so far. */
export interface SummaryRequest {
  /** The messages of this chunk (a message cut to fit is given cut). */
  middle: ChatMessage[];
  /** The summary to update: the previous compaction's, or the one folded from earlier chunks. */
  previousSummary?: string;
  focusTopic?: string;
  force: boolean;
  /** The latest real user request of the whole transcript, quoted verbatim. */
  latestUserRequest?: string;
  /** This chunk's place: 1-based index of count. */
  chunk: { index: number; count: number };
  /** True when a message of this chunk was too large for one request and was cut (visibly). */
  cut: boolean;
}

const SUMMARY_SECTIONS = [
  'Goal',
  'Constraints',
  'Completed actions',
  'Current state',
  'Decisions',
  'Open questions',
  'Pending user asks',
  'Relevant files',
  'Remaining work',
] as const;

/** Tool results are long and mostly consumed already: the summariser sees their start. */
const TOOL_RESULT_CHAR_CAP = 4000;
/** Prompt text besides the messages (instructions, headings) and room for the summary so far. */
const PROMPT_OVERHEAD_TOKENS = 600;
const SUMMARY_RESERVE_TOKENS = 4000;

function clip(text: string, cap: number): string {
  return text.length <= cap ? text : `${text.slice(0, cap)} [... ${text.length - cap} more characters of this tool result not shown]`;
}

/** One line per message as the summariser reads it. */
function renderMessage(m: ChatMessage): string {
  if (m.role === 'tool') return `tool result (${m.name ?? m.tool_call_id ?? 'tool'}): ${clip(textOf(m), TOOL_RESULT_CHAR_CAP)}`;
  const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${clip(c.function.arguments, 500)})`);
  return `${m.role}: ${textOf(m)}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
}

function renderForSummary(messages: readonly ChatMessage[]): string {
  return messages.map(renderMessage).join('\n');
}

export interface SummaryChunk {
  messages: ChatMessage[];
  cut: boolean;
}

/** A message whose rendering alone exceeds a chunk, cut to fit with a visible note. */
function cutToFit(m: ChatMessage, maxTokens: number): ChatMessage {
  const text = textOf(m);
  const keepChars = Math.max(200, maxTokens * 3 - 400);
  const note = `\n[... cut: ${Math.max(0, text.length - keepChars)} more characters of this message did not fit in one summariser request]`;
  return { ...m, tool_calls: undefined, content: `${text.slice(0, keepChars)}${note}` };
}

/**
 * Splits the middle into chunks that each fit the summariser's input budget (in tokens),
 * in order, never dropping a message: one too large for any chunk is cut, visibly.
 */
export function chunkMiddle(middle: readonly ChatMessage[], inputBudgetTokens: number, previousSummary?: string): SummaryChunk[] {
  const reserve = Math.max(SUMMARY_RESERVE_TOKENS, estimateTextTokens(previousSummary ?? ''));
  const perChunk = Math.max(500, inputBudgetTokens - PROMPT_OVERHEAD_TOKENS - reserve);
  const chunks: SummaryChunk[] = [];
  let current: SummaryChunk = { messages: [], cut: false };
  let used = 0;
  for (const original of middle) {
    let m = original;
    let tokens = estimateTextTokens(renderMessage(m)) + 1;
    if (tokens > perChunk) {
      m = cutToFit(m, perChunk);
      tokens = estimateTextTokens(renderMessage(m)) + 1;
    }
    if (used + tokens > perChunk && current.messages.length > 0) {
      chunks.push(current);
      current = { messages: [], cut: false };
      used = 0;
    }
    current.messages.push(m);
    current.cut ||= m !== original;
    used += tokens;
  }
  if (current.messages.length > 0) chunks.push(current);
  return chunks;
}

export function latestUserRequestText(messages: readonly ChatMessage[]): string | undefined {
  const at = latestUserRequestIndex(messages);
  return at >= 0 ? textOf(messages[at]) : undefined;
}

/** The chat messages sent to an LLM summariser for one chunk. */
export function buildSummaryPrompt(request: SummaryRequest): ChatMessage[] {
  const instructions = [
    'You compact the transcript of a long-running AI agent session.',
    'Write a structured summary of the conversation below with these sections:',
    SUMMARY_SECTIONS.map((s) => `- ${s}`).join('\n'),
    'Quote the latest unfulfilled user request verbatim under "Pending user asks".',
    'Be factual and concise; the summary replaces the messages it covers.',
  ];
  if (request.previousSummary) {
    instructions.push(
      'A summary of the earlier conversation exists: update it with the new messages instead of summarising it again, and keep what still matters from it.',
    );
  }
  if (request.chunk.count > 1) {
    instructions.push(`The conversation is too long for one request: this is part ${request.chunk.index} of ${request.chunk.count}, in order.`);
  }
  if (request.cut) instructions.push('Some messages were too long for one request and were cut where marked "[... cut: ...]".');
  if (request.focusTopic) instructions.push(`Focus the summary on: ${request.focusTopic}`);
  if (request.force) instructions.push('This compaction was forced by the caller: summarise even if the conversation is short.');

  const parts: string[] = [];
  if (request.previousSummary) parts.push(`Summary so far:\n${request.previousSummary}`);
  parts.push(`Messages to summarise:\n${renderForSummary(request.middle)}`);
  if (request.latestUserRequest) parts.push(`Latest user request:\n${request.latestUserRequest}`);

  return [
    { role: 'system', content: instructions.join('\n') },
    { role: 'user', content: parts.join('\n\n') },
  ];
}
