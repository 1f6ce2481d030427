import type { Dialect, Message, RenderCaps } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import type { ChatMessage } from './messages';
import { type CompactionPlan, latestUserRequestIndex } from './plan';
import { cutText } from './text';
import { estimateTextTokens } from './tokens';

/** One request to the summariser: a chunk of the middle, folded into the summary so far. */
export interface SummaryRequest {
  /** The messages of this chunk as the summariser reads them, one rendering each (a rendering cut to fit is given cut). */
  lines: string[];
  /** The summary to update: the previous compaction's, or the one folded from earlier chunks. */
  previousSummary?: string;
  focusTopic?: string;
  force: boolean;
  /** The latest real user request of the whole transcript, quoted verbatim. */
  latestUserRequest?: string;
  /**
   * The ledger the previous compaction stored, rendered (ledger.ts renderLedger): fixed text the
   * summariser reads beside the new range and does not restate. The ledger's facts are carried
   * from that stored ledger, never re-derived from a summary's prose, so they do not drift.
   */
  ledger?: string;
  /** This chunk's place: 1-based index of count. */
  chunk: { index: number; count: number };
  /** True when a message of this chunk was too large for one request and was cut (visibly). */
  cut: boolean;
  /**
   * The prefix layout: the head exactly as the agent sends it, which the request repeats before
   * its instruction (so a prompt cache serves it), and the 1-based positions in it of the first
   * and last message the summary replaces. `lines` is then empty.
   */
  prefix?: SummaryPrefix;
}

export interface SummaryPrefix {
  messages: Message[];
  from: number;
  to: number;
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
export const SUMMARY_RENDER_CAPS: RenderCaps = { toolResultChars: 4000, toolArgumentChars: 500 };
/** Prompt text besides the messages (instructions, headings) and room for the summary so far. */
const PROMPT_OVERHEAD_TOKENS = 600;
const SUMMARY_RESERVE_TOKENS = 4000;

export interface SummaryChunk {
  lines: string[];
  cut: boolean;
}

/** A rendering whose size alone exceeds a chunk, cut to fit (on a grapheme boundary) with a visible note. */
function cutToFit(line: string, maxTokens: number): string {
  const kept = cutText(line, Math.max(200, maxTokens * 3 - 400));
  return `${kept}\n[... cut: ${line.length - kept.length} more characters of this message did not fit in one summariser request]`;
}

/**
 * Splits the middle into chunks that each fit the summariser's input budget (in tokens),
 * in order, never dropping a message: one too large for any chunk is cut, visibly.
 */
export function chunkMiddle(middle: readonly Message[], inputBudgetTokens: number, previousSummary?: string, dialect: Dialect = openaiChat): SummaryChunk[] {
  const reserve = Math.max(SUMMARY_RESERVE_TOKENS, estimateTextTokens(previousSummary ?? ''));
  const perChunk = Math.max(500, inputBudgetTokens - PROMPT_OVERHEAD_TOKENS - reserve);
  const chunks: SummaryChunk[] = [];
  let current: SummaryChunk = { lines: [], cut: false };
  let used = 0;
  for (const message of middle) {
    let line = dialect.render(message, SUMMARY_RENDER_CAPS);
    let cut = false;
    let tokens = estimateTextTokens(line) + 1;
    if (tokens > perChunk) {
      line = cutToFit(line, perChunk);
      cut = true;
      tokens = estimateTextTokens(line) + 1;
    }
    if (used + tokens > perChunk && current.lines.length > 0) {
      chunks.push(current);
      current = { lines: [], cut: false };
      used = 0;
    }
    current.lines.push(line);
    current.cut ||= cut;
    used += tokens;
  }
  if (current.lines.length > 0) chunks.push(current);
  return chunks;
}

/** The message the prefix layout appends after the head: one user turn, in the shape chat, Responses and Anthropic all take. */
export function instructionMessage(text: string): Message {
  return { role: 'user', content: text };
}

/**
 * The prefix layout of a summary request for this snapshot and plan, or undefined when the
 * rendered layout must be used instead: the head (as the provider takes it, `forProvider`)
 * with the instruction after it must be a request the provider accepts (it is not while a
 * tool call waits for its result), and must fit in one request of the summariser's budget.
 */
export function prefixLayout(
  snapshot: readonly Message[],
  plan: Pick<CompactionPlan, 'middle'>,
  dialect: Dialect,
  headTokens: number,
  inputBudgetTokens: number,
): SummaryPrefix | undefined {
  if (plan.middle.length === 0) return undefined;
  if (headTokens + PROMPT_OVERHEAD_TOKENS + SUMMARY_RESERVE_TOKENS > inputBudgetTokens) return undefined;
  const messages = dialect.forProvider(snapshot);
  if (dialect.providerCheck([...messages, instructionMessage('Summarise.')])) return undefined;
  const firstReplaced = Math.min(plan.middle[0], ...snapshot.map((m, i) => (dialect.isSummary(m) ? i : Infinity)));
  return { messages, from: firstReplaced + 1, to: plan.middle[plan.middle.length - 1] + 1 };
}

/** The latest real user request as the summariser reads it (text, and placeholders for images or files). */
export function latestUserRequestText(messages: readonly Message[], dialect: Dialect = openaiChat): string | undefined {
  const at = latestUserRequestIndex(dialect, messages);
  return at >= 0 ? dialect.render(messages[at], SUMMARY_RENDER_CAPS) : undefined;
}

/** The chat messages sent to an LLM summariser for one chunk. */
export function buildSummaryPrompt(request: SummaryRequest): ChatMessage[] {
  const instructions = [
    'You compact the transcript of a long-running AI agent session.',
    `Write a structured summary of the conversation ${request.prefix ? 'above' : 'below'} with these sections:`,
    SUMMARY_SECTIONS.map((s) => `- ${s}`).join('\n'),
    'Quote the latest unfulfilled user request verbatim under "Pending user asks".',
    'Be factual and concise; the summary replaces the messages it covers.',
    "A ledger follows your summary with the user's requests verbatim, the files touched, the commands run and the identifiers named: describe the state of the work rather than copying them out.",
  ];
  if (request.ledger) {
    instructions.push(
      'The ledger the service already keeps is given as fixed text: it is carried to the next summary as it is, so do not restate, reword or correct it; summarise the new messages around it.',
    );
  }
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
  // The prefix layout's head holds the ledger already, inside the previous summary.
  if (request.ledger && !request.prefix) parts.push(`Ledger so far (fixed text, kept by the service):\n${request.ledger}`);
  if (request.prefix) {
    const { from, to, messages } = request.prefix;
    const after = messages.length - to;
    parts.push(
      `Summarise messages ${from} to ${to} of the ${messages.length} above${request.previousSummary ? ', folding in the earlier summary among them' : ''}.` +
        (after > 0 ? ` The ${after} message(s) after them stay as they are: do not summarise them.` : ''),
    );
  } else {
    if (request.previousSummary) parts.push(`Summary so far:\n${request.previousSummary}`);
    parts.push(`Messages to summarise:\n${request.lines.join('\n')}`);
  }
  if (request.latestUserRequest) parts.push(`Latest user request:\n${request.latestUserRequest}`);

  return [
    { role: 'system', content: instructions.join('\n') },
    { role: 'user', content: parts.join('\n\n') },
  ];
}
