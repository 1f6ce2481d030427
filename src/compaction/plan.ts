import type { Dialect, Message, MessageGroup } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import { proseOf } from './ledger';
import { SUMMARY_PREFIX } from './messages';
import { estimateTokens } from './tokens';

export interface PlanOptions {
  /** Tokens of recent conversation kept verbatim. */
  tailTokenBudget: number;
  /** The tail keeps at least this many groups over its budget (the last whatever its size; the others only when each fits in tailTokenBudget). */
  minTailGroups: number;
  /** Groups after the instructions kept verbatim at the start, on the first compaction only. */
  headGroups: number;
  /** A forced compaction keeps only the minimal tail. */
  force: boolean;
  /** The lineage's message format (default openai-chat). */
  dialect?: Dialect;
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

/** A group the provider would reject wherever it stands: an orphan result, or calls left unanswered before the end. */
export function isBrokenGroup(group: MessageGroup, isLast: boolean): boolean {
  return group.orphan || (!isLast && group.unanswered.length > 0);
}

/** Position of the last real user request in a transcript (-1: none). */
export function latestUserRequestIndex(dialect: Dialect, messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (dialect.isRealUserRequest(messages[i])) return i;
  return -1;
}

/**
 * Chooses head, middle and tail. Tool-call groups are never split: the cut points fall
 * between groups. On a transcript that was compacted before, everything before the previous
 * summary is the head (it was the head then), and the previous summary is handed to the
 * summariser to update rather than summarised as if it were conversation. A group with
 * tool calls still open at the end always stays in the tail, with the results that exist.
 * Groups a provider would reject (orphan results, calls never answered) are summarised,
 * never kept. `tokens[i]` is message i's token count (estimated when absent).
 */
export function planCompaction(messages: readonly Message[], options: PlanOptions = DEFAULT_PLAN_OPTIONS, tokens?: readonly number[]): CompactionPlan {
  const dialect = options.dialect ?? openaiChat;
  const groups = dialect.groups(messages);
  const tokensOf = (i: number) => tokens?.[i] ?? estimateTokens(messages[i], dialect);
  // The previous summary is a run of summary groups (a summary and, in alternating dialects, its acknowledgement).
  const isSummaryGroup = (g: MessageGroup | undefined) => g !== undefined && g.indices.every((i) => dialect.isSummary(messages[i]));
  const summaryGroupIndex = groups.findIndex(isSummaryGroup);

  let headEnd: number; // groups [0, headEnd) are head
  let previousSummary: string | undefined;
  let bodyStart: number; // first group that may be summarised
  if (summaryGroupIndex >= 0) {
    headEnd = summaryGroupIndex;
    // The summariser updates the prose; the ledger is carried in structured form (src/compaction/ledger.ts).
    previousSummary = proseOf(dialect.textOf(messages[groups[summaryGroupIndex].indices[0]]).slice(SUMMARY_PREFIX.length).trim());
    bodyStart = summaryGroupIndex + 1;
    while (isSummaryGroup(groups[bodyStart])) bodyStart++;
  } else {
    let instructions = 0;
    while (instructions < groups.length && groups[instructions].indices.every((i) => dialect.isInstruction(messages[i]))) instructions++;
    headEnd = Math.min(groups.length, instructions + (dialect.keepsOpeningGroups ? Math.max(0, options.headGroups) : 0));
    bodyStart = headEnd;
  }

  // The tail grows backwards from the end, group by group, within the token budget, but
  // always holds at least minTailGroups groups, and at least one (the last group may hold
  // open tool calls). It never reaches into the head.
  const budget = options.force ? 0 : options.tailTokenBudget;
  const latestRequest = latestUserRequestIndex(dialect, messages);
  const minGroups = Math.max(1, options.minTailGroups);
  let tailStart = groups.length;
  let tailTokens = 0;
  while (tailStart > bodyStart) {
    const group = groups[tailStart - 1];
    const groupTokens = group.indices.reduce((sum, i) => sum + tokensOf(i), 0);
    const kept = groups.length - tailStart;
    if (kept >= minGroups && tailTokens + groupTokens > budget) break;
    // The minimum is for the agent's last few small steps: beyond the last group (which may hold
    // open calls), a group larger than the whole tail budget is summarised, not kept by it,
    // unless it holds the latest user request (kept verbatim either way).
    if (kept >= 1 && groupTokens > options.tailTokenBudget && !group.indices.includes(latestRequest)) break;
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
  if (latestRequest >= 0 && !tail.includes(latestRequest) && !head.includes(latestRequest)) plan.latestUserRequest = latestRequest;
  return plan;
}
