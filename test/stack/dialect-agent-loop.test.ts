/**
 * The agent's next call always works, in every dialect (the agent-loop proof of
 * test/stack/agent-loop.test.ts, for `openai-responses`, `anthropic` and `gemini`). A scripted
 * coding agent (test/support/dialect-agent.ts) runs its turns against the service through the
 * provider's real SDK (`openai` Responses API, `@anthropic-ai/sdk`, `@google/genai`) and the
 * strict fake provider of its dialect, which answers 4xx exactly where the provider would.
 * Each turn it reads the head with `transcript(id, { for: 'provider' })`, sends it, appends
 * the reply exactly as the SDK returned it, and appends the results of its tool calls
 * (parallel ones, JSON text outputs, some ~20 KB, Anthropic results sometimes one per entry as
 * Claude Code stores them), with new user requests now and then (some image-only). A low
 * threshold makes compactions land between calls and results; a second caller compacts at
 * random moments. Anthropic runs with thinking on in rotate mode: the dialect refuses to
 * compact inside an open tool loop then (by design), and those refusals are counted apart.
 *
 * Proven per dialect and mode, against the agent's own ledger (not the service's numbers):
 * - the strict provider rejected 0 of the agent's requests, saw every one of them, and does
 *   reject a deliberately broken head (so the count could have been other than 0);
 * - after every compaction (every read of the head, every compacted answer of the second
 *   caller) the latest real user request is in the head verbatim, and every message of the
 *   head is JSON-equal to one the agent appended, or is the service's summary;
 * - every appended message is in the live head, JSON-equal at its lineage sequence number, or
 *   inside a range a `compacted` audit row says it summarised;
 * - enough compactions happened, at least one with a call open (acknowledged before the
 *   request, its result appended after the answer); with Anthropic thinking on instead: some
 *   compactions asked for inside a loop were refused with the hold reason, none started from
 *   a snapshot ending inside an open loop (read from Postgres), and compactions still came
 *   between turns, once the loop had closed;
 * - no gate but the size gate refused a head the planner built.
 *
 * The agent compacts between turns as agents do: it mostly waits for the compaction its
 * loop-closing answer asked for, or asks for one itself when the threshold's request is still
 * pending from inside the loop (with thinking on, such a request is the one held).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DialectName, dialectOf, type Message } from '../../src/compaction/dialects';
import { providerValid } from '../../src/compaction/gates';
import { jsonEqual } from '../../src/compaction/json';
import { auditRows } from '../../src/db/session-store';
import type { CompactionMode } from '../../src/workflows/contract';
import {
  AgentRequestRejected,
  anthropicAdapter,
  type DialectAdapter,
  DialectAgent,
  geminiAdapter,
  ProviderRejected,
  responsesAdapter,
} from '../support/dialect-agent';
import { startStrictAnthropic, type StrictAnthropicProvider, validateAnthropicRequest } from '../support/strict-anthropic';
import type { StrictRequestRecord } from '../support/strict-fake';
import { startStrictGemini, type StrictGeminiProvider } from '../support/strict-gemini';
import { seededRandom } from '../support/strict-provider';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';
import { startTestStack, type TestStack, uniqueId } from '../support/stack';

const TURNS = 200;
/** Estimated tokens: low, so that compactions come every few turns and land between calls and results. */
const THRESHOLD_TOKENS = 12_000;
const MIN_COMPACTIONS = 5;
const SEED = 20261201;
/** Why the anthropic dialect refuses to compact inside an open tool loop with thinking on. */
const HOLD_REASON = /tool loop is open with thinking on/;

interface Run {
  dialect: DialectName;
  mode: CompactionMode;
  /** Anthropic only: requests with extended thinking on. */
  thinking: boolean;
  /** The rule the strict provider names when it refuses the broken head (an orphan result). */
  brokenRule: string;
}

const RUNS: Run[] = [
  { dialect: 'openai-responses', mode: 'rotate', thinking: false, brokenRule: 'RS-1' },
  { dialect: 'openai-responses', mode: 'in_place', thinking: false, brokenRule: 'RS-1' },
  { dialect: 'anthropic', mode: 'rotate', thinking: true, brokenRule: 'AN-1' },
  { dialect: 'anthropic', mode: 'in_place', thinking: false, brokenRule: 'AN-1' },
  { dialect: 'gemini', mode: 'rotate', thinking: false, brokenRule: 'GM-2' },
  { dialect: 'gemini', mode: 'in_place', thinking: false, brokenRule: 'GM-2' },
];

let stack: TestStack;
let responses: StrictResponsesProvider;
let anthropic: StrictAnthropicProvider;
let gemini: StrictGeminiProvider;

beforeAll(async () => {
  [responses, anthropic, gemini] = await Promise.all([
    startStrictResponses({ seed: SEED }),
    startStrictAnthropic({ seed: SEED }),
    startStrictGemini({ seed: SEED }),
  ]);
  stack = await startTestStack({
    env: {
      COMPACTION_LEASE_TTL_MS: '5000',
      COMPACTION_TAIL_TOKENS: '200',
      // No cooldown after a refused job: with thinking on, threshold jobs asked for inside an
      // open tool loop are refused (held), and the next append after the loop closes must be
      // able to ask again at once (the default cooldown of 60 s would outlast a run).
      AUTO_COMPACTION_COOLDOWNS_MS: '0',
    },
  });
});

afterAll(async () => {
  await stack?.close();
  await Promise.all([responses?.close(), anthropic?.close(), gemini?.close()]);
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function adapterFor(
  run: Run,
  model: string,
): { adapter: DialectAdapter; provider: { requests: StrictRequestRecord<unknown>[]; rejections: StrictRequestRecord<unknown>[] } } {
  if (run.dialect === 'openai-responses') return { adapter: responsesAdapter(responses.url, model), provider: responses };
  if (run.dialect === 'anthropic') return { adapter: anthropicAdapter(anthropic.url, model, run.thinking), provider: anthropic };
  return { adapter: geminiAdapter(gemini.url, model), provider: gemini };
}

/** The second caller: compacts the agent's head at random moments while the agent works. */
function startSecondCaller(agent: DialectAgent, seed: number) {
  const rand = seededRandom(seed);
  const state = { stopped: false, outcomes: {} as Record<string, number>, errors: [] as string[] };
  const done = (async () => {
    while (!state.stopped) {
      // A random moment, not a stand-in for a condition.
      await pause(150 + Math.floor(rand() * 900));
      if (state.stopped) break;
      const usersBefore = agent.userRequests.length;
      const inFlightBefore = agent.userAppendInFlight;
      const openBefore = [...agent.open.keys()];
      try {
        const result = await stack.client.compact(agent.head);
        // A call acknowledged before the request and still unanswered after the answer was open when the job committed.
        const callOpen = openBefore.some((key) => agent.open.has(key));
        agent.record({ source: 'second', outcome: result.outcome, reason: result.reason, generation: result.generation, callOpen });
        state.outcomes[result.outcome] = (state.outcomes[result.outcome] ?? 0) + 1;
        if (result.outcome !== 'compacted') continue;
        // Only when no user request was appended during the call is "the latest" well defined.
        const latestDefined = !inFlightBefore && !agent.userAppendInFlight && agent.userRequests.length === usersBefore;
        agent.checkHead(result.messages, `second caller: compaction to generation ${result.generation} (${result.sessionId})`, { latestDefined });
      } catch (error) {
        state.errors.push(String(error));
      }
    }
  })();
  return {
    state,
    async stop() {
      state.stopped = true;
      await done;
    },
  };
}

/** The live head's rows by lineage sequence number, read with a query of the test's own. */
async function headRows(sessionId: string): Promise<Map<number, Message[]>> {
  const { rows } = await stack.db.pool.query<{ lineage_seq: number; body: Message }>(
    'select lineage_seq, body from messages where session_id = $1 and archived_at is null and lineage_seq is not null',
    [sessionId],
  );
  const bySeq = new Map<number, Message[]>();
  for (const r of rows) bySeq.set(r.lineage_seq, [...(bySeq.get(r.lineage_seq) ?? []), r.body]);
  return bySeq;
}

/** The head a job started from: the parent's rows up to its watermark that were live when it started. */
async function snapshotOf(sessionId: string, watermarkSeq: number, startedAt: Date): Promise<Message[]> {
  const { rows } = await stack.db.pool.query<{ body: Message }>(
    'select body from messages where session_id = $1 and seq <= $2 and (archived_at is null or archived_at > $3) order by seq',
    [sessionId, watermarkSeq, startedAt],
  );
  return rows.map((r) => r.body);
}

/**
 * The test's own reading of "inside an open Anthropic tool loop": the last turn (consecutive
 * entries of one role) is an assistant turn with tool_use blocks, or a user turn with
 * tool_result blocks (the model is asked again with the results).
 */
function anthropicLoopOpen(messages: readonly Message[]): boolean {
  const blocks = (m: Message) => (Array.isArray(m.content) ? (m.content as { type?: unknown }[]) : []);
  let start = messages.length - 1;
  while (start > 0 && messages[start - 1].role === messages.at(-1)?.role) start--;
  const last = messages.slice(Math.max(start, 0)).flatMap(blocks);
  return messages.at(-1)?.role === 'assistant' ? last.some((b) => b.type === 'tool_use') : last.some((b) => b.type === 'tool_result');
}

const countBy = (values: string[]) => values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {});

/** A refusal's reason in a word, for the report. */
const refusalKind = (reason = '') => (HOLD_REASON.test(reason) ? 'hold' : /nothing to summarise/.test(reason) ? 'nothing-to-summarise' : reason.slice(0, 60));

// One run after the other: apart, each is reproducible from its seed (the agents, the worker
// and the fakes share one process).
describe('an agent loop through the real SDKs against the strict providers', () => {
  it.for(RUNS)(
    `$dialect, $mode mode (thinking: $thinking): ${TURNS} turns through at least ${MIN_COMPACTIONS} compactions, every request accepted, nothing lost`,
    { timeout: 120_000 },
    async (run, { expect }) => {
      const sessionId = uniqueId(`dloop-${run.dialect}-${run.mode}`);
      await stack.client.createSession({ sessionId, dialect: run.dialect, mode: run.mode, compactAt: THRESHOLD_TOKENS });
      const model = `agent-model-${run.dialect}-${run.mode}`;
      const { adapter, provider } = adapterFor(run, model);
      const seed = SEED + RUNS.indexOf(run);
      const agent = new DialectAgent({ client: stack.client, adapter, sessionId, seed, compactAtTokens: THRESHOLD_TOKENS });
      const second = startSecondCaller(agent, seed + 100);

      let rejected: AgentRequestRejected | undefined;
      const started = Date.now();
      try {
        for (let turn = 0; turn < TURNS; turn++) await agent.turn(turn);
      } catch (error) {
        if (!(error instanceof AgentRequestRejected)) throw error;
        rejected = error;
      } finally {
        await second.stop();
      }
      await agent.drain();
      const elapsedMs = Date.now() - started;

      // What the run did, from the agent's own record.
      const dialect = dialectOf(run.dialect);
      const mine = (r: StrictRequestRecord<unknown>) => r.model === model;
      const loopRejections = provider.rejections.filter(mine);
      const accepted = provider.requests.filter((r) => mine(r) && r.caller === 'agent' && r.status === 200).length;
      const compacted = agent.answers.filter((a) => a.outcome === 'compacted');
      const generations = new Set(compacted.map((a) => a.generation));
      const withOpenCall = new Set(compacted.filter((a) => a.callOpen).map((a) => a.generation));
      const refused = agent.answers.filter((a) => a.outcome === 'refused');
      const held = refused.filter((a) => HOLD_REASON.test(a.reason ?? ''));
      const thinkingTurns = agent.ledger.filter(
        (e) => Array.isArray(e.message.content) && e.message.content.some((b) => (b as { type?: unknown }).type === 'thinking'),
      ).length;
      const rows = await auditRows(stack.db.db, sessionId);
      const report = {
        dialect: run.dialect,
        mode: run.mode,
        thinking: run.thinking,
        elapsedMs,
        appended: agent.ledger.length,
        compactions: generations.size,
        compactionsWithOpenCall: withOpenCall.size,
        refusals: countBy(refused.map((a) => refusalKind(a.reason))),
        heldWithOpenCall: held.filter((a) => a.callOpen).length,
        outcomes: countBy(agent.answers.map((a) => `${a.source}:${a.outcome}`)),
        rejected: loopRejections.length,
        agentRequests: agent.stats.requests,
        accepted,
        thinkingTurns,
        auditCompacted: rows.filter((r) => r.outcome === 'compacted').length,
        ...agent.stats,
      };
      console.log(`[dialect-agent-loop] ${JSON.stringify(report)}`);

      // 0 rejected: the strict provider saw each of the agent's requests and refused none.
      const first = loopRejections[0];
      expect(rejected?.message, 'the agent stopped on a rejected request').toBeUndefined();
      expect(loopRejections.length, first ? `first rejection: ${first.rule}: ${first.reason}` : '').toBe(0);
      expect(agent.stats.turns).toBe(TURNS);
      expect(agent.stats.requests).toBeGreaterThanOrEqual(TURNS);
      expect(accepted).toBe(agent.stats.requests);

      // The latest user request survived every compaction; every head held only what the
      // agent appended, or the summary; calls open at a compaction were still open after it.
      expect(agent.violations).toEqual([]);
      expect(second.state.errors).toEqual([]);
      expect(agent.stats.userRequestChecks).toBeGreaterThanOrEqual(TURNS);
      expect(agent.stats.compactionsObservedOnRead).toBeGreaterThan(0);

      // The final head, as stored and as the provider gets it.
      const head = await stack.client.transcript(sessionId);
      agent.checkHead(head.messages, 'the final head');
      const providerHead = await stack.client.transcript(sessionId, { for: 'provider' });
      agent.checkHead(providerHead.messages, 'the final provider view', { providerView: true });
      expect(agent.violations).toEqual([]);
      expect(head.messages.filter((m) => dialect.isSummary(m)).length).toBeGreaterThan(0);

      // Every appended message is in the live head (JSON-equal at its lineage sequence number)
      // or inside a range that a `compacted` audit row summarised.
      const live = await headRows(head.sessionId);
      const ranges = rows
        .filter((r) => r.outcome === 'compacted' && r.summarisedFromSeq !== null && r.summarisedToSeq !== null)
        .map((r) => [r.summarisedFromSeq!, r.summarisedToSeq!] as const);
      const altered = agent.ledger.filter((e) => (live.get(e.lineageSeq) ?? []).some((body) => !jsonEqual(body, e.message)));
      const duplicated = agent.ledger.filter((e) => (live.get(e.lineageSeq) ?? []).length > 1);
      const unaccounted = agent.ledger.filter((e) => !live.has(e.lineageSeq) && !ranges.some(([from, to]) => from <= e.lineageSeq && e.lineageSeq <= to));
      const listed = (entries: typeof agent.ledger) =>
        entries
          .slice(0, 3)
          .map((e) => `#${e.lineageSeq} (turn ${e.turn}) ${JSON.stringify(e.message).slice(0, 80)}`)
          .join('; ');
      expect(altered.length, `altered in the head: ${listed(altered)}`).toBe(0);
      expect(duplicated.length, `twice in the head: ${listed(duplicated)}`).toBe(0);
      expect(unaccounted.length, `${unaccounted.length} of ${agent.ledger.length} neither in the head nor summarised: ${listed(unaccounted)}`).toBe(0);
      expect(agent.ledger.filter((e) => live.has(e.lineageSeq)).length).toBeLessThan(agent.ledger.length);

      // The planner built valid heads itself: no gate but the size gate had to refuse one (the
      // gates are the safety net, not the mechanism). The one exception is the hold, checked
      // again at commit: appends carried in during the summary can open a loop with thinking on.
      expect(rows.filter((r) => r.gate !== null && r.gate !== 'smaller' && !HOLD_REASON.test(r.reason ?? '')).map((r) => `${r.gate}: ${r.reason}`)).toEqual([]);

      // The run was the one the proof needs.
      expect(generations.size).toBeGreaterThanOrEqual(MIN_COMPACTIONS);
      expect(rows.filter((r) => r.outcome === 'compacted').length).toBeGreaterThanOrEqual(generations.size);
      // Anthropic: which compactions started from a snapshot that ended inside an open tool
      // loop (read by the test from Postgres: the parent's rows up to the job's watermark).
      const insideLoop: string[] = [];
      if (run.dialect === 'anthropic') {
        for (const r of rows.filter((row) => row.outcome === 'compacted')) {
          if (anthropicLoopOpen(await snapshotOf(r.parentSessionId, r.watermarkSeq!, r.startedAt))) insideLoop.push(r.id);
        }
      }
      if (run.thinking) {
        // With thinking on, a compaction asked for inside an open tool loop is refused, by
        // design: the agent saw such refusals, and no compaction started inside an open loop.
        // A call can still be open at a commit when it was appended while the summary ran
        // (carried in); the provider then accepted the head like any other.
        expect(held.filter((a) => a.callOpen).length).toBeGreaterThan(0);
        expect(insideLoop, 'compactions that started inside an open tool loop').toEqual([]);
        // ...and compactions still happen once the loop closes, with thinking blocks in the heads sent.
        expect(compacted.filter((a) => a.source === 'close').length).toBeGreaterThan(0);
        expect(thinkingTurns).toBeGreaterThan(0);
      } else {
        expect(withOpenCall.size).toBeGreaterThanOrEqual(1);
        expect(held).toEqual([]);
        expect(thinkingTurns).toBe(0);
        // Thinking off, nothing holds a compaction back inside a loop (and the reading above sees it).
        if (run.dialect === 'anthropic') expect(insideLoop.length).toBeGreaterThan(0);
      }
      expect(agent.stats.parallelCallReplies).toBeGreaterThan(0);
      expect(agent.stats.largeOutputs).toBeGreaterThan(0);
      expect(agent.stats.jsonOutputs).toBeGreaterThan(0);
      expect(agent.stats.imageRequests).toBeGreaterThan(0);
      expect(agent.stats.answers).toBeGreaterThan(0);
      if (run.dialect === 'anthropic') expect(agent.stats.perEntryResults).toBeGreaterThan(0);
      if (run.dialect === 'openai-responses') expect(agent.stats.splitResults).toBeGreaterThan(0);
      expect(agent.stats.compactionRequestErrors).toEqual([]);

      // The count of rejections could have been other than 0: the same provider, through the
      // same SDK, refuses the final head with a result answering no call (what a bad cut
      // leaves), and the service's own provider check agrees.
      const broken = [...providerHead.messages, adapter.orphanResult()];
      expect(dialect.providerCheck(broken)).toBeDefined();
      const probe = await adapter
        .ask(broken, () => 0.99)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(probe).toBeInstanceOf(ProviderRejected);
      expect((probe as ProviderRejected).status).toBe(400);
      expect(provider.rejections.filter(mine).map((r) => r.rule)).toEqual([run.brokenRule]);
    },
  );
});

// Found by the proof above (anthropic, in_place, and with thinking on through appends carried
// into a commit): a head that ends between the results of parallel calls stored one per entry,
// as Claude Code stores them, is refused by the providerValid gate, though the calls are open
// (openCalls says so) and the agent is about to append the other results. The openai-chat and
// openai-responses dialects take the same state; the anthropic one takes an open final
// assistant turn, but not a final user turn that answers only some of its calls.
describe('a head that ends between parallel results stored one per entry', () => {
  const use = (id: string, name: string) => ({ type: 'tool_use', id, name, input: { target: `src/${name}.ts` } });
  const result = (id: string) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: '42' }] });
  const head: Message[] = [
    { role: 'user', content: 'REQUEST-1: fix the parser' },
    { role: 'assistant', content: [use('toolu_a', 'read_file'), use('toolu_b', 'grep')] },
    result('toolu_a'),
  ];

  it('anthropic: is a valid head to commit, its call open', () => {
    const an = dialectOf('anthropic');
    expect(an.openCalls(head)).toEqual({ index: 1, ids: ['toolu_b'] });
    // What the agent sends next, once it has appended the other result, the provider accepts.
    expect(validateAnthropicRequest({ model: 'agent-model', max_tokens: 1024, messages: [...head, result('toolu_b')] })).toBeNull();
    expect(providerValid(head, an)).toBeUndefined();
  });

  it('openai-responses: the same state is a valid head to commit', () => {
    const rs = dialectOf('openai-responses');
    const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'grep', arguments: '{}' });
    const items: Message[] = [
      { role: 'user', content: 'REQUEST-1' },
      call('call_a'),
      call('call_b'),
      { type: 'function_call_output', call_id: 'call_a', output: '42' },
    ];
    expect(rs.openCalls(items)?.ids).toEqual(['call_b']);
    expect(providerValid(items, rs)).toBeUndefined();
  });
});
