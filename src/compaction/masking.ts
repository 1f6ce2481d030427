/**
 * The masking rung: before paying for a summary, replace old tool outputs with a short
 * placeholder that names what was removed and how the call ended. The call and its result
 * stay paired (same ids, same names), so the head stays valid; the original is archived with
 * the lineage like every summarised message. Outputs are masked oldest first, and only in the
 * summarised range (never the kept head or tail, never an open call's, never after the latest
 * user request, never before an Anthropic turn with thinking), until the head is at or under
 * the target; if masking every one of them is
 * not enough, the rung does not apply and the compaction summarises. Pure.
 */
import type { CandidateEntry } from './candidate';
import type { Dialect, Message, ToolResult } from './dialects/types';
import { maskedOutcomeOf, outcomeOf, placeholderText } from './facts';
import { isJsonObject } from './json';
import { latestUserRequestIndex, type CompactionPlan } from './plan';

/** An Anthropic turn with thinking blocks: a change before it invalidates them on newer models (AN-8). */
const carriesThinking = (m: Message) =>
  Array.isArray(m.content) && m.content.some((b) => isJsonObject(b) && (b.type === 'thinking' || b.type === 'redacted_thinking'));

/**
 * Whether a tool output of a message is a placeholder the masking rung wrote. `byCompaction`
 * says whether the message's row was written by a compaction (it has no lineage sequence
 * number: src/db/functions/session_append.sql gives one to every row a caller appends, so no
 * caller can write such a row); a message a caller appended is never a placeholder, whatever
 * its text, so a tool output cannot pose as one.
 */
export function isMaskedOutput(dialect: Dialect, message: Message, byCompaction: boolean): boolean {
  const results = dialect.toolResults(message);
  return byCompaction && results.length > 0 && results.every((r) => maskedOutcomeOf(r.text) !== undefined);
}

/** The placeholder for one result: its size, its tool, its outcome, and where the original is. */
const maskPlaceholder = (result: ToolResult, toolName: string | undefined) =>
  placeholderText(result.text.length, toolName ?? result.name, outcomeOf(result.text, result.isError));

export interface MaskingResult {
  /** The head the rung proposes: every message kept verbatim but the masked ones. */
  entries: CandidateEntry[];
  /** Positions in the snapshot of the messages whose outputs were masked. */
  masked: number[];
  tokensAfter: number;
}

/**
 * Masks the oldest eligible tool outputs until the head holds at most `targetTokens`, or
 * returns undefined when masking all of them would not get it there. `tokens[i]` is message
 * i's count; `count` counts a masked message the same way. `seqs[i]` is message i's lineage
 * sequence number, null on rows a compaction wrote: only those can hold placeholders already,
 * and a caller's tool output that merely looks like one is masked like any other.
 */
export function maskOldOutputs(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  tokens: readonly number[],
  count: (message: Message) => number,
  targetTokens: number,
): MaskingResult | undefined {
  let total = tokens.reduce((a, b) => a + b, 0);
  if (total <= targetTokens) return undefined; // nothing to do: the caller asked for more than masking
  const latest = latestUserRequestIndex(dialect, snapshot);
  const open = dialect.openCalls(snapshot);
  const openResults = new Set(open ? dialect.resultsOf(snapshot, open.index, open.ids) : []);
  // Never before a turn with thinking: newer Anthropic models check the prefix of preserved thinking (AN-8).
  let lastThinking = -1;
  snapshot.forEach((m, i) => {
    if (carriesThinking(m)) lastThinking = i;
  });
  const names = new Map<string, string>();
  const replaced = new Map<number, Message>();
  for (const i of plan.middle) {
    for (const c of dialect.toolCalls(snapshot[i])) if (c.id) names.set(c.id, c.name);
    if (total <= targetTokens) break;
    if ((latest >= 0 && i > latest) || openResults.has(i) || i < lastThinking) continue;
    const results = dialect.toolResults(snapshot[i]);
    if (results.length === 0 || isMaskedOutput(dialect, snapshot[i], seqs[i] === null)) continue;
    const masked = dialect.maskResults(snapshot[i], (r) => maskPlaceholder(r, r.id ? names.get(r.id) : undefined));
    if (!masked) continue;
    const saved = tokens[i] - count(masked);
    if (saved <= 0) continue;
    replaced.set(i, masked);
    total -= saved;
  }
  if (total > targetTokens || replaced.size === 0) return undefined;
  return {
    entries: snapshot.map((message, i) => (replaced.has(i) ? { message: replaced.get(i)! } : { message, from: i })),
    masked: [...replaced.keys()],
    tokensAfter: total,
  };
}

/** The masking rung's target for a lineage: a share of its threshold, or of its context window; none when it has neither. */
export function maskingTarget(lineage: { compactAtTokens: number | null; contextWindow: number | null }, targetPercent: number): number | undefined {
  const base = lineage.compactAtTokens ?? lineage.contextWindow;
  return base === null ? undefined : Math.floor((base * targetPercent) / 100);
}
