/**
 * What a compaction proposes to commit, by rung: the head, the ledger it carries, what the
 * `facts` gate demands of it, and which messages it replaces. The compaction activity builds
 * one of these and gates it on the exact head at commit; the fidelity benchmark builds the
 * same ones without the stack. Pure.
 */
import { buildCandidate, type CandidateEntry } from './candidate';
import { jsonEqual } from './json';
import type { Dialect, Message } from './dialects/types';
import type { FactsDemand } from './gates';
import { buildLedger, demandedFacts, factsOf, type Ledger, ledgerFacts, type LedgerOptions, mergeFacts, summaryWithLedger } from './ledger';
import { maskOldOutputs } from './masking';
import type { CompactionPlan } from './plan';

export interface Proposal {
  rung: 'summary' | 'masking' | 'native' | 'trim';
  candidate: CandidateEntry[];
  ledger: Ledger;
  demand: FactsDemand;
  /** Positions in the snapshot of the messages the head no longer holds as appended (summarised, or masked). */
  replaced: number[];
  /** Positions in the candidate of the summary's messages: this compaction's (the summary's or the trim's), or (masking) the summary the head keeps. */
  summaryIndices: number[];
}

/**
 * The masking rung's proposal, or undefined when masking old tool outputs cannot bring the head to
 * `targetTokens`. `seqs[i]` is snapshot message i's lineage sequence number (null on rows a
 * compaction wrote: only those can hold placeholders already).
 */
export function maskingProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  tokens: readonly number[],
  count: (message: Message) => number,
  targetTokens: number,
  previous: Ledger,
  requestChars: number,
): Proposal | undefined {
  const masked = maskOldOutputs(snapshot, seqs, plan, dialect, tokens, count, targetTokens);
  if (!masked) return undefined;
  return {
    rung: 'masking',
    candidate: masked.entries,
    // The head keeps its summary and the ledger in it as they are.
    ledger: previous,
    demand: {
      expected: mergeFacts(
        factsOf(
          masked.masked.map((i) => snapshot[i]),
          dialect,
          requestChars,
        ),
        ledgerFacts(previous),
      ),
      folded: { requests: [], paths: [], identifiers: [] },
    },
    replaced: masked.masked,
    summaryIndices: masked.entries.flatMap((e, i) => (dialect.isSummary(e.message) ? [i] : [])),
  };
}

/**
 * The summary rung's proposal: the summariser's prose followed by the ledger, which merges the
 * previous one with the summarised middle. `seqs[i]` is snapshot message i's lineage sequence
 * number (null on rows a compaction wrote).
 */
export function summaryProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  prose: string,
  previous: Ledger,
  options: LedgerOptions,
): Proposal {
  const range = plan.middle.map((i) => ({ message: snapshot[i], seq: seqs[i] }));
  const kept = plan.latestUserRequest !== undefined ? plan.middle.indexOf(plan.latestUserRequest) : -1;
  const { ledger, folded } = buildLedger(previous, range, dialect, options, kept >= 0 ? kept : undefined);
  const candidate = buildCandidate(plan, summaryWithLedger(prose, ledger), snapshot, dialect);
  return {
    rung: 'summary',
    candidate,
    ledger,
    demand: {
      expected: demandedFacts(previous, range, dialect, options),
      folded,
    },
    replaced: plan.middle,
    summaryIndices: candidate.flatMap((e, i) => (e.from === undefined ? [i] : [])),
  };
}

/** Who made an opaque compaction item of a head: only that provider, with that model, reads it. */
export interface OpaqueBinding {
  provider: 'openai' | 'anthropic';
  model: string;
  /** The item's id, when it has one (OpenAI's `cmp_…`). */
  itemId?: string;
}

/** The line of the native rung's summary message that binds the opaque item after it to its provider and model (read back by bindingOf). */
export const bindingLine = (b: OpaqueBinding): string =>
  `Provider compaction: the ${b.provider} compaction ${b.itemId ? `item ${b.itemId}` : 'block'} after this summary was made by model ${b.model}; only that model reads it.`;

const BINDING =
  /^Provider compaction: the (openai|anthropic) compaction (?:item (\S+)|block) after this summary was made by model (.+); only that model reads it\.$/m;

/** The binding a summary text records, or undefined. */
export function bindingOf(text: string): OpaqueBinding | undefined {
  const match = BINDING.exec(text);
  if (!match) return undefined;
  return { provider: match[1] as OpaqueBinding['provider'], model: match[3], ...(match[2] ? { itemId: match[2] } : {}) };
}

/** Whether a message is, or holds, a provider's opaque compaction item (a Responses `compaction` item, an Anthropic `compaction` block). */
export function holdsOpaqueItem(message: Message): boolean {
  if (message.type === 'compaction') return true;
  return Array.isArray(message.content) && message.content.some((b) => typeof b === 'object' && b !== null && !Array.isArray(b) && b.type === 'compaction');
}

/** What a provider's own compaction returned (src/activities/native-compaction). */
export interface NativeResult {
  /** OpenAI: the user messages it returned verbatim before its item. */
  before: readonly Message[];
  /** The opaque item (OpenAI) or block (Anthropic), byte-exact. */
  item: Message;
  /** The provider's readable summary, when it gives one. */
  readable?: string;
  binding: OpaqueBinding;
}

/**
 * The native rung's proposal: the kept head, our summary message (the binding line, the
 * provider's readable summary when it gives one, the previous summary, and the ledger of the
 * replaced middle, which the facts gate reads), then the provider's own output kept byte-exact
 * (OpenAI: the user messages it returned, then its `compaction` item; Anthropic: its
 * `compaction` block in an assistant message, as the API returns it), then the latest request
 * and the tail. The user messages that would duplicate the kept latest request or pose as a
 * summary are left out.
 */
export function nativeProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  result: NativeResult,
  previous: Ledger,
  options: LedgerOptions,
): Proposal {
  const range = plan.middle.map((i) => ({ message: snapshot[i], seq: seqs[i] }));
  const keptAt = plan.latestUserRequest !== undefined ? plan.middle.indexOf(plan.latestUserRequest) : -1;
  const { ledger, folded } = buildLedger(previous, range, dialect, options, keptAt >= 0 ? keptAt : undefined);
  const prose = [
    bindingLine(result.binding),
    ...(result.readable ? [`The provider's summary:\n${result.readable.trim()}`] : []),
    ...(plan.previousSummary ? [`Summary before that:\n${plan.previousSummary}`] : []),
  ].join('\n\n');
  const latest = plan.latestUserRequest !== undefined ? snapshot[plan.latestUserRequest] : undefined;
  const kept = (i: number): CandidateEntry => ({ message: snapshot[i], from: i });
  // A user message the provider returned is the middle's own row when its text is one's: kept as
  // that row (its lineage sequence number names it in later ledgers), else as the provider wrote it.
  const users = plan.middle.filter((i) => dialect.isRealUserRequest(snapshot[i]) && i !== plan.latestUserRequest);
  const asRow = (m: Message): CandidateEntry => {
    const i = users.find((u) => jsonEqual(snapshot[u], m)) ?? users.find((u) => dialect.textOf(snapshot[u]) === dialect.textOf(m));
    return i === undefined ? { message: m } : kept(i);
  };
  const opaque: CandidateEntry[] =
    result.binding.provider === 'anthropic'
      ? [{ message: { role: 'assistant', content: [result.item] } }]
      : [...result.before.filter((m) => !dialect.posesAsSummary(m) && !(latest && jsonEqual(m, latest))).map(asRow), { message: result.item }];
  const after = [...(plan.latestUserRequest !== undefined ? [plan.latestUserRequest] : []), ...plan.tail];
  const candidate: CandidateEntry[] = [
    ...plan.head.map(kept),
    ...dialect.summaryMessages(summaryWithLedger(prose, ledger), opaque[0].message).map((message) => ({ message })),
    ...opaque,
    ...after.map(kept),
  ];
  return {
    rung: 'native',
    candidate,
    ledger,
    demand: {
      expected: mergeFacts(
        factsOf(
          range.map((r) => r.message),
          dialect,
          options.requestChars,
        ),
        ledgerFacts(previous),
      ),
      folded,
    },
    replaced: plan.middle,
    summaryIndices: candidate.flatMap((e, i) => (e.from === undefined && dialect.isSummary(e.message) ? [i] : [])),
  };
}
