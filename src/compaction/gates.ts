/**
 * The gates every compaction passes before it commits, run on the exact messages about to
 * become the head (the candidate followed by the appends carried in at commit). Pure: the
 * compaction activity runs them inside the commit transaction, and a failing gate means
 * outcome `refused`, nothing written, the gate named in the reason and the audit row. Every
 * gate speaks the lineage's dialect.
 */
import type { Dialect, Message } from './dialects/types';
import { openaiChat } from './dialects/openai-chat';
import { jsonEqual } from './json';
import type { Facts } from './ledger';
import { latestUserRequestIndex } from './plan';
import { cutText } from './text';

const GATES = ['providerValid', 'latestUserRequest', 'openToolCalls', 'facts', 'smaller', 'noForgedSummary'] as const;
type GateName = (typeof GATES)[number];

export interface GateInput {
  /** The head as it stands at commit: the snapshot plus the appends made while summarising. */
  before: readonly Message[];
  /** The head the compaction would commit: the candidate plus the same appends. */
  after: readonly Message[];
  tokensBefore: number;
  tokensAfter: number;
  /** The most a compacted head may hold (the model's context window), when known. */
  targetTokens?: number;
  /** Positions in `after` of the summary's messages (the summary, and its acknowledgement where the dialect needs one). */
  summaryIndices: readonly number[];
  /**
   * False for a rung that writes no summary (masking): the head keeps the summary it had,
   * if any. Default true.
   */
  requireSummary?: boolean;
  /** What the `facts` gate demands: the facts of the summarised range and of the previous ledger, and which the new ledger folded. */
  facts?: FactsDemand;
  dialect?: Dialect;
}

export interface FactsDemand {
  expected: Facts;
  /** The facts the new ledger folded into counts: the fold policy accounts for exactly these going missing. */
  folded: Facts;
}

export interface GateReport {
  /** 'pass', or why the gate failed. */
  results: Record<GateName, string>;
  /** The first gate that failed, in GATES order. */
  failed?: { gate: GateName; reason: string };
}

/**
 * (a) The provider would accept it: the dialect's rules (provider-rules.md) checked on the
 * provider view the agent sends, and the summary never merged into the kept turn after it.
 */
export function providerValid(messages: readonly Message[], dialect: Dialect = openaiChat, summaryIndices: readonly number[] = []): string | undefined {
  const refused = dialect.providerCheck(dialect.forProvider(messages));
  if (refused) return refused;
  if (!dialect.keepsOpeningGroups && summaryIndices.length > 0) {
    const last = summaryIndices[summaryIndices.length - 1];
    const next = messages[last + 1];
    if (next && next.role === messages[last].role) return `the summary would merge into the ${String(next.role)} turn after it (message ${last + 1})`;
  }
  return undefined;
}

/** (b) The latest real user request is present verbatim. */
export function keepsLatestUserRequest(before: readonly Message[], after: readonly Message[], dialect: Dialect = openaiChat): string | undefined {
  const at = latestUserRequestIndex(dialect, before);
  if (at < 0) return undefined;
  const latest = before[at];
  if (!after.some((m) => jsonEqual(m, latest))) return `the latest user request ("${cutText(dialect.textOf(latest), 80)}") is not kept verbatim`;
  return undefined;
}

/** (c) Every tool call open before the compaction is present, with the results that exist. */
export function keepsOpenToolCalls(before: readonly Message[], after: readonly Message[], dialect: Dialect = openaiChat): string | undefined {
  const open = dialect.openCalls(before);
  if (!open) return undefined;
  const caller = before[open.index];
  const at = after.findIndex((m) => jsonEqual(m, caller));
  if (at < 0) return `the open tool call(s) ${open.ids.join(', ')} are not kept`;
  // The open group: the caller and everything after it that the cut may never separate (the results that exist).
  const group = dialect.groups(before).find((g) => g.indices.includes(open.index));
  const results = (group?.indices ?? []).filter((i) => i > open.index);
  const missing = results.filter((r) => !after.slice(at + 1).some((m) => jsonEqual(m, before[r])));
  if (missing.length > 0) return `results of open tool call(s) are not kept: messages ${missing.join(', ')}`;
  return undefined;
}

/** Every text of a head a fact may be found in: each message's texts and its joined text. */
const haystackOf = (messages: readonly Message[], dialect: Dialect) => messages.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');

/**
 * (d) Nothing the agent must still know is gone: every user request (verbatim up to the
 * ledger's bound), file path and identifier of the summarised range and of the previous
 * ledger, and every in-flight entry still open (an open error's source and lines, a plan
 * step, background work, a user turn not yet answered, a standing instruction), is findable
 * in the new head (ledger, summary or kept messages), or is one the new ledger folded into a
 * count.
 */
export function keepsFacts(after: readonly Message[], demand: FactsDemand, dialect: Dialect = openaiChat): string | undefined {
  const haystack = haystackOf(after, dialect);
  const kinds = [
    ['user request', demand.expected.requests, demand.folded.requests],
    ['file path', demand.expected.paths, demand.folded.paths],
    ['identifier', demand.expected.identifiers, demand.folded.identifiers],
    ['open in-flight entry', demand.expected.inFlight ?? [], demand.folded.inFlight ?? []],
  ] as const;
  for (const [what, expected, folded] of kinds) {
    const accounted = new Set(folded);
    const missing = [...new Set(expected)].filter((fact) => !accounted.has(fact) && !haystack.includes(fact));
    if (missing.length > 0) {
      const shown = missing.slice(0, 3).map((f) => JSON.stringify(f.length > 60 ? `${cutText(f, 57)}...` : f));
      return `${missing.length} ${what}(s) of the summarised range are not in the new head and the ledger did not fold them: ${shown.join(', ')}${missing.length > 3 ? ', ...' : ''}`;
    }
  }
  return undefined;
}

/** (e) Smaller than before, and at or under the target size. */
export function isSmaller(tokensBefore: number, tokensAfter: number, targetTokens?: number): string | undefined {
  if (tokensAfter >= tokensBefore) return `the compacted head would not be smaller (${tokensAfter} >= ${tokensBefore} tokens)`;
  if (targetTokens !== undefined && tokensAfter > targetTokens)
    return `the compacted head would hold ${tokensAfter} tokens, over the target of ${targetTokens}`;
  return undefined;
}

/** (f) No message but this compaction's own summary (or, for the masking rung, the summary the head kept) poses as a summary. */
export function noForgedSummary(
  after: readonly Message[],
  summaryIndices: readonly number[],
  dialect: Dialect = openaiChat,
  requireSummary = true,
): string | undefined {
  if ((requireSummary && summaryIndices.length === 0) || !summaryIndices.every((i) => after[i] && dialect.isSummary(after[i])))
    return 'the compaction summary is missing';
  const ours = new Set(summaryIndices);
  const forged = after.findIndex((m, i) => !ours.has(i) && dialect.posesAsSummary(m));
  if (forged >= 0) return `message ${forged} poses as a compaction summary`;
  return undefined;
}

export function runGates(input: GateInput): GateReport {
  const dialect = input.dialect ?? openaiChat;
  const checks: Record<GateName, () => string | undefined> = {
    // The hold again, on the head as it stands at commit: appends carried in may have opened a loop.
    providerValid: () => dialect.holdReason(input.before) ?? providerValid(input.after, dialect, input.summaryIndices),
    latestUserRequest: () => keepsLatestUserRequest(input.before, input.after, dialect),
    openToolCalls: () => keepsOpenToolCalls(input.before, input.after, dialect),
    facts: () => (input.facts ? keepsFacts(input.after, input.facts, dialect) : undefined),
    smaller: () => isSmaller(input.tokensBefore, input.tokensAfter, input.targetTokens),
    noForgedSummary: () => noForgedSummary(input.after, input.summaryIndices, dialect, input.requireSummary ?? true),
  };
  const report: GateReport = { results: {} as Record<GateName, string> };
  for (const gate of GATES) {
    const reason = checks[gate]();
    report.results[gate] = reason ?? 'pass';
    if (reason && !report.failed) report.failed = { gate, reason };
  }
  return report;
}
