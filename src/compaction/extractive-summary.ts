import { type ChatMessage, textOf } from './messages';
import type { SummaryRequest } from './summary-prompt';

const LINE_CAP = 160;
/** The summary so far is kept up to this size, so folding many chunks stays bounded. */
const EARLIER_SUMMARY_CAP = 4000;

function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const match = /^(.{1,160}?[.!?])(\s|$)/.exec(flat);
  const sentence = match ? match[1] : flat;
  return sentence.length > LINE_CAP ? `${sentence.slice(0, LINE_CAP - 1)}…` : sentence;
}

function noteFor(m: ChatMessage): string | undefined {
  if (m.role === 'tool') return `tool ${m.name ?? m.tool_call_id ?? ''} returned: ${firstSentence(textOf(m))}`.trim();
  const calls = (m.tool_calls ?? []).map((c) => c.function.name);
  const text = firstSentence(textOf(m));
  if (!text && calls.length === 0) return undefined;
  return `${m.role}: ${text}${calls.length ? ` (called ${calls.join(', ')})` : ''}`;
}

/**
 * The built-in summariser used when no LLM is configured: deterministic and extractive. It
 * keeps the first sentence of each message (tool results as one-line notes), bounded in
 * size, and quotes the latest user request verbatim. Same input, same output.
 */
export function extractiveSummary(request: SummaryRequest, maxLines = 40): string {
  const notes = request.middle.map(noteFor).filter((n): n is string => n !== undefined);
  const kept =
    notes.length > maxLines ? [...notes.slice(0, maxLines / 2), `… ${notes.length - maxLines} messages omitted …`, ...notes.slice(-maxLines / 2)] : notes;
  const sections: string[] = [];
  if (request.previousSummary) {
    const earlier = request.previousSummary.length > EARLIER_SUMMARY_CAP ? `…${request.previousSummary.slice(-EARLIER_SUMMARY_CAP)}` : request.previousSummary;
    sections.push(`Earlier summary:\n${earlier}`);
  }
  if (request.focusTopic) sections.push(`Focus: ${request.focusTopic}`);
  sections.push(`Completed actions (extractive, ${request.middle.length} messages):\n${kept.map((n) => `- ${n}`).join('\n')}`);
  if (request.latestUserRequest) sections.push(`Pending user asks:\n> ${request.latestUserRequest.replace(/\n/g, '\n> ')}`);
  if (request.force) sections.push('(compaction forced by the caller)');
  return sections.join('\n\n');
}
