import { type ChatMessage, isInstructionMessage, isSummaryMessage, textOf, SUMMARY_PREFIX } from './messages';
import { estimateTokens } from './tokens';
import { groupMessages, type MessageGroup } from './tool-groups';

export interface PlanOptions {
  /** Tokens of recent conversation kept verbatim. */
  tailTokenBudget: number;
  /** The tail keeps at least this many groups, whatever their size. */
  minTailGroups: number;
  /** Groups after the instructions kept verbatim at the start, on the first compaction only. */
  headGroups: number;
  /** A forced compaction keeps only the minimal tail. */
  force: boolean;
}

export const DEFAULT_PLAN_OPTIONS: PlanOptions = {
  tailTokenBudget: 2000,
  minTailGroups: 2,
  headGroups: 2,
  force: false,
};

/** How a transcript is cut: head and tail kept verbatim, the middle summarised. */
export interface CompactionPlan {
  head: ChatMessage[];
  /** The summary text of the previous compaction, which the new summary updates. */
  previousSummary?: string;
  middle: ChatMessage[];
  tail: ChatMessage[];
}

function flatten(groups: readonly MessageGroup[]): ChatMessage[] {
  return groups.flatMap((g) => g.messages);
}

/**
 * Chooses head, middle and tail. Tool-call groups are never split: the cut points fall
 * between groups. On a transcript that was compacted before, everything before the previous
 * summary is the head (it was the head then), and the previous summary is handed to the
 * summariser to update rather than summarised as if it were conversation.
 */
export function planCompaction(messages: readonly ChatMessage[], options: PlanOptions = DEFAULT_PLAN_OPTIONS): CompactionPlan {
  const groups = groupMessages(messages);
  const summaryGroupIndex = groups.findIndex((g) => g.messages.length === 1 && isSummaryMessage(g.messages[0]));

  let headEnd: number; // groups [0, headEnd) are head
  let previousSummary: string | undefined;
  let bodyStart: number; // first group that may be summarised
  if (summaryGroupIndex >= 0) {
    headEnd = summaryGroupIndex;
    previousSummary = textOf(groups[summaryGroupIndex].messages[0]).slice(SUMMARY_PREFIX.length).trim();
    bodyStart = summaryGroupIndex + 1;
  } else {
    let instructions = 0;
    while (instructions < groups.length && isInstructionMessage(groups[instructions].messages[0])) instructions++;
    headEnd = Math.min(groups.length, instructions + Math.max(0, options.headGroups));
    bodyStart = headEnd;
  }

  // The tail grows backwards from the end, group by group, within the token budget, but
  // always holds at least minTailGroups groups (and never reaches into the head).
  const budget = options.force ? 0 : options.tailTokenBudget;
  let tailStart = groups.length;
  let tailTokens = 0;
  while (tailStart > bodyStart) {
    const group = groups[tailStart - 1];
    const groupTokens = group.messages.reduce((sum, m) => sum + estimateTokens(m), 0);
    const kept = groups.length - tailStart;
    if (kept >= options.minTailGroups && tailTokens + groupTokens > budget) break;
    tailTokens += groupTokens;
    tailStart--;
  }

  return {
    head: flatten(groups.slice(0, headEnd)),
    previousSummary,
    middle: flatten(groups.slice(bodyStart, tailStart)),
    tail: flatten(groups.slice(tailStart)),
  };
}
