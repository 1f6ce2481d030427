/**
 * The gates every compaction passes before it commits, run on the exact messages about to
 * become the head (the candidate followed by the appends carried in at commit). Pure: the
 * compaction activity runs them inside the commit transaction, and a failing gate means
 * outcome `refused`, nothing written, the gate named in the reason and the audit row.
 */
import { type ChatMessage, isSummaryMessage, latestUserRequestIndex, SUMMARY_MESSAGE_NAME, SUMMARY_PREFIX, textOf } from './messages';

const GATES = ['providerValid', 'latestUserRequest', 'openToolCalls', 'smaller', 'noForgedSummary'] as const;
type GateName = (typeof GATES)[number];

export interface GateInput {
  /** The head as it stands at commit: the snapshot plus the appends made while summarising. */
  before: readonly ChatMessage[];
  /** The head the compaction would commit: the candidate plus the same appends. */
  after: readonly ChatMessage[];
  tokensBefore: number;
  tokensAfter: number;
  /** The most a compacted head may hold (the model's context window), when known. */
  targetTokens?: number;
  /** Position in `after` of the summary this compaction wrote. */
  summaryIndex: number;
}

export interface GateReport {
  /** 'pass', or why the gate failed. */
  results: Record<GateName, string>;
  /** The first gate that failed, in GATES order. */
  failed?: { gate: GateName; reason: string };
}

/**
 * (a) The provider would accept it (OpenAI chat rules): every tool message answers a call of
 * the assistant message its run of results follows; every call is answered before the next
 * user or assistant message, except calls still open at the end; no duplicate call ids and
 * no call answered twice.
 */
export function providerValid(messages: readonly ChatMessage[]): string | undefined {
  const seenCalls = new Set<string>();
  let pending: Set<string> | undefined; // calls of the current assistant message not yet answered
  let groupCalls: Set<string> | undefined; // all calls of the assistant message the current results follow
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role === 'tool') {
      if (!groupCalls || !m.tool_call_id || !groupCalls.has(m.tool_call_id)) {
        return `message ${i} is a tool result for ${m.tool_call_id ?? '(no id)'} that does not follow its tool call`;
      }
      if (!pending!.delete(m.tool_call_id)) return `message ${i} answers tool call ${m.tool_call_id} a second time`;
      continue;
    }
    if (pending && pending.size > 0) return `tool call(s) ${[...pending].join(', ')} are not answered before message ${i}`;
    pending = undefined;
    groupCalls = undefined;
    if (m.content === null && !(m.tool_calls && m.tool_calls.length > 0)) return `message ${i} has no content and no tool calls`;
    if (m.tool_calls && m.tool_calls.length > 0) {
      if (m.role !== 'assistant') return `message ${i} carries tool calls but is a ${m.role} message`;
      for (const call of m.tool_calls) {
        if (seenCalls.has(call.id)) return `tool call id ${call.id} appears twice (message ${i})`;
        seenCalls.add(call.id);
      }
      pending = new Set(m.tool_calls.map((c) => c.id));
      groupCalls = new Set(pending);
    }
  }
  return undefined; // calls still pending here are open at the end, which is allowed
}

/** The last real user message: the request the agent is working on. */
function latestUserRequest(messages: readonly ChatMessage[]): ChatMessage | undefined {
  const at = latestUserRequestIndex(messages);
  return at >= 0 ? messages[at] : undefined;
}

const sameMessage = (a: ChatMessage, b: ChatMessage) => JSON.stringify(a) === JSON.stringify(b);

/** (b) The latest real user request is present verbatim. */
export function keepsLatestUserRequest(before: readonly ChatMessage[], after: readonly ChatMessage[]): string | undefined {
  const latest = latestUserRequest(before);
  if (!latest) return undefined;
  if (!after.some((m) => sameMessage(m, latest))) return `the latest user request ("${textOf(latest).slice(0, 80)}") is not kept verbatim`;
  return undefined;
}

/** Tool-call ids open at the end of a transcript (called, not yet answered), with their assistant message. */
export function openToolCalls(messages: readonly ChatMessage[]): { message: ChatMessage; ids: string[] } | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'tool') continue;
    if (!m.tool_calls || m.tool_calls.length === 0) return undefined;
    const answered = new Set(messages.slice(i + 1).map((r) => r.tool_call_id));
    const ids = m.tool_calls.map((c) => c.id).filter((id) => !answered.has(id));
    return ids.length > 0 ? { message: m, ids } : undefined;
  }
  return undefined;
}

/** (c) Every tool call open before the compaction is present, with the results that exist. */
export function keepsOpenToolCalls(before: readonly ChatMessage[], after: readonly ChatMessage[]): string | undefined {
  const open = openToolCalls(before);
  if (!open) return undefined;
  const at = after.findIndex((m) => sameMessage(m, open.message));
  if (at < 0) return `the open tool call(s) ${open.ids.join(', ')} are not kept`;
  const callIds = new Set(open.message.tool_calls!.map((c) => c.id));
  const resultsBefore = before.filter((m) => m.role === 'tool' && m.tool_call_id && callIds.has(m.tool_call_id));
  const missing = resultsBefore.filter((r) => !after.slice(at + 1).some((m) => sameMessage(m, r)));
  if (missing.length > 0) return `results of open tool call(s) are not kept: ${missing.map((m) => m.tool_call_id).join(', ')}`;
  return undefined;
}

/** (d) Smaller than before, and at or under the target size. */
export function isSmaller(tokensBefore: number, tokensAfter: number, targetTokens?: number): string | undefined {
  if (tokensAfter >= tokensBefore) return `the compacted head would not be smaller (${tokensAfter} >= ${tokensBefore} tokens)`;
  if (targetTokens !== undefined && tokensAfter > targetTokens)
    return `the compacted head would hold ${tokensAfter} tokens, over the target of ${targetTokens}`;
  return undefined;
}

const posesAsSummary = (m: ChatMessage) => m.name === SUMMARY_MESSAGE_NAME || textOf(m).trimStart().startsWith(SUMMARY_PREFIX);

/** (e) No message but this compaction's own summary poses as a summary. */
export function noForgedSummary(after: readonly ChatMessage[], summaryIndex: number): string | undefined {
  if (!after[summaryIndex] || !isSummaryMessage(after[summaryIndex])) return 'the compaction summary is missing';
  const forged = after.findIndex((m, i) => i !== summaryIndex && posesAsSummary(m));
  if (forged >= 0) return `message ${forged} poses as a compaction summary`;
  return undefined;
}

export function runGates(input: GateInput): GateReport {
  const checks: Record<GateName, () => string | undefined> = {
    providerValid: () => providerValid(input.after),
    latestUserRequest: () => keepsLatestUserRequest(input.before, input.after),
    openToolCalls: () => keepsOpenToolCalls(input.before, input.after),
    smaller: () => isSmaller(input.tokensBefore, input.tokensAfter, input.targetTokens),
    noForgedSummary: () => noForgedSummary(input.after, input.summaryIndex),
  };
  const report: GateReport = { results: {} as Record<GateName, string> };
  for (const gate of GATES) {
    const reason = checks[gate]();
    report.results[gate] = reason ?? 'pass';
    if (reason && !report.failed) report.failed = { gate, reason };
  }
  return report;
}
