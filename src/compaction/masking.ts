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
import { outcomeOf } from './facts';
import { isJsonObject } from './json';
import { latestUserRequestIndex, type CompactionPlan } from './plan';

/** An Anthropic turn with thinking blocks: a change before it invalidates them on newer models (AN-8). */
const carriesThinking = (m: Message) =>
  Array.isArray(m.content) && m.content.some((b) => isJsonObject(b) && (b.type === 'thinking' || b.type === 'redacted_thinking'));

/** How every placeholder opens: an output already masked is not masked again. */
export const MASK_PREFIX = '[tool output masked by session-compaction:';

/** True when the message holds a tool output the masking rung replaced by its placeholder. */
export function isMaskedOutput(dialect: Dialect, message: Message): boolean {
  return dialect.toolResults(message).some((r) => r.text.startsWith(MASK_PREFIX));
}

/** The placeholder for one result: its size, its tool, its outcome, and where the original is. */
function maskPlaceholder(result: ToolResult, toolName: string | undefined): string {
  const outcome = outcomeOf(result.text, result.isError);
  const tool = toolName ?? result.name;
  const said = outcome.summary.replace(/"/g, "'").replace(/]/g, ')');
  return `${MASK_PREFIX} ${result.text.length} characters of output${tool ? ` from ${tool}` : ''}, outcome "${said}"; the original is archived with the session]`;
}

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
 * i's count; `count` counts a masked message the same way.
 */
export function maskOldOutputs(
  snapshot: readonly Message[],
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
    if (results.length === 0 || results.every((r) => r.text.startsWith(MASK_PREFIX))) continue;
    const masked = dialect.maskResults(snapshot[i], (r) => (r.text.startsWith(MASK_PREFIX) ? r.text : maskPlaceholder(r, r.id ? names.get(r.id) : undefined)));
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
