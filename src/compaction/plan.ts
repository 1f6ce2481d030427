import { type ChatMessage, isInstructionMessage, isSummaryMessage, latestUserRequestIndex, SUMMARY_PREFIX, textOf } from './messages';
import { estimateTokens } from './tokens';
import { groupMessages, isBrokenGroup, type MessageGroup } from './tool-groups';

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

/**
 * How a transcript is cut, as positions in it: head and tail kept verbatim, the middle
 * summarised. Every kept group is whole and valid, so the head a plan yields is one a
 * provider accepts (src/compaction/gates.ts checks it again before every commit).
 */
export interface CompactionPlan {
  /** Kept verbatim before the summary. */
  head: number[];
  /** The previous compaction's summary text, which the new summary updates. */
  previousSummary?: string;
  /** Summarised, in order. */
  middle: number[];
  /**
   * The latest real user request, when it is not in the tail: kept verbatim right after the
   * summary (it is summarised too, so the summary reads in order).
   */
  latestUserRequest?: number;
  /** Kept verbatim after the summary; holds the group with open tool calls, if any. */
  tail: number[];
}

const indicesOf = (groups: readonly MessageGroup[]) => groups.flatMap((g) => g.indices);

/**
 * Chooses head, middle and tail. Tool-call groups are never split: the cut points fall
 * between groups. On a transcript that was compacted before, everything before the previous
 * summary is the head (it was the head then), and the previous summary is handed to the
 * summariser to update rather than summarised as if it were conversation. A group with
 * tool calls still open at the end always stays in the tail, with the results that exist.
 * Groups a provider would reject (orphan results, calls never answered) are summarised,
 * never kept. `tokens[i]` is message i's token count (estimated when absent).
 */
export function planCompaction(messages: readonly ChatMessage[], options: PlanOptions = DEFAULT_PLAN_OPTIONS, tokens?: readonly number[]): CompactionPlan {
  const groups = groupMessages(messages);
  const tokensOf = (i: number) => tokens?.[i] ?? estimateTokens(messages[i]);
  const summaryGroupIndex = groups.findIndex((g) => g.indices.length === 1 && isSummaryMessage(messages[g.indices[0]]));

  let headEnd: number; // groups [0, headEnd) are head
  let previousSummary: string | undefined;
  let bodyStart: number; // first group that may be summarised
  if (summaryGroupIndex >= 0) {
    headEnd = summaryGroupIndex;
    previousSummary = textOf(messages[groups[summaryGroupIndex].indices[0]]).slice(SUMMARY_PREFIX.length).trim();
    bodyStart = summaryGroupIndex + 1;
  } else {
    let instructions = 0;
    while (instructions < groups.length && isInstructionMessage(messages[groups[instructions].indices[0]])) instructions++;
    headEnd = Math.min(groups.length, instructions + Math.max(0, options.headGroups));
    bodyStart = headEnd;
  }

  // The tail grows backwards from the end, group by group, within the token budget, but
  // always holds at least minTailGroups groups, and at least one (the last group may hold
  // open tool calls). It never reaches into the head.
  const budget = options.force ? 0 : options.tailTokenBudget;
  const minGroups = Math.max(1, options.minTailGroups);
  let tailStart = groups.length;
  let tailTokens = 0;
  while (tailStart > bodyStart) {
    const group = groups[tailStart - 1];
    const groupTokens = group.indices.reduce((sum, i) => sum + tokensOf(i), 0);
    const kept = groups.length - tailStart;
    if (kept >= minGroups && tailTokens + groupTokens > budget) break;
    tailTokens += groupTokens;
    tailStart--;
  }

  const last = groups.length - 1;
  const keep = (from: number, to: number) => groups.slice(from, to).filter((g, k) => !isBrokenGroup(g, from + k === last));
  const broken = (from: number, to: number) => groups.slice(from, to).filter((g, k) => isBrokenGroup(g, from + k === last));
  const head = indicesOf(keep(0, headEnd));
  const tail = indicesOf(keep(tailStart, groups.length));
  const middle = [...indicesOf(broken(0, headEnd)), ...indicesOf(groups.slice(bodyStart, tailStart)), ...indicesOf(broken(tailStart, groups.length))].sort(
    (a, b) => a - b,
  );

  const plan: CompactionPlan = { head, previousSummary, middle, tail };
  if (middle.length === 0) return plan;
  // The latest real user request stays verbatim: in the tail, or right after the summary.
  const latest = latestUserRequestIndex(messages);
  if (latest >= 0 && !tail.includes(latest) && !head.includes(latest)) plan.latestUserRequest = latest;
  return plan;
}
