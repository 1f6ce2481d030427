import { type ChatMessage, isRealUserMessage, textOf } from './messages';

export interface SummaryRequest {
  middle: ChatMessage[];
  previousSummary?: string;
  focusTopic?: string;
  force: boolean;
}

export const SUMMARY_SECTIONS = [
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

const PER_MESSAGE_CHAR_CAP = 2000;
const TOTAL_CHAR_CAP = 60000;

function clip(text: string, cap: number): string {
  return text.length <= cap ? text : `${text.slice(0, cap)} [...${text.length - cap} more characters]`;
}

/** One line per message; tool results are reduced to a one-line note. */
export function renderForSummary(messages: readonly ChatMessage[]): string {
  const lines: string[] = [];
  let total = 0;
  for (const m of messages) {
    let line: string;
    if (m.role === 'tool') {
      const firstLine = textOf(m).split('\n', 1)[0] ?? '';
      line = `tool result (${m.name ?? m.tool_call_id ?? 'tool'}): ${clip(firstLine, 200)}`;
    } else {
      const calls = (m.tool_calls ?? []).map((c) => `${c.function.name}(${clip(c.function.arguments, 200)})`);
      const text = clip(textOf(m), PER_MESSAGE_CHAR_CAP);
      line = `${m.role}: ${text}${calls.length ? ` [calls: ${calls.join(', ')}]` : ''}`;
    }
    if (total + line.length > TOTAL_CHAR_CAP) {
      lines.push(`[... ${messages.length - lines.length} older messages omitted for length]`);
      break;
    }
    lines.push(line);
    total += line.length;
  }
  return lines.join('\n');
}

export function latestUserRequest(messages: readonly ChatMessage[]): string | undefined {
  const last = [...messages].reverse().find(isRealUserMessage);
  return last ? textOf(last) : undefined;
}

/** The chat messages sent to an LLM summariser. */
export function buildSummaryPrompt(request: SummaryRequest): ChatMessage[] {
  const instructions = [
    'You compact the transcript of a long-running AI agent session.',
    'Write a structured summary of the conversation below with these sections:',
    SUMMARY_SECTIONS.map((s) => `- ${s}`).join('\n'),
    'Quote the latest unfulfilled user request verbatim under "Pending user asks".',
    'Be factual and concise; the summary replaces the messages it covers.',
  ];
  if (request.previousSummary) {
    instructions.push('A previous summary exists: update it with the new messages instead of summarising it again.');
  }
  if (request.focusTopic) instructions.push(`Focus the summary on: ${request.focusTopic}`);
  if (request.force) instructions.push('This compaction was forced by the caller: summarise even if the conversation is short.');

  const parts: string[] = [];
  if (request.previousSummary) parts.push(`Previous summary:\n${request.previousSummary}`);
  parts.push(`Messages to summarise:\n${renderForSummary(request.middle)}`);
  const pending = latestUserRequest(request.middle);
  if (pending) parts.push(`Latest user request:\n${pending}`);

  return [
    { role: 'system', content: instructions.join('\n') },
    { role: 'user', content: parts.join('\n\n') },
  ];
}
