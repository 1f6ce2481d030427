/**
 * lineageChat (src/adapters/ai-sdk) on the real stack: examples/ai-sdk-agent.ts, a coding agent
 * whose turns are `generateText` tool loops over an `ai-sdk` lineage, run through the REAL
 * `@ai-sdk/openai` (Responses API) and `@ai-sdk/anthropic` models pointed at the strict fakes
 * of those APIs (test/support/strict-responses.ts, strict-anthropic.ts), which answer from a
 * seeded script with parallel and single tool calls, and 400 wherever the provider would. The
 * tools answer JSON. The lineage compacts at a low threshold, and a tool forces a compaction
 * from inside the loop now and then; a second process (the example run as a script) continues
 * the conversation.
 *
 * Proven against the test's own ledger (each request body its fetch sent, with the status and
 * the turn it belonged to; the summaries tagged by the summariser's call number):
 * - the strict fake received every request and rejected none, and does reject a broken one;
 * - every user input (both processes) is in the lineage, live or archived by a compaction;
 * - the audit finds no fork, orphan, lost or duplicated message;
 * - a compaction forced from a tool in the middle of a turn's loop is in the very next request
 *   of that turn (prepareStep handed it the compacted head: without the replacement, the SDK
 *   would send the messages it accumulated, with no summary).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel, ToolSet } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectTools, runAiSdkAgent } from '../../examples/ai-sdk-agent';
import { PROJECT_ROOT } from '../../src/config';
import { auditRows, sessionMessages } from '../../src/db/session-store';
import { startStrictAnthropic, type StrictAnthropicProvider, validateAnthropicRequest } from '../support/strict-anthropic';
import { startStrictResponses, type StrictResponsesProvider, validateResponsesRequest } from '../support/strict-responses';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

const MODEL = 'agent-model';
/** Estimated tokens: low, so that the service compacts every few steps, some in the middle of a loop. */
const COMPACT_AT = 2_500;
const TURNS = 16;
const SECOND_TURNS = 3;
/** A tool forces a compaction on these turns, from inside the loop. */
const FORCE_ON = (turn: number) => turn % 3 === 0;
const FILES: Record<string, string> = Object.fromEntries(
  Array.from({ length: 40 }, (_, n) => [
    `src/module-${n}.ts`,
    `// module ${n}\n${Array.from({ length: 12 }, (_, k) => `export const m${n}_${k} = ${n * k};`).join('\n')}\n`,
  ]),
);
const SUMMARY_TAG = /\[summary call (\d+)\]/g;

/** One request the agent's fetch sent: its body as sent, the answer's status, the turn it belongs to. */
interface Sent {
  body: unknown;
  status?: number;
  turn: number;
}

/** The summaries (by the summariser's call number) a request carries. */
const summariesIn = (body: unknown) => new Set([...JSON.stringify(body).matchAll(SUMMARY_TAG)].map((m) => m[1]));

let responses: StrictResponsesProvider;
let anthropic: StrictAnthropicProvider;

beforeAll(async () => {
  responses = await startStrictResponses({ seed: 36, largeArgumentsChance: 0 });
  anthropic = await startStrictAnthropic({ seed: 36, largeArgumentsChance: 0 });
});

afterAll(async () => {
  await responses?.close();
  await anthropic?.close();
});

interface Run {
  name: 'openai' | 'anthropic';
  model(fetch: typeof globalThis.fetch): LanguageModel;
  fake(): StrictResponsesProvider | StrictAnthropicProvider;
  /** The environment the example reads to reach the same fake. */
  env(): Record<string, string>;
  /** A request the provider refuses (a tool result answering no call). */
  broken(): unknown;
}

const RUNS: Run[] = [
  {
    name: 'openai',
    model: (fetch) => createOpenAI({ apiKey: 'test-key', baseURL: responses.url, fetch })(MODEL),
    fake: () => responses,
    env: () => ({ AI_SDK_PROVIDER: 'openai', OPENAI_BASE_URL: responses.url, OPENAI_API_KEY: 'test-key' }),
    broken: () => validateResponsesRequest({ model: MODEL, input: [{ type: 'function_call_output', call_id: 'call_9', output: '{}' }] }),
  },
  {
    name: 'anthropic',
    model: (fetch) => createAnthropic({ apiKey: 'test-key', baseURL: `${anthropic.url}/v1`, fetch })(MODEL),
    fake: () => anthropic,
    env: () => ({ AI_SDK_PROVIDER: 'anthropic', ANTHROPIC_BASE_URL: `${anthropic.url}/v1`, ANTHROPIC_API_KEY: 'test-key' }),
    broken: () =>
      validateAnthropicRequest({
        model: MODEL,
        max_tokens: 100,
        messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '{}' }] }],
      }),
  },
];

describe('lineageChat with the AI SDK on the real stack', () => {
  for (const run of RUNS) {
    it(`${run.name}: many tool-loop turns, compactions mid-loop, a second process: no request rejected, every input kept, no fork`, async () => {
      stack().llm.setDefault({ tagCalls: true, delayMs: 50 });
      const id = uniqueId(`ai-sdk-${run.name}`);
      const sent: Sent[] = [];
      let turn = 0;
      const recordingFetch: typeof globalThis.fetch = async (input, init) => {
        const record: Sent = { body: JSON.parse(String(init?.body)) as unknown, turn };
        sent.push(record);
        const response = await globalThis.fetch(input, init);
        record.status = response.status;
        return response;
      };

      // A tool that forces a compaction (once on the turns FORCE_ON picks) before it answers,
      // while the model's loop waits for its result: the compaction lands mid-loop.
      let forceNow = false;
      const forced: { outcome: string; afterRequest: number; turn: number; summaries: Set<string> }[] = [];
      const compactNow = async () => {
        if (!forceNow) return;
        forceNow = false;
        const afterRequest = sent.length;
        // Against the head; a threshold compaction that committed first makes it stale: once more against the new head.
        for (let attempt = 0; attempt < 3; attempt++) {
          const result = await stack().client.compact((await stack().client.lineage(id)).headSessionId, { force: true });
          if (result.outcome !== 'stale') {
            forced.push({ outcome: `${result.outcome} ${result.reason ?? ''}`, afterRequest, turn, summaries: summariesIn(result.messages) });
            return;
          }
        }
      };
      const base = projectTools(FILES);
      const compactingFirst = <T extends { execute: (...args: never[]) => unknown }>(t: T): T => ({
        ...t,
        execute: async (...args: Parameters<T['execute']>) => {
          await compactNow();
          return t.execute(...args);
        },
      });
      const tools: ToolSet = { ...base, run_tests: compactingFirst(base.run_tests), read_file: compactingFirst(base.read_file) };

      const model = run.model(recordingFetch);
      const inputs: string[] = [];
      const started = Date.now();
      let headChanges = 0;
      for (turn = 1; turn <= TURNS; turn++) {
        const request = `${run.name} request ${turn}: look into module ${turn * 3} and run its tests`;
        inputs.push(request);
        forceNow = FORCE_ON(turn);
        const [report] = await runAiSdkAgent({
          sessions: stack().client,
          model,
          sessionId: id,
          requests: [request],
          tools,
          compactAt: COMPACT_AT,
          maxSteps: 12,
        });
        headChanges += report.headChanges;
      }
      const firstRequests = sent.length;

      // A second process, its own client, continues the conversation (the example run as a script).
      const secondInputs = Array.from({ length: SECOND_TURNS }, (_, k) => `${run.name} second process request ${k + 1}: what did module ${k + 1} export?`);
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'examples/ai-sdk-agent.ts'), id], {
        cwd: PROJECT_ROOT,
        env: {
          ...process.env,
          ...stack().env,
          ...run.env(),
          AI_SDK_MODEL: MODEL,
          AGENT_REQUESTS: JSON.stringify(secondInputs),
          COMPACT_AT_TOKENS: String(COMPACT_AT),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (b: Buffer) => (output += b.toString()));
      child.stderr.on('data', (b: Buffer) => (output += b.toString()));
      expect(await new Promise<number | null>((resolve) => child.once('exit', resolve)), output).toBe(0);
      const second = JSON.parse(output.trim().split('\n').at(-1)!) as { turns: { request: string; steps: number; headChanges: number }[] };
      expect(second.turns.map((t) => t.request)).toEqual(secondInputs);
      inputs.push(...secondInputs);

      // The provider saw every request, ours and the second process's, and accepted each.
      const fake = run.fake();
      const agentRequests = fake.requests.filter((r) => r.caller === 'agent' && r.model === MODEL);
      const rejected = fake.rejections.filter((r) => r.caller === 'agent');
      expect(rejected.map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
      expect(sent.every((s) => s.status === 200)).toBe(true);
      expect(agentRequests.length).toBe(firstRequests + second.turns.reduce((n, t) => n + t.steps, 0));
      // ... and does refuse a broken request, so 0 could have been otherwise.
      expect(run.broken()).not.toBeNull();

      // A compaction forced from a tool is in the very next request of the same turn: the
      // prepareStep handed the step the compacted head.
      const compactedForced = forced.filter((f) => f.outcome.startsWith('compacted'));
      expect(compactedForced.length, forced.map((f) => f.outcome).join()).toBeGreaterThanOrEqual(1);
      const handed = compactedForced.filter((f) => {
        const [before, next] = [sent[f.afterRequest - 1], sent[f.afterRequest]];
        if (!next || next.turn !== f.turn) return false;
        const newSummaries = [...f.summaries].filter((s) => !summariesIn(before.body).has(s));
        return newSummaries.length > 0 && newSummaries.every((s) => summariesIn(next.body).has(s));
      });
      expect(handed.length, JSON.stringify(forced.map((f) => ({ ...f, summaries: [...f.summaries] })))).toBeGreaterThanOrEqual(1);
      // Any compaction (forced or at the threshold) that a turn's next request carried and its previous did not.
      const midLoop = sent.filter(
        (s, i) => i > 0 && sent[i - 1].turn === s.turn && [...summariesIn(s.body)].some((t) => !summariesIn(sent[i - 1].body).has(t)),
      );
      expect(midLoop.length).toBeGreaterThanOrEqual(handed.length);
      expect(headChanges).toBeGreaterThanOrEqual(handed.length);
      const compactions = (await auditRows(stack().db.db, id)).filter((r) => r.outcome === 'compacted' && r.startedAt.getTime() > started);
      expect(compactions.length).toBeGreaterThanOrEqual(compactedForced.length);

      // Every user input is in the lineage (live or archived by a compaction), verbatim.
      const lineage = await stack().client.lineage(id);
      const stored = (await Promise.all(lineage.sessions.map((s) => sessionMessages(stack().db.db, s.sessionId, { includeArchived: true })))).flat();
      const said = new Set(
        stored
          .map((m) => m.body)
          .filter((b) => b.role === 'user' && typeof b.content === 'string')
          .map((b) => b.content),
      );
      expect(inputs.filter((input) => !said.has(input))).toEqual([]);
      // The loops had parallel tool calls, and the tools' JSON outputs went back as such.
      const parts = stored.flatMap((m) => (Array.isArray(m.body.content) ? (m.body.content as { type?: string; output?: { type?: string } }[]) : []));
      expect(
        stored.some(
          (m) =>
            m.body.role === 'assistant' &&
            Array.isArray(m.body.content) &&
            m.body.content.filter((p) => (p as { type?: string }).type === 'tool-call').length >= 2,
        ),
      ).toBe(true);
      expect(parts.filter((p) => p.type === 'tool-result').every((p) => p.output?.type === 'json')).toBe(true);

      const audit = await stack().client.operator.auditLineage(id);
      expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0]);
      console.log(
        `ai-sdk-agent ${run.name}: ${TURNS}+${SECOND_TURNS} turns (two processes), ${compactions.length} compactions (${midLoop.length} mid-loop, ` +
          `${handed.length} forced from a tool and sent by the next step), ${agentRequests.length} requests, ${rejected.length} rejected, ${audit.forks} forks`,
      );
    });
  }
});
