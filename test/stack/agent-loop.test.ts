/**
 * The agent's next call always works. A scripted coding agent runs hundreds of
 * turns against the service: each turn it reads the head, sends it with the real `openai`
 * client to a strict provider that answers 400 exactly where the OpenAI chat API does, and
 * appends the reply (single and parallel tool calls, large tool outputs, new user requests).
 * A low threshold makes auto-compaction fire often, sometimes between a tool call and its
 * result, and a second caller compacts at random moments. Proven per mode, against the
 * agent's own ledger (not the service's numbers):
 * - the provider rejected 0 requests (the head was always a valid transcript);
 * - the latest user request is verbatim in the head after every compaction (checked on
 *   every read of the head, and on every compacted answer of the second caller);
 * - every message the agent appended is in the live head verbatim, or inside a range that a
 *   `compacted` audit row says it summarised.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { CompactResult } from '../../src/workflows/contract';
import { auditRows } from '../../src/db/session-store';
import { AgentRequestRejected, canonical, ScriptedAgent } from '../support/scripted-agent';
import { seededRandom, startStrictProvider, type StrictProvider } from '../support/strict-provider';
import { startTestStack, type TestStack, uniqueId } from '../support/stack';

/** More than the 500 the proof asks for: on a fast, quiet machine 500 turns gave 23 and 24 compactions, too close to the floor of 20. */
const TURNS = 700;
/** Estimated tokens; well above the largest possible kept tail (2 groups of at most ~40 KB). */
const THRESHOLD_TOKENS = 24_000;
const MIN_COMPACTIONS = 20;
/** Each one is checked by the strict provider on the next turn; on a quiet machine 700 turns give 5 to 11. */
const MIN_COMPACTIONS_WITH_OPEN_CALL = 3;
const SEED = 20261130;

let provider: StrictProvider;
let stack: TestStack;

beforeAll(async () => {
  provider = await startStrictProvider({ seed: SEED, summariserModel: 'summary-model', largeArgumentsChance: 0.3, summaryDelayMs: 50 });
  stack = await startTestStack({
    env: {
      // The worker's summariser talks to the strict provider too.
      OPENAI_BASE_URL: provider.baseURL,
      COMPACTION_MODEL: 'summary-model',
      COMPACTION_LEASE_TTL_MS: '5000',
      COMPACTION_TAIL_TOKENS: '200',
    },
  });
});

afterAll(async () => {
  await stack?.close();
  await provider?.close();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The second caller: compacts the agent's head at random moments while the agent works. */
function startSecondCaller(agent: ScriptedAgent, seed: number) {
  const rand = seededRandom(seed);
  const state = {
    stopped: false,
    outcomes: {} as Record<string, number>,
    compacted: [] as CompactResult[],
    userRequestChecks: 0,
    violations: [] as string[],
    errors: [] as string[],
  };
  const done = (async () => {
    while (!state.stopped) {
      // A random moment, not a stand-in for a condition.
      await pause(150 + Math.floor(rand() * 900));
      if (state.stopped) break;
      const usersBefore = agent.userRequests.length;
      const inFlightBefore = agent.userAppendInFlight;
      try {
        const result = await stack.client.compact(agent.head);
        state.outcomes[result.outcome] = (state.outcomes[result.outcome] ?? 0) + 1;
        if (result.outcome !== 'compacted') continue;
        state.compacted.push(result);
        // Only when no user request was appended during the call is "the latest" well defined.
        const latest = agent.lastUserRequest;
        if (latest !== undefined && !inFlightBefore && !agent.userAppendInFlight && agent.userRequests.length === usersBefore) {
          state.userRequestChecks++;
          if (!result.messages.some((m) => m.role === 'user' && m.content === latest)) {
            state.violations.push(
              `compaction to generation ${result.generation} (${result.sessionId}) lost the latest user request ${JSON.stringify(latest.slice(0, 40))}`,
            );
          }
        }
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

// One mode after the other: run at once they took as long (the agents, the worker and the
// provider share one process), and apart each run is reproducible from its seed.
describe('an agent loop against a strict provider', () => {
  it.for(['rotate', 'in_place'] as const)(
    `%s mode: runs ${TURNS} turns through at least ${MIN_COMPACTIONS} compactions with every request accepted and nothing lost`,
    { timeout: 300_000 },
    async (mode, { expect }) => {
      const sessionId = uniqueId(`agent-${mode}`);
      await stack.client.createSession({ sessionId, mode, compactAtTokens: THRESHOLD_TOKENS });
      const model = `agent-model-${mode}`;
      const agent = new ScriptedAgent({
        client: stack.client,
        baseURL: provider.baseURL,
        sessionId,
        model,
        seed: SEED + (mode === 'rotate' ? 1 : 2),
        waitWithOpenCallChance: 0.85,
      });
      const second = startSecondCaller(agent, SEED + 3);

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

      // What the run did, from the test's own ledger.
      const generations = new Set([...agent.compacted, ...second.state.compacted].map((r) => r.generation));
      // This agent's rejected requests, and any rejected summariser request (of either mode).
      const rejections = provider.rejections.filter((r) => r.model === model || r.caller !== 'agent');
      const summariserRequests = provider.requests.filter((r) => r.caller === 'summariser').length;
      const rows = await auditRows(stack.db.db, sessionId);
      // From the service's audit, for the report only: compactions that carried appends made while they ran.
      const carrying = rows.filter((r) => r.outcome === 'compacted' && /^carried/.test(r.reason ?? '')).length;
      const report = {
        carrying,
        mode,
        elapsedMs,
        appended: agent.ledger.length,
        userRequests: agent.userRequests.length,
        compactions: generations.size,
        compactionsWithOpenCall: agent.compactionsWithOpenCall.length,
        secondCaller: second.state.outcomes,
        thresholdWaits: agent.stats.waitedOutcomes,
        summariserRequests,
        rejections: rejections.length,
        ...agent.stats,
      };
      console.log(`[agent-loop] ${JSON.stringify(report)}`);

      // 0 rejected requests: the first rejection says what was wrong with the head.
      const first = rejections[0];
      expect(rejected?.message, 'the agent stopped on a rejected request').toBeUndefined();
      expect(rejections.length, first ? `first rejection (${first.caller}): ${first.error?.message} [param ${first.error?.param}]` : '').toBe(0);
      expect(agent.stats.turns).toBe(TURNS);

      // The latest user request survived every compaction; open calls stayed with their results.
      expect(agent.violations).toEqual([]);
      expect(second.state.violations).toEqual([]);
      expect(second.state.errors).toEqual([]);
      // The agent checked the head on every turn (and again after each compaction it waited for).
      expect(agent.stats.userRequestChecks).toBeGreaterThanOrEqual(TURNS);

      // Every message the agent appended is in the head verbatim or in a summarised range.
      const head = await stack.client.transcript(sessionId);
      const inHead = new Set(head.messages.map(canonical));
      // summarisedFromSeq / summarisedToSeq: inclusive lineage sequence numbers.
      const ranges = rows
        .filter((r) => r.outcome === 'compacted' && r.summarisedFromSeq !== null && r.summarisedToSeq !== null)
        .map((r) => [r.summarisedFromSeq!, r.summarisedToSeq!] as const);
      const unaccounted = agent.ledger.filter(
        (e) => !inHead.has(canonical(e.message)) && !ranges.some(([from, to]) => from <= e.lineageSeq && e.lineageSeq <= to),
      );
      expect(
        unaccounted.length,
        `${unaccounted.length} of ${agent.ledger.length} appended messages are neither in the head nor in a summarised range; first: ${unaccounted
          .slice(0, 3)
          .map((e) => `#${e.lineageSeq} ${e.message.role} (turn ${e.turn})`)
          .join(', ')}`,
      ).toBe(0);

      // The planner built valid heads itself: no gate but the size gate ever had to refuse one
      // (the gates are the safety net, not the mechanism).
      expect(rows.filter((r) => r.gate !== null && r.gate !== 'smaller').map((r) => `${r.gate}: ${r.reason}`)).toEqual([]);

      // The run was the one the proof needs.
      expect(generations.size).toBeGreaterThanOrEqual(MIN_COMPACTIONS);
      expect(rows.filter((r) => r.outcome === 'compacted').length).toBeGreaterThanOrEqual(generations.size);
      expect(agent.compactionsWithOpenCall.length).toBeGreaterThanOrEqual(MIN_COMPACTIONS_WITH_OPEN_CALL);
      // Every compaction of the summary rung paid the summariser at least once (the masking rung pays nothing).
      expect(summariserRequests).toBeGreaterThanOrEqual(rows.filter((r) => r.outcome === 'compacted' && r.rung !== 'masking').length);
      expect(agent.stats.parallelCallMessages).toBeGreaterThan(0);
      expect(agent.stats.splitResults).toBeGreaterThan(0);
      expect(agent.stats.largeOutputs).toBeGreaterThan(0);
      expect(agent.stats.answers).toBeGreaterThan(0);
      expect(agent.stats.compactionRequestErrors).toEqual([]);
    },
  );
});
