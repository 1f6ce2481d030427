/**
 * `npm run bench:fidelity`: what the agent still knows after 1, 3 and 10 compactions. Each
 * session is replayed the way an agent grows it: a slice of turns is appended, then the
 * session compacts, eleven times over; after compactions 1, 3 and 10 it measures the head:
 *  - planted facts (generated sessions only): the user's requests verbatim, the paths and
 *    identifiers planted in them, and whether each correction is current in the ledger;
 *  - the transcript's own facts of every range summarised so far (the same extraction as the
 *    ledger: requests cut to the bound, file paths of user and assistant text and tool inputs,
 *    identifiers the user named), and the same share for the summary prose alone (no ledger:
 *    what the head would know without it);
 *  - tokens before and after the compaction, and whether the head is at or under its target;
 *  - probes (./fidelity-probes.ts): what the agent needs to continue (the file edited last, the
 *    open error, the plan's next step, the subagents still running, the user turns not yet
 *    answered, the standing instructions, what the user asked last and corrected), each an
 *    exact string of the transcript looked up in the head.
 * The summariser is given the stored ledger as fixed text beside the range, as the activity does.
 * Sessions: the real corpus (`../shared/corpus`, every file; its Responses rollouts also in the
 * Agents SDK's spelling) when it is there, and generated sessions with planted facts in every
 * dialect. Summarisers: the built-in extractive one, and a local OpenAI-compatible stub that
 * answers every summary request with one sentence that keeps nothing (through the real
 * `openai` client), so the figures show what the ledger guarantees on its own. Rungs: summary
 * only, and masking first (at half the head's size when it compacts).
 *
 * The pipeline is the compaction activity's own pure part (plan, `maskingProposal` /
 * `summaryProposal`, the gates), without Postgres and Temporal: the real-stack proofs are in
 * test/stack/ledger-and-masking.test.ts. Never part of `npm test`.
 *
 *   npm run bench:fidelity              every corpus file, 3 generated sessions per dialect
 *   npm run bench:fidelity -- --quick   1 generated session per dialect, corpus files up to 150 messages
 *   npm run bench:fidelity -- --judge   also asks a real model each probe's question from the head after
 *                                      10 compactions (summariser that keeps nothing, summary rung): needs
 *                                      OPENAI_API_KEY (OPENAI_BASE_URL, JUDGE_MODEL optional); never in CI
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLlmSummariser, summariseInChunks, type Summariser } from '../src/activities/summariser';
import { buildCandidate } from '../src/compaction/candidate';
import { type Dialect, type DialectName, dialectOf, type Message } from '../src/compaction/dialects';
import { factsOf, type Ledger, ledgerBudget, ledgerFrom, emptyLedger, renderLedger } from '../src/compaction/ledger';
import { runGates } from '../src/compaction/gates';
import { type CompactionPlan, planCompaction } from '../src/compaction/plan';
import { maskingProposal, type Proposal, summaryProposal } from '../src/compaction/proposal';
import { latestUserRequestText } from '../src/compaction/summary-prompt';
import { LEDGER_HEADING, LEDGER_SECTIONS } from '../src/compaction/summary-structure';
import { estimateTextTokens, estimateTokens } from '../src/compaction/tokens';
import { trimProposal } from '../src/compaction/trim';
import { PROJECT_ROOT } from '../src/config';
import { toAgentsItems } from '../test/support/agents-items';
import { startFakeLlm } from '../test/support/fake-llm';
import { plantedSession, type PlantedFacts } from '../test/support/planted';
import { answers, type Probe, PROBE_KINDS, type ProbeKind, probesOf, QUESTIONS } from './fidelity-probes';

const quick = process.argv.includes('--quick');
const judge = process.argv.includes('--judge');
/** `--only <text>`: only the sessions whose source holds the text (e.g. `--only templar`). */
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
/** `--trace`: one line per compaction (tokens before and after). */
const trace = process.argv.includes('--trace');
/** Heads after the 10th compaction with the lossy stub, and their probes: what the judge mode asks a real model about. */
const judged: Array<{ source: string; dialect: DialectName; head: string; probes: Probe[] }> = [];
const CORPUS = path.resolve(PROJECT_ROOT, '..', 'shared', 'corpus');
const CHECKPOINTS = [1, 3, 10];
/** `--compactions <n>`: compactions per session (default 10; the checkpoints stay 1, 3 and 10). */
const COMPACTIONS = process.argv.includes('--compactions') ? Number(process.argv[process.argv.indexOf('--compactions') + 1]) : 10;
if (!Number.isInteger(COMPACTIONS) || COMPACTIONS < 1) throw new Error(`--compactions takes a whole number of at least 1, not ${COMPACTIONS}`);
const LOSSY = 'The agent worked on some files.';
const PLAN = { tailTokenBudget: 2000, minTailGroups: 2, headGroups: 2, force: false };
const LEDGER = { percent: 10, maxTokens: 8000, requestChars: 500 };
/** The simulated lineage's window: the ledger's share of it, and the head's target. */
const CONTEXT_WINDOW = 128_000;
/** A session compacts when its head reaches this many tokens (the lineage's `compactAt`); masking aims at half of it. */
const THRESHOLD = 8000;

interface Session {
  source: string;
  dialect: DialectName;
  messages: Message[];
  planted?: PlantedFacts;
}

interface Measure {
  source: string;
  dialect: DialectName;
  summariser: 'builtin' | 'lossy';
  rung: 'summary' | 'masking first';
  compactions: number;
  /** Compactions the masking rung answered, and the gates refused. */
  masked: number;
  refused: number;
  /** Compactions held (an Anthropic tool loop open with thinking on) until a later turn. */
  held: number;
  plantedRequests?: number;
  plantedPaths?: number;
  plantedIdentifiers?: number;
  correctionsCurrent?: number;
  /** Shares of the summarised ranges' own facts findable in the head (with the ledger). */
  requests: number;
  paths: number;
  identifiers: number;
  /** The same for the prose alone: what the head would hold without the ledger. */
  pathsWithoutLedger: number;
  identifiersWithoutLedger: number;
  requestsWithoutLedger: number;
  facts: { requests: number; paths: number; identifiers: number };
  tokensBefore: number;
  tokensAfter: number;
  /** The compaction committed and left the head under the threshold it compacted at. */
  underTarget: boolean;
  /** Probes answered by exact lookup in the head: [found, asked] per kind. */
  probes: Partial<Record<ProbeKind, [number, number]>>;
}

function corpusSessions(): Session[] {
  if (!existsSync(CORPUS)) return [];
  const out: Session[] = [];
  for (const format of readdirSync(CORPUS).filter((f) => existsSync(path.join(CORPUS, f)) && !f.endsWith('.md'))) {
    for (const file of readdirSync(path.join(CORPUS, format)).filter((f) => f.endsWith('.json'))) {
      const doc = JSON.parse(readFileSync(path.join(CORPUS, format, file), 'utf8')) as { format: DialectName; messages: Message[] };
      if (quick && doc.messages.length > 150) continue;
      out.push({ source: `corpus/${file.replace(/\.json$/, '')}`, dialect: doc.format, messages: doc.messages });
      if (doc.format === 'openai-responses')
        out.push({ source: `corpus/${file.replace(/\.json$/, '')} (Agents SDK items)`, dialect: 'openai-agents', messages: toAgentsItems(doc.messages) });
    }
  }
  return out;
}

function generatedSessions(): Session[] {
  const dialects: DialectName[] = ['openai-chat', 'openai-responses', 'openai-agents', 'anthropic', 'gemini', 'ai-sdk'];
  return dialects.flatMap((dialect) =>
    Array.from({ length: quick ? 1 : 3 }, (_, k) => {
      const { messages, facts } = plantedSession(dialect, 100 + k, 60, { outputLines: 40, inFlight: true });
      return { source: `generated/seed-${100 + k}`, dialect, messages, planted: facts };
    }),
  );
}

/** The session as the agent appends it: turn by turn (from one real user request to the next), or ten messages at a time when it has few requests. */
function turns(session: Session): Message[][] {
  const dialect = dialectOf(session.dialect);
  const starts = session.messages.flatMap((m, i) => (i > 0 && dialect.isRealUserRequest(m) ? [i] : []));
  const cuts = starts.length >= 20 ? starts : Array.from({ length: Math.floor(session.messages.length / 10) }, (_, k) => (k + 1) * 10);
  const marks = [0, ...cuts.filter((c) => c < session.messages.length)];
  return marks.map((from, k) => session.messages.slice(from, marks[k + 1] ?? session.messages.length));
}

/** The summariser's prose for a plan's middle, as the activity asks for it. */
async function summarise(summariser: Summariser, head: Message[], plan: CompactionPlan, dialect: Dialect, force: boolean, ledger?: string): Promise<string> {
  const summary = await summariseInChunks(
    summariser,
    {
      middle: plan.middle.map((i) => head[i]),
      previousSummary: plan.previousSummary,
      force,
      latestUserRequest: latestUserRequestText(head, dialect),
      dialect,
      ledger,
    },
    { inputBudgetTokens: 100_000, signal: new AbortController().signal, onProgress: () => undefined },
  );
  return summary.text;
}

const refusals: string[] = [];
/** Heads a committed compaction left at or over the threshold, with what they are made of. */
const overThreshold: string[] = [];
/** Every compaction run, by rung setting (not only the checkpoints): how many, how many the masking rung answered, how many left the head at or over the threshold. */
const tally: Record<Measure['rung'], { compactions: number; masked: number; over: number }> = {
  summary: { compactions: 0, masked: 0, over: 0 },
  'masking first': { compactions: 0, masked: 0, over: 0 },
};

/**
 * What a committed head over the threshold is made of, in the head's own tokens (estimateTokens):
 * the kept head, the summary message(s) (prose and each ledger section, in characters / 4; the
 * ledger also in its own estimate beside its bound, and its open entries), the latest request kept
 * after the summary, and the kept tail by group. Then what the trim rung would do with the head the
 * summary was made from, at its default target (half the threshold) and just under the threshold:
 * it never drops the latest request, the open calls or the ledger.
 */
function breakdown(at: {
  head: Message[];
  seqs: Array<number | null>;
  tokens: number[];
  plan: CompactionPlan;
  proposal: Proposal;
  previous: Ledger;
  budget?: number;
  dialect: Dialect;
}): string {
  const { head, plan, proposal, dialect } = at;
  const after = proposal.candidate.map((c) => c.message);
  const sum = (is: number[], of: Message[]) => is.reduce((s, i) => s + estimateTokens(of[i], dialect), 0);
  const summaryText = proposal.summaryIndices.map((i) => dialect.textOf(after[i])).join('\n');
  const start = summaryText.indexOf(LEDGER_HEADING);
  const quarter = (t: string) => Math.ceil(t.length / 4);
  const ledgerParts = (start >= 0 ? summaryText.slice(start) : '').split('\n\n').flatMap((part) => {
    const name = Object.entries(LEDGER_SECTIONS).find(([, heading]) => part.startsWith(heading))?.[0];
    return name ? [`${name} ${quarter(part)}`] : [];
  });
  const l = proposal.ledger;
  const entries = `${l.requests.length} requests, ${l.files.length} files, ${l.commands.length} commands, ${l.errors.filter((e) => !e.resolved).length} open errors, ${l.inFlight.plan?.steps.length ?? 0} plan steps, ${l.inFlight.background.length} background, ${l.inFlight.queued.length} queued, ${l.inFlight.instructions.length} instructions`;
  const open = dialect.openCalls(head);
  const tailGroups = dialect
    .groups(head)
    .filter((g) => g.indices.every((i) => plan.tail.includes(i)))
    .map((g) => `${sum(g.indices, head)}${open !== undefined && g.indices.includes(open.index) ? ' (open calls)' : ''}`);
  const trimmed = (targetTokens: number) => {
    const trim = trimProposal(head, at.seqs, plan, dialect, at.tokens, (m) => estimateTokens(m, dialect), at.previous, {
      targetTokens,
      requestChars: LEDGER.requestChars,
      ledgerBudget: (dropped) => ledgerBudget(CONTEXT_WINDOW, LEDGER, estimateTextTokens(renderLedger(at.previous)), dropped),
      prose: (dropped) => `The ${dropped} oldest message(s) of this conversation were dropped without a summary.`,
    });
    const tokensOf = (p: Proposal) => p.candidate.reduce((s, e) => s + (e.from === undefined ? estimateTokens(e.message, dialect) : at.tokens[e.from]), 0);
    return `to ${targetTokens}: ${trim ? `${tokensOf(trim)} tokens` : 'cannot'}`;
  };
  return [
    `kept head ${sum(plan.head, head)} (${plan.head.length} messages)`,
    `summary ${sum(proposal.summaryIndices, after)} (prose ${quarter(start >= 0 ? summaryText.slice(0, start) : summaryText)}, ledger ${quarter(summaryText.slice(Math.max(0, start)))}: ${ledgerParts.join(', ')}; ledger estimate ${estimateTextTokens(renderLedger(l))} of its bound ${at.budget ?? 'n/a'}; ${entries})`,
    `latest request ${plan.latestUserRequest === undefined ? 0 : estimateTokens(head[plan.latestUserRequest], dialect)}`,
    `tail ${sum(plan.tail, head)} (${plan.tail.length} messages; groups ${tailGroups.join(', ')})`,
    `trim rung ${trimmed(Math.floor(THRESHOLD / 2))}, ${trimmed(THRESHOLD - 1)}`,
  ].join('; ');
}
const probeMisses: string[] = [];
const share = (found: number, total: number) => (total === 0 ? 1 : found / total);
const findable = (facts: readonly string[], text: string) => facts.filter((f) => text.includes(f)).length;

async function replay(session: Session, summariser: Summariser, name: Measure['summariser'], rung: Measure['rung']): Promise<Measure[]> {
  const dialect = dialectOf(session.dialect);
  const seqs = new Map<Message, number>();
  let next = 1;
  let head: Message[] = [];
  let ledger: Ledger = emptyLedger();
  let stored = false;
  const summarisedRanges: Message[] = [];
  let proseOnly: string[] = [];
  let masked = 0;
  let refused = 0;
  const out: Measure[] = [];
  let n = 0;
  let held = 0;
  for (const turn of turns(session)) {
    if (n >= COMPACTIONS) break;
    for (const m of turn) seqs.set(m, next++);
    head = [...head, ...turn];
    const tokens = head.map((m) => estimateTokens(m, dialect));
    const tokensBefore = tokens.reduce((a, b) => a + b, 0);
    // Compactions start at the threshold, as the service's automatic ones do; a held one waits for the next turn.
    if (tokensBefore < THRESHOLD) continue;
    // An agent compacts between its calls, when the head it would send is valid: not in the middle of a model turn
    // (a chunk of a rollout can end there), not in an Anthropic tool loop with thinking on (held).
    if (dialect.holdReason(head)) {
      held++;
      continue;
    }
    if (dialect.providerCheck(dialect.forProvider(head))) continue;
    n++;
    tally[rung].compactions++;
    const plan = planCompaction(head, { ...PLAN, dialect }, tokens);
    const target = Math.floor(THRESHOLD / 2);
    let proposal =
      rung === 'masking first' && plan.middle.length > 0
        ? maskingProposal(
            head,
            head.map((m) => seqs.get(m) ?? null),
            plan,
            dialect,
            tokens,
            (m) => estimateTokens(m, dialect),
            target,
            ledger,
            LEDGER.requestChars,
          )
        : undefined;
    let prose = '';
    let budget: number | undefined;
    if (!proposal && plan.middle.length > 0) {
      prose = await summarise(summariser, head, plan, dialect, false, stored ? renderLedger(ledger) : undefined);
      budget = ledgerBudget(
        CONTEXT_WINDOW,
        LEDGER,
        stored ? estimateTextTokens(renderLedger(ledger)) : 0,
        plan.middle.reduce((s, i) => s + tokens[i], 0),
      );
      proposal = summaryProposal(
        head,
        head.map((m) => seqs.get(m) ?? null),
        plan,
        dialect,
        prose,
        ledger,
        { requestChars: LEDGER.requestChars, budgetTokens: budget },
      );
    }
    if (proposal) {
      const after = proposal.candidate.map((c) => c.message);
      const tokensAfter = after.reduce((s, m) => s + estimateTokens(m, dialect), 0);
      const report = runGates({
        before: head,
        after,
        tokensBefore,
        tokensAfter,
        targetTokens: CONTEXT_WINDOW,
        summaryIndices: proposal.summaryIndices,
        requireSummary: proposal.rung === 'summary',
        facts: proposal.demand,
        dialect,
      });
      if (report.failed) {
        refused++;
        refusals.push(
          `${session.source} (${session.dialect}, ${name}, ${rung}) compaction ${n}: gate ${report.failed.gate}: ${report.failed.reason.slice(0, 200)}`,
        );
      } else {
        summarisedRanges.push(...proposal.replaced.map((i) => head[i]));
        if (proposal.rung === 'masking') {
          masked++;
          tally[rung].masked++;
        } else {
          // What the head would hold without the ledger: the same cut with the prose alone.
          const without = buildCandidate(plan, prose, head, dialect).map((c) => c.message);
          proseOnly = without.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`);
        }
        if (trace)
          console.log(`${session.source} (${session.dialect}, ${name}, ${rung}) compaction ${n} (${proposal.rung}): ${tokensBefore} -> ${tokensAfter} tokens`);
        if (tokensAfter >= THRESHOLD) tally[rung].over++;
        if (tokensAfter >= THRESHOLD)
          overThreshold.push(
            `${session.source} (${session.dialect}, ${name}, ${rung}) compaction ${n}: ${tokensBefore} -> ${tokensAfter} tokens: ${breakdown({ head, seqs: head.map((m) => seqs.get(m) ?? null), tokens, plan, proposal, previous: ledger, budget, dialect })}`,
          );
        head = after;
        ledger = ledgerFrom(JSON.parse(JSON.stringify(proposal.ledger)));
        stored = proposal.rung === 'summary' || stored;
      }
      if (CHECKPOINTS.includes(n)) {
        const text = head.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');
        const bare = proseOnly.join('\n') || text;
        const facts = factsOf(summarisedRanges, dialect, LEDGER.requestChars);
        const unique = { requests: [...new Set(facts.requests)], paths: [...new Set(facts.paths)], identifiers: [...new Set(facts.identifiers)] };
        const measure: Measure = {
          source: session.source,
          dialect: session.dialect,
          summariser: name,
          rung,
          compactions: n,
          masked,
          refused,
          held,
          requests: share(findable(unique.requests, text), unique.requests.length),
          paths: share(findable(unique.paths, text), unique.paths.length),
          identifiers: share(findable(unique.identifiers, text), unique.identifiers.length),
          requestsWithoutLedger: share(findable(unique.requests, bare), unique.requests.length),
          pathsWithoutLedger: share(findable(unique.paths, bare), unique.paths.length),
          identifiersWithoutLedger: share(findable(unique.identifiers, bare), unique.identifiers.length),
          facts: { requests: unique.requests.length, paths: unique.paths.length, identifiers: unique.identifiers.length },
          tokensBefore,
          tokensAfter: report.failed ? tokensBefore : tokensAfter,
          underTarget: !report.failed && tokensAfter < THRESHOLD,
          probes: {},
        };
        const probes = probesOf(session.messages, next - 1, dialect, LEDGER.requestChars, session.planted);
        if (judge && n === COMPACTIONS && name === 'lossy' && rung === 'summary')
          judged.push({ source: session.source, dialect: session.dialect, head: text, probes });
        for (const probe of probes) {
          const [found, asked] = measure.probes[probe.kind] ?? [0, 0];
          measure.probes[probe.kind] = [found + (answers(text, probe) ? 1 : 0), asked + 1];
          if (!answers(text, probe))
            probeMisses.push(
              `${session.source} (${session.dialect}, ${name}, ${rung}) after ${n}: ${probe.kind}: ${JSON.stringify(probe.answer.slice(0, 80))}`,
            );
        }
        if (session.planted) {
          // Only what was appended so far can be known.
          const seen = (f: string) =>
            head.length > 0 && session.messages.slice(0, next - 1).some((m) => JSON.stringify(m).includes(JSON.stringify(f).slice(1, -1)));
          const planted = {
            requests: session.planted.requests.filter(seen),
            paths: session.planted.paths.filter(seen),
            identifiers: session.planted.identifiers.filter(seen),
          };
          measure.plantedRequests = share(findable(planted.requests, text), planted.requests.length);
          measure.plantedPaths = share(findable(planted.paths, text), planted.paths.length);
          measure.plantedIdentifiers = share(findable(planted.identifiers, text), planted.identifiers.length);
          const corrections = session.planted.corrections.filter((c) => seen(c.correction));
          const current = corrections.filter((c) => {
            const original = ledger.requests.find((r) => r.text === c.original);
            const fix = ledger.requests.find((r) => r.text === c.correction);
            // Current: the ledger marks the original superseded by the correction, or the correction is kept verbatim after the ledger (the later message wins).
            if (fix === undefined) return text.includes(c.correction);
            return fix.supersededBy === undefined && (original === undefined || original.supersededBy === fix.seq);
          });
          measure.correctionsCurrent = share(current.length, corrections.length);
        }
        out.push(measure);
      }
    }
  }
  return out;
}

/** The issue's own baseline: a whole corpus transcript force-compacted once; paths of the summarised range findable, with the ledger and without. */
async function forcedOnce(
  session: Session,
  summariser: Summariser,
): Promise<{ source: string; paths: number; withLedger: number; withoutLedger: number } | undefined> {
  const dialect = dialectOf(session.dialect);
  const head = session.messages;
  if (dialect.holdReason(head)) return undefined;
  const plan = planCompaction(head, { ...PLAN, force: true, dialect });
  if (plan.middle.length === 0) return undefined;
  const prose = await summarise(summariser, head, plan, dialect, true);
  const tokens = head.map((m) => estimateTokens(m, dialect));
  const budget = ledgerBudget(
    CONTEXT_WINDOW,
    LEDGER,
    0,
    plan.middle.reduce((s, i) => s + tokens[i], 0),
  );
  const proposal = summaryProposal(
    head,
    head.map((_, i) => i + 1),
    plan,
    dialect,
    prose,
    emptyLedger(),
    { requestChars: LEDGER.requestChars, budgetTokens: budget },
  );
  const textOf = (messages: Message[]) => messages.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');
  const paths = [
    ...new Set(
      factsOf(
        plan.middle.map((i) => head[i]),
        dialect,
        LEDGER.requestChars,
      ).paths,
    ),
  ];
  const withLedger = textOf(proposal.candidate.map((c) => c.message));
  const without = textOf(buildCandidate(plan, prose, head, dialect).map((c) => c.message));
  return { source: session.source, paths: paths.length, withLedger: findable(paths, withLedger), withoutLedger: findable(paths, without) };
}

const pct = (x: number | undefined) => (x === undefined ? '' : `${(100 * x).toFixed(1)}%`);
const mean = (xs: number[]) => (xs.length === 0 ? undefined : xs.reduce((a, b) => a + b, 0) / xs.length);
const min = (xs: number[]) => (xs.length === 0 ? undefined : Math.min(...xs));

/**
 * The probe table: per session source (corpus, generated), summariser and compaction count, each
 * probe kind as found of asked (summed over the sessions and checkpoints of the row), and the
 * heads under the threshold. Summary rung only.
 */
function probeTable(measures: Measure[]): string {
  const rows = [
    `Probes (exact answers found in the head, found of asked), summary rung:\n\n| sessions | summariser | after | ${PROBE_KINDS.join(' | ')} | under threshold |`,
    `|---|---|---:|${PROBE_KINDS.map(() => '---:').join('|')}|---:|`,
  ];
  const groups = new Map<string, Measure[]>();
  for (const m of measures.filter((x) => x.rung === 'summary')) {
    const key = `${m.source.startsWith('corpus') ? 'corpus' : 'generated'}|${m.summariser}|${m.compactions}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const keys = [...groups.keys()].sort((a, b) => {
    const [sa, ma, na] = a.split('|');
    const [sb, mb, nb] = b.split('|');
    return sa.localeCompare(sb) || ma.localeCompare(mb) || Number(na) - Number(nb);
  });
  for (const key of keys) {
    const ms = groups.get(key)!;
    const [source, summariser, n] = key.split('|');
    const cells = PROBE_KINDS.map((kind) => {
      const found = ms.reduce((s, m) => s + (m.probes[kind]?.[0] ?? 0), 0);
      const asked = ms.reduce((s, m) => s + (m.probes[kind]?.[1] ?? 0), 0);
      return asked === 0 ? '–' : `${found}/${asked}${found === asked ? '' : ` (${pct(found / asked)})`}`;
    });
    rows.push(`| ${source} (${ms.length}) | ${summariser} | ${n} | ${cells.join(' | ')} | ${ms.filter((m) => m.underTarget).length} of ${ms.length} |`);
  }
  return rows.join('\n');
}

/**
 * The optional judge mode: a real model reads each head (after 10 compactions with the stub that
 * keeps nothing) and answers each probe's question; an answer counts when it holds the exact
 * answer. Not deterministic and not free: never part of CI or `npm test`.
 */
async function judgeProbes() {
  const apiKey = process.env.OPENAI_API_KEY;
  if (!apiKey) {
    console.log('\n--judge: OPENAI_API_KEY is not set; the judge mode is skipped.');
    return;
  }
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ apiKey, baseURL: process.env.OPENAI_BASE_URL });
  const model = process.env.JUDGE_MODEL ?? 'gpt-4o-mini';
  const tally = new Map<ProbeKind, [number, number]>();
  for (const { head, probes } of judged) {
    for (const probe of probes) {
      const reply = await client.chat.completions.create({
        model,
        temperature: 0,
        messages: [
          { role: 'system', content: "You read a coding agent's context after its history was compacted, and answer from it alone." },
          { role: 'user', content: `Context:\n${head}\n\nQuestion: ${QUESTIONS[probe.kind]}` },
        ],
      });
      const [found, asked] = tally.get(probe.kind) ?? [0, 0];
      tally.set(probe.kind, [found + (answers(reply.choices[0]?.message?.content ?? '', probe) ? 1 : 0), asked + 1]);
    }
  }
  console.log(`\nJudge mode (${model}, ${judged.length} heads after ${COMPACTIONS} compactions, stub summariser):`);
  for (const [kind, [found, asked]] of tally) console.log(`- ${kind}: ${found} of ${asked} answered with the exact string`);
}

async function main() {
  const llm = await startFakeLlm();
  llm.setDefault({ text: LOSSY });
  const lossy = createLlmSummariser(
    { apiKey: 'bench', baseURL: llm.baseURL, model: 'lossy-stub', api: 'chat', stream: false },
    { stallTimeoutMs: 30_000, requestTimeoutMs: 30_000 },
  );
  const builtin: Summariser = {
    model: 'builtin-extractive',
    description: 'built-in extractive',
    summarise: async (request) => ({ text: (await import('../src/compaction/extractive-summary')).extractiveSummary(request), model: 'builtin-extractive' }),
  };
  const sessions = [...corpusSessions(), ...generatedSessions()].filter((s) => only === undefined || s.source.includes(only));
  console.log(`${sessions.length} sessions (${sessions.filter((s) => s.source.startsWith('corpus')).length} from the corpus), ${COMPACTIONS} compactions each`);
  const measures: Measure[] = [];
  for (const session of sessions) {
    for (const [name, summariser] of [
      ['builtin', builtin],
      ['lossy', lossy],
    ] as const) {
      for (const rung of ['summary', 'masking first'] as const) measures.push(...(await replay(session, summariser, name, rung)));
    }
  }
  const baseline: Array<{ summariser: string; source: string; paths: number; withLedger: number; withoutLedger: number }> = [];
  for (const session of sessions.filter((x) => x.source.startsWith('corpus') && x.dialect === 'anthropic')) {
    for (const [name, summariser] of [
      ['builtin', builtin],
      ['lossy', lossy],
    ] as const) {
      const once = await forcedOnce(session, summariser);
      if (once) baseline.push({ summariser: name, ...once });
    }
  }
  await llm.close();

  // One row per dialect, summariser and compaction count, summary rung, corpus and generated sessions together.
  const rows: string[] = [
    '| dialect | summariser | after | sessions | requests kept | paths | identifiers | planted requests | planted paths | planted ids | corrections current | paths, prose only | identifiers, prose only | under threshold | tokens before → after |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const groups = new Map<string, Measure[]>();
  for (const m of measures.filter((x) => x.rung === 'summary')) {
    const key = `${m.dialect}|${m.summariser}|${m.compactions}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  const order = ['openai-chat', 'openai-responses', 'openai-agents', 'anthropic', 'gemini', 'ai-sdk'];
  const keys = [...groups.keys()].sort((a, b) => {
    const [da, sa, na] = a.split('|');
    const [db, sb, nb] = b.split('|');
    return order.indexOf(da) - order.indexOf(db) || sa.localeCompare(sb) || Number(na) - Number(nb);
  });
  const int = (x: number | undefined) => (x === undefined ? '' : Math.round(x).toLocaleString('en-US'));
  for (const key of keys) {
    const ms = groups.get(key)!;
    const [dialect, summariser, n] = key.split('|');
    const planted = ms.filter((m) => m.plantedRequests !== undefined);
    const under = ms.filter((m) => m.underTarget).length;
    rows.push(
      `| ${dialect} | ${summariser} | ${n} | ${ms.length} | ${pct(min(ms.map((m) => m.requests)))} | ${pct(min(ms.map((m) => m.paths)))} | ${pct(min(ms.map((m) => m.identifiers)))} | ${pct(
        min(planted.map((m) => m.plantedRequests!)),
      )} | ${pct(min(planted.map((m) => m.plantedPaths!)))} | ${pct(min(planted.map((m) => m.plantedIdentifiers!)))} | ${pct(min(planted.map((m) => m.correctionsCurrent!)))} | ${pct(
        mean(ms.map((m) => m.pathsWithoutLedger)),
      )} | ${pct(mean(ms.map((m) => m.identifiersWithoutLedger)))} | ${under} of ${ms.length} | ${int(mean(ms.map((m) => m.tokensBefore)))} → ${int(mean(ms.map((m) => m.tokensAfter)))} |`,
    );
  }
  console.log(rows.join('\n'));
  // The masking rung beside the summary rung: how often it answered, and whether any share moved.
  const lowest = (rung: Measure['rung'], pick: (m: Measure) => number | undefined) =>
    min(measures.filter((m) => m.rung === rung).flatMap((m) => (pick(m) === undefined ? [] : [pick(m)!])));
  console.log(
    `\nMasking first: it answered ${tally['masking first'].masked} of ${tally['masking first'].compactions} compactions (no summariser call for those); lowest planted paths ${pct(
      lowest('masking first', (m) => m.plantedPaths),
    )} (summary rung ${pct(lowest('summary', (m) => m.plantedPaths))}), lowest paths ${pct(lowest('masking first', (m) => m.paths))} (summary rung ${pct(lowest('summary', (m) => m.paths))}).`,
  );
  if (baseline.length > 0) {
    console.log('\nClaude Code transcripts of the corpus, each force-compacted once (file paths of the summarised range findable in the head):');
    for (const name of ['builtin', 'lossy']) {
      const rows = baseline.filter((b) => b.summariser === name);
      const sum = (k: 'paths' | 'withLedger' | 'withoutLedger') => rows.reduce((a, b) => a + b[k], 0);
      console.log(
        `- ${name}: with the ledger ${sum('withLedger')} of ${sum('paths')}, without it ${sum('withoutLedger')} of ${sum('paths')} (${rows.length} transcripts)`,
      );
    }
  }
  console.log(`\n${probeTable(measures)}`);
  if (judge) await judgeProbes();
  if (probeMisses.length > 0)
    console.log(
      `\nProbes not answered by the head (first 20 of ${probeMisses.length}):\n${probeMisses
        .slice(0, 20)
        .map((r) => `- ${r}`)
        .join('\n')}`,
    );
  console.log(
    `\nEvery compaction (not only at ${CHECKPOINTS.join(', ')}): ${tally.summary.compactions} with the summary rung, ${tally.summary.over} of them left the head at or over ${THRESHOLD} tokens; ${tally['masking first'].compactions} with masking first, ${tally['masking first'].over} of them.`,
  );
  if (overThreshold.length > 0)
    console.log(
      `\nCompactions that committed and left the head at or over ${THRESHOLD} tokens, and what it holds:\n${overThreshold.map((r) => `- ${r}`).join('\n')}`,
    );
  if (refusals.length > 0) console.log(`\nRefused compactions (the head stays as it was):\n${refusals.map((r) => `- ${r}`).join('\n')}`);
  console.log('\nShares are the minimum over the sessions of a row (prose-only columns: the mean); tokens are means.');
  const dir = path.join(PROJECT_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, only !== undefined ? 'fidelity-only.json' : quick ? 'fidelity-quick.json' : 'fidelity.json');
  writeFileSync(file, `${JSON.stringify({ ranAt: new Date().toISOString(), quick, only, measures, baseline }, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(PROJECT_ROOT, file)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
