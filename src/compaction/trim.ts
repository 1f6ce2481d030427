/**
 * The trim rung: the last resort when no summary can bring the head under its target (the
 * summariser refused its input as too long, or the summary head is still over the context
 * window). It drops the oldest groups of the conversation, whole (a call never leaves its
 * results), until the head fits; what it dropped is listed in the ledger, which rides in the
 * head as the summary message, exactly where a summary's would. It never drops the kept head
 * (instructions, the opening groups the plan keeps, what came before a previous summary), an
 * instruction anywhere, the latest real user request, or the group of the tool calls still
 * open. A previous summary is replaced by this one (its ledger merged into the new one). Pure.
 */
import { buildCandidate, type CandidateEntry } from './candidate';
import type { Dialect, Message, MessageGroup } from './dialects/types';
import { providerValid } from './gates';
import { buildLedger, demandedFacts, type Ledger, summaryWithLedger } from './ledger';
import { isBrokenGroup, latestUserRequestIndex, type CompactionPlan } from './plan';
import type { Proposal } from './proposal';

export interface TrimOptions {
  /** The most the head may hold after the trim; undefined: drop what the plan would summarise, no more. */
  targetTokens?: number;
  /** A ledger request is kept verbatim up to this many UTF-16 units. */
  requestChars: number;
  /** The ledger's token bound, given the tokens of what is dropped (src/compaction/ledger.ts ledgerBudget). */
  ledgerBudget: (droppedTokens: number) => number;
  /** The prose before the ledger, given how many messages were dropped. */
  prose: (droppedMessages: number) => string;
}

/** What a trim drops and keeps, as groups of the snapshot, before the head is built. */
interface TrimCut {
  /** Positions in the snapshot of the messages dropped, in order. */
  dropped: number[];
  /** Positions in the snapshot of the messages kept after the summary, in order. */
  kept: number[];
}

const indicesOf = (groups: readonly MessageGroup[]) => groups.flatMap((g) => g.indices);

/**
 * The groups after the plan's head, in order, split into those the trim never drops
 * (`protected`), those it always drops (a previous summary, groups a provider rejects), and
 * the rest (`droppable`), oldest first.
 */
function classify(snapshot: readonly Message[], plan: CompactionPlan, dialect: Dialect) {
  const groups = dialect.groups(snapshot);
  const head = new Set(plan.head);
  const latest = latestUserRequestIndex(dialect, snapshot);
  const open = dialect.openCalls(snapshot);
  const last = groups.length - 1;
  const always: MessageGroup[] = [];
  const kept: MessageGroup[] = [];
  const droppable: MessageGroup[] = [];
  groups.forEach((g, k) => {
    if (g.indices.every((i) => head.has(i))) return;
    if (g.indices.every((i) => dialect.isSummary(snapshot[i])) || isBrokenGroup(g, k === last)) always.push(g);
    else if (g.indices.includes(latest) || (open !== undefined && g.indices.includes(open.index)) || g.indices.every((i) => dialect.isInstruction(snapshot[i])))
      kept.push(g);
    else droppable.push(g);
  });
  return { always, kept, droppable };
}

/** The cut that drops the `n` oldest droppable groups (and every group always dropped). */
function cutOf(parts: ReturnType<typeof classify>, n: number): TrimCut {
  const sort = (xs: number[]) => xs.sort((a, b) => a - b);
  return {
    dropped: sort([...indicesOf(parts.always), ...indicesOf(parts.droppable.slice(0, n))]),
    kept: sort([...indicesOf(parts.kept), ...indicesOf(parts.droppable.slice(n))]),
  };
}

/** The proposal for one cut: the kept head, the summary message (prose and ledger of what was dropped), the kept groups. */
function proposalOf(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  tokens: readonly number[],
  cut: TrimCut,
  previous: Ledger,
  options: TrimOptions,
): Proposal {
  // What was dropped, without a previous summary's own messages: their ledger is `previous`.
  const replaced = cut.dropped.filter((i) => !dialect.isSummary(snapshot[i]));
  const droppedTokens = replaced.reduce((sum, i) => sum + tokens[i], 0);
  const range = replaced.map((i) => ({ message: snapshot[i], seq: seqs[i] }));
  const { ledger, folded } = buildLedger(previous, range, dialect, {
    requestChars: options.requestChars,
    budgetTokens: options.ledgerBudget(droppedTokens),
  });
  const layout: CompactionPlan = { head: plan.head, middle: cut.dropped, tail: cut.kept };
  const candidate: CandidateEntry[] = buildCandidate(layout, summaryWithLedger(options.prose(replaced.length), ledger), snapshot, dialect);
  return {
    rung: 'trim',
    candidate,
    ledger,
    demand: {
      expected: demandedFacts(previous, range, dialect, options),
      folded,
    },
    replaced,
    summaryIndices: candidate.flatMap((e, i) => (e.from === undefined ? [i] : [])),
  };
}

/**
 * The trim rung's proposal: the fewest oldest groups dropped such that the head is smaller
 * than before, at or under `targetTokens` (when given; otherwise the groups the plan would
 * summarise are dropped), and valid for the dialect's provider. Undefined when even dropping
 * every droppable group gets there not. `tokens[i]` is snapshot message i's count, `count`
 * counts a new (summary) message; `seqs[i]` its lineage sequence number (null on rows a
 * compaction wrote).
 */
export function trimProposal(
  snapshot: readonly Message[],
  seqs: ReadonlyArray<number | null>,
  plan: CompactionPlan,
  dialect: Dialect,
  tokens: readonly number[],
  count: (message: Message) => number,
  previous: Ledger,
  options: TrimOptions,
): Proposal | undefined {
  const parts = classify(snapshot, plan, dialect);
  const tokensBefore = tokens.reduce((a, b) => a + b, 0);
  const sum = (xs: readonly number[]) => xs.reduce((total, i) => total + tokens[i], 0);
  const fixed = sum(plan.head) + sum(indicesOf(parts.kept));
  // Without a target, drop what the plan summarises (its middle), and more only if that is not enough.
  const middle = new Set(plan.middle);
  const least = options.targetTokens === undefined ? parts.droppable.filter((g) => g.indices.some((i) => middle.has(i))).length : 0;
  let rest = sum(indicesOf(parts.droppable.slice(least)));
  for (let n = least; n <= parts.droppable.length; n++) {
    if (n > least) rest -= sum(parts.droppable[n - 1].indices);
    const bound = Math.min(tokensBefore - 1, options.targetTokens ?? Infinity);
    // The summary message only adds to what is kept: build it only once what is kept fits.
    if (fixed + rest > bound) continue;
    const cut = cutOf(parts, n);
    if (cut.dropped.length === 0) continue;
    const proposal = proposalOf(snapshot, seqs, plan, dialect, tokens, cut, previous, options);
    const after = proposal.candidate.reduce((total, e) => total + (e.from === undefined ? count(e.message) : tokens[e.from]), 0);
    if (after > bound) continue;
    if (
      providerValid(
        proposal.candidate.map((e) => e.message),
        dialect,
        proposal.summaryIndices,
      )
    )
      continue;
    return proposal;
  }
  return undefined;
}

/**
 * The trim rung's target for a lineage: `percent` of its threshold (or of its context window),
 * and never over the context window; undefined when it has neither.
 */
export function trimTarget(lineage: { compactAtTokens: number | null; contextWindow: number | null }, percent: number): number | undefined {
  const base = lineage.compactAtTokens ?? lineage.contextWindow;
  if (base === null) return undefined;
  const target = Math.floor((base * percent) / 100);
  return lineage.contextWindow === null ? target : Math.min(target, lineage.contextWindow);
}
