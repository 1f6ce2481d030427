import { type ChatMessage, SUMMARY_MESSAGE_NAME, SUMMARY_PREFIX } from './messages';
import type { CompactionPlan } from './plan';

export function summaryMessage(summaryText: string): ChatMessage {
  return { role: 'assistant', name: SUMMARY_MESSAGE_NAME, content: `${SUMMARY_PREFIX}\n${summaryText.trim()}` };
}

/** One message of a compacted head: a message of the snapshot kept verbatim (`from` is its position), or the new summary. */
export interface CandidateEntry {
  message: ChatMessage;
  from?: number;
}

/**
 * The head a compaction proposes: kept head, summary, the latest user request when the tail
 * lacks it, kept tail. Carried appends follow it at commit.
 */
export function buildCandidate(plan: CompactionPlan, summaryText: string, snapshot: readonly ChatMessage[]): CandidateEntry[] {
  const kept = (i: number): CandidateEntry => ({ message: snapshot[i], from: i });
  return [
    ...plan.head.map(kept),
    { message: summaryMessage(summaryText) },
    ...(plan.latestUserRequest !== undefined ? [kept(plan.latestUserRequest)] : []),
    ...plan.tail.map(kept),
  ];
}
