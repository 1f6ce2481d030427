import type { SummaryRequest } from './summary-prompt';
import { cutText } from './text';

const LINE_CAP = 160;

/** The last `max` UTF-16 units of text, never starting inside a surrogate pair. */
function lastChars(text: string, max: number): string {
  let start = text.length - max;
  const c = text.charCodeAt(start);
  if (c >= 0xdc00 && c <= 0xdfff) start++;
  return text.slice(start);
}
/** The summary so far is kept up to this size, so folding many chunks stays bounded. */
const EARLIER_SUMMARY_CAP = 4000;

function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const match = /^(.{1,160}?[.!?])(\s|$)/u.exec(flat);
  const sentence = match ? match[1] : flat;
  return sentence.length > LINE_CAP ? `${cutText(sentence, LINE_CAP - 1)}…` : sentence;
}

/**
 * The built-in summariser used when no LLM is configured: deterministic and extractive. It
 * keeps the first sentence of each message but the user's (tool results as one-line notes),
 * bounded in size, and quotes the latest user request verbatim; the ledger after it quotes
 * every request. Same input, same output.
 */
export function extractiveSummary(request: SummaryRequest, maxLines = 40): string {
  // The user's requests are quoted verbatim in the ledger that follows the summary (src/compaction/ledger.ts).
  const notes = request.lines
    .filter((line) => !line.startsWith('user: '))
    .map(firstSentence)
    .filter((n) => n.length > 0);
  const kept =
    notes.length > maxLines ? [...notes.slice(0, maxLines / 2), `… ${notes.length - maxLines} messages omitted …`, ...notes.slice(-maxLines / 2)] : notes;
  const sections: string[] = [];
  if (request.previousSummary) {
    const earlier =
      request.previousSummary.length > EARLIER_SUMMARY_CAP ? `…${lastChars(request.previousSummary, EARLIER_SUMMARY_CAP)}` : request.previousSummary;
    sections.push(`Earlier summary:\n${earlier}`);
  }
  if (request.focusTopic) sections.push(`Focus: ${request.focusTopic}`);
  sections.push(`Completed actions (extractive, ${request.lines.length} messages):\n${kept.map((n) => `- ${n}`).join('\n')}`);
  if (request.latestUserRequest) sections.push(`Pending user asks:\n> ${request.latestUserRequest.replace(/\n/g, '\n> ')}`);
  if (request.force) sections.push('(compaction forced by the caller)');
  return sections.join('\n\n');
}
