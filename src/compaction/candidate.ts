import type { Dialect, Message } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import type { CompactionPlan } from './plan';

/** One message of a compacted head: a message of the snapshot kept verbatim (`from` is its position), or one of the summary's messages. */
export interface CandidateEntry {
  message: Message;
  from?: number;
}

/**
 * The head a compaction proposes: kept head, the summary (in its dialect's shape, never
 * merging into the kept turn that follows), the latest user request when the tail lacks it,
 * kept tail. Carried appends follow it at commit.
 */
export function buildCandidate(plan: CompactionPlan, summaryText: string, snapshot: readonly Message[], dialect: Dialect = openaiChat): CandidateEntry[] {
  const kept = (i: number): CandidateEntry => ({ message: snapshot[i], from: i });
  const after = [...(plan.latestUserRequest !== undefined ? [plan.latestUserRequest] : []), ...plan.tail];
  const next = after.length > 0 ? snapshot[after[0]] : undefined;
  return [...plan.head.map(kept), ...dialect.summaryMessages(summaryText, next).map((message) => ({ message })), ...after.map(kept)];
}
