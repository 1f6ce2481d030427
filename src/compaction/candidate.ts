import { type ChatMessage, isRealUserMessage, SUMMARY_MESSAGE_NAME, SUMMARY_PREFIX } from './messages';
import type { CompactionPlan } from './plan';
import { estimateTranscriptTokens } from './tokens';
import { removeOrphanedToolMessages } from './tool-groups';

export function summaryMessage(summaryText: string): ChatMessage {
  return { role: 'assistant', name: SUMMARY_MESSAGE_NAME, content: `${SUMMARY_PREFIX}\n${summaryText.trim()}` };
}

/**
 * Guarantees that a compacted transcript still holds a real user message. When none
 * survives, the last real user message of the original is put back verbatim (never an
 * invented request) right after the summary, and only where it does not make two user
 * messages in a row.
 */
export function ensureUserTurn(candidate: readonly ChatMessage[], original: readonly ChatMessage[]): ChatMessage[] {
  if (candidate.some(isRealUserMessage)) return [...candidate];
  const lastUser = [...original].reverse().find(isRealUserMessage);
  if (!lastUser) return [...candidate];
  const summaryIndex = candidate.findIndex((m) => m.name === SUMMARY_MESSAGE_NAME);
  let at = summaryIndex >= 0 ? summaryIndex + 1 : candidate.length;
  // Never two user messages in a row: move forward past any user message at the cut.
  while (at < candidate.length && candidate[at].role === 'user') at++;
  if (at > 0 && candidate[at - 1].role === 'user') return [...candidate];
  return [...candidate.slice(0, at), lastUser, ...candidate.slice(at)];
}

/** The transcript a compaction proposes: head, summary, tail, made whole and valid. */
export function buildCandidate(plan: CompactionPlan, summaryText: string, original: readonly ChatMessage[]): ChatMessage[] {
  const assembled = [...plan.head, summaryMessage(summaryText), ...plan.tail];
  return ensureUserTurn(removeOrphanedToolMessages(assembled), original);
}

export type CandidateVerdict =
  | { accepted: true; tokensBefore: number; tokensAfter: number }
  | { accepted: false; tokensBefore: number; tokensAfter: number; reason: string };

function sameTranscript(a: readonly ChatMessage[], b: readonly ChatMessage[]): boolean {
  return a.length === b.length && JSON.stringify(a) === JSON.stringify(b);
}

/** A candidate that equals the input or is not smaller than it is refused: nothing rotates. */
export function judgeCandidate(original: readonly ChatMessage[], candidate: readonly ChatMessage[]): CandidateVerdict {
  const tokensBefore = estimateTranscriptTokens(original);
  const tokensAfter = estimateTranscriptTokens(candidate);
  if (sameTranscript(original, candidate)) {
    return { accepted: false, tokensBefore, tokensAfter, reason: 'the compacted transcript equals the current one' };
  }
  if (tokensAfter >= tokensBefore) {
    return {
      accepted: false,
      tokensBefore,
      tokensAfter,
      reason: `the compacted transcript would not be smaller (${tokensAfter} >= ${tokensBefore} estimated tokens)`,
    };
  }
  return { accepted: true, tokensBefore, tokensAfter };
}
