/**
 * An agent on Temporal whose conversation is a lineage (docs/agents-on-temporal.md) survives
 * workers SIGKILLed under its activities, after their append landed, and its history replays
 * (issue 38 §2). The workers are processes of their own (test/support/temporal-agent-worker.ts:
 * createAgentActivities with the real `@ai-sdk/openai` Responses model against the strict
 * Responses fake), running test/support/temporal-agent-workflows.ts's `killableAgent`, whose
 * activities time out after 5 s:
 *
 * - worker 1 holds its 3rd model call once the call's append is in the lineage (read back
 *   before the kill: the fault landed) and is SIGKILLed; worker 2 retries the call, then holds
 *   its 2nd tool call the same way and is SIGKILLed; worker 3 retries that and finishes;
 * - the test's ledger, from the fake (what the model returned) and the workers (what each
 *   append key stored, what each tool run produced), against the lineage: every model reply is
 *   stored once, every tool ran once and its output is stored once, nothing else is there, the
 *   workflow answered what the model did, and the service's audit finds no problem;
 * - the finished workflow's history replays with the same workflow code without
 *   nondeterminism, runs no activity and leaves the lineage as it was; the same history
 *   replayed as a workflow that emits other commands is refused, so the replay does check.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, isJsonObject } from '../../src/compaction/json';
import { PROJECT_ROOT } from '../../src/config';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

const MODEL = 'agent-model-kill';
const REQUESTS = [
  'The build of services/billing fails since yesterday. Find the change that broke it and fix it.',
  'Now run the billing tests again and tell me which ones are still red.',
  'Summarise what you changed, file by file, for the pull request.',
];
/** How long a worker may take to reach an event the test waits for (it usually takes a few seconds). */
const EVENT_WAIT_MS = 60_000;

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;

/** A line a worker printed: `appended <activity> <activity id> <attempt> <key> <n>`, `ran <callId> <sha256>`, `holding <activity> <key>`. */
interface WorkerLine {
  worker: number;
  words: string[];
}

interface AgentWorker {
  child: ChildProcess;
  /** Resolves with the first line (of this worker) starting with `word`, once printed. */
  next(word: string): Promise<string[]>;
  exited: Promise<NodeJS.Signals | number | null>;
}

let responses: StrictResponsesProvider;
let workflowBundle: { code: string };
let scratch: string;
const lines: WorkerLine[] = [];
const children = new Set<ChildProcess>();

beforeAll(async () => {
  responses = await startStrictResponses({ seed: 3801, largeArgumentsChance: 0 });
  workflowBundle = await bundleWorkflowCode({ workflowsPath: path.join(PROJECT_ROOT, 'test/support/temporal-agent-workflows.ts'), logger: quiet });
  scratch = await mkdtemp(path.join(os.tmpdir(), 'temporal-agent-kill-'));
  await writeFile(path.join(scratch, 'workflows.js'), workflowBundle.code);
}, 120_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await responses?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Starts worker `n` (a process) on `taskQueue`; `hold` makes it hold the n-th first attempt of an activity after its append. */
async function startAgentWorker(n: number, taskQueue: string, hold = ''): Promise<AgentWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/support/temporal-agent-worker.ts')], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      ...stack().env,
      AGENT_TASK_QUEUE: taskQueue,
      AGENT_WORKFLOW_BUNDLE: path.join(scratch, 'workflows.js'),
      AGENT_RESPONSES_URL: responses.url,
      AGENT_MODEL: MODEL,
      AGENT_HOLD: hold,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  let partial = '';
  const waiters: { word: string; resolve: (words: string[]) => void }[] = [];
  const seen: string[][] = [];
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      const words = line.trim().split(' ');
      seen.push(words);
      if (['appended', 'ran', 'holding'].includes(words[0])) lines.push({ worker: n, words });
      for (const w of waiters.filter((w) => w.word === words[0])) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(words);
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const next = (word: string) => {
    const already = seen.find((w) => w[0] === word);
    if (already) return Promise.resolve(already);
    return new Promise<string[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${n}: no '${word}' within ${EVENT_WAIT_MS} ms:\n${output}`)), EVENT_WAIT_MS);
      void exited.then((how) => reject(new Error(`worker ${n} exited (${how}) before '${word}':\n${output}`)));
      waiters.push({
        word,
        resolve: (words) => {
          clearTimeout(timer);
          resolve(words);
        },
      });
    });
  };
  await next('ready');
  return { child, next, exited };
}

/** SIGKILLs a worker under the activity it holds, once that activity's append is in the lineage. */
async function killWhileHolding(worker: AgentWorker, lineageId: string) {
  const [, activity, key] = await worker.next('holding');
  // The fault landed: the activity's append is in the lineage, and the activity has not returned.
  const stored = await stack().client.appendedUnder(lineageId, key);
  expect(stored, `${activity}'s append is in the lineage before the kill`).not.toBeNull();
  worker.child.kill('SIGKILL');
  expect(await worker.exited).toBe('SIGKILL');
  return { activity, key };
}

/** Messages each append key stored in the lineage (copies made by compactions left out). */
async function storedByKey(lineageId: string): Promise<Map<string, number>> {
  const { rows } = await stack().db.db.execute(sql`
    select m.append_key as key, count(*)::int as n from messages m join sessions s on s.id = m.session_id
    where s.lineage_id = ${lineageId} and m.append_key is not null and m.written_by_compaction is null group by 1`);
  return new Map(rows.map((r) => [String((r as { key: string }).key), Number((r as { n: number }).n)]));
}

const sorted = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The parts of the stored messages of `type` (tool-call, tool-result, text). */
const partsOf = (messages: unknown[], type: string) =>
  messages.flatMap((m) => (isJsonObject(m) && Array.isArray(m.content) ? m.content : [])).filter((p) => isJsonObject(p) && p.type === type) as Record<
    string,
    unknown
  >[];

/** Started events of the workflow's activities: activity id → the attempt that completed it. */
async function completedAttempts(workflowId: string): Promise<{ history: temporal.api.history.v1.IHistory; attempts: Map<string, number> }> {
  const history = await stack().temporal.workflow.getHandle(workflowId).fetchHistory();
  const idOf = new Map<string, string>();
  const attempts = new Map<string, number>();
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) idOf.set(String(event.eventId), scheduled.activityId!);
    const started = event.activityTaskStartedEventAttributes;
    if (started) attempts.set(idOf.get(String(started.scheduledEventId))!, started.attempt!);
  }
  return { history, attempts };
}

describe('agents on Temporal: workers SIGKILLed mid-activity, and the history replayed', () => {
  it('two workers killed after their append (a model call, a tool call): retried on the next worker, nothing duplicated or lost; the history replays and changes nothing', async () => {
    const lineageId = uniqueId('temporal-kill');
    await stack().client.createSession({ sessionId: lineageId, dialect: 'ai-sdk', compactAt: 6_000 });
    const taskQueue = uniqueId('temporal-kill');
    const started = Date.now();

    const first = await startAgentWorker(1, taskQueue, 'model:3');
    const handle = await stack().temporal.workflow.start('killableAgent', { taskQueue, workflowId: `agent-${lineageId}`, args: [lineageId, REQUESTS] });
    const modelKill = await killWhileHolding(first, lineageId);
    const second = await startAgentWorker(2, taskQueue, 'tool:2');
    const toolKill = await killWhileHolding(second, lineageId);
    const third = await startAgentWorker(3, taskQueue);
    const answers = (await handle.result()) as string[];
    third.child.kill('SIGKILL');
    const seconds = (Date.now() - started) / 1000;
    expect([modelKill.activity, toolKill.activity]).toEqual(['lineageAgentModelCall', 'lineageAgentToolCall']);

    // Each killed attempt was retried on the next worker: the attempt that completed it is the 2nd.
    const appended = lines
      .filter((l) => l.words[0] === 'appended')
      .map(({ worker, words: [, activity, activityId, attempt, key, n] }) => ({ worker, activity, activityId, attempt: Number(attempt), key, n: Number(n) }));
    const activityOf = (key: string) => appended.find((a) => a.key === key)!.activityId;
    const { history, attempts } = await completedAttempts(handle.workflowId);
    expect([attempts.get(activityOf(modelKill.key)), attempts.get(activityOf(toolKill.key))]).toEqual([2, 2]);
    expect([...attempts.values()].filter((a) => a > 1).length, 'no other activity needed a retry').toBe(2);

    // The ledger against the lineage. Every append key stored what its one append did, and nothing else is there.
    expect(responses.rejections.map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    expect(new Set(appended.map((a) => a.key)).size, 'no key appended twice').toBe(appended.length);
    expect(appended.every((a) => a.attempt === 1)).toBe(true);
    expect(sorted(await storedByKey(lineageId))).toEqual(sorted(new Map(appended.map((a) => [a.key, a.n]))));
    const batches = await Promise.all(
      appended.map(async (a) => ({ ...a, messages: ((await stack().client.appendedUnder(lineageId, a.key)) ?? []) as unknown[] })),
    );
    // What the model returned: each reply stored once, in order, by the model activity that asked for it.
    const replies = responses.agentReplies;
    const modelBatches = batches.filter((b) => b.activity === 'lineageAgentModelCall');
    expect(modelBatches.length, 'one stored batch per model reply').toBe(replies.length);
    const replyCalls = replies.map((r) => r.output.flatMap((item) => (item.type === 'function_call' ? [item.call_id] : [])));
    expect(modelBatches.map((b) => partsOf(b.messages, 'tool-call').map((p) => p.toolCallId))).toEqual(replyCalls);
    const replyTexts = replies.flatMap((r) =>
      r.output.flatMap((item) => (item.type === 'message' ? [item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('')] : [])),
    );
    expect(answers).toEqual(replyTexts);
    expect(answers.length).toBe(REQUESTS.length);
    // What the tools produced: each call ran once, and its output is stored once, as it came.
    const ran = lines.filter((l) => l.words[0] === 'ran').map((l) => ({ callId: l.words[1], hash: l.words[2] }));
    expect(ran.map((r) => r.callId).sort()).toEqual(replyCalls.flat().sort());
    const results = batches.filter((b) => b.activity === 'lineageAgentToolCall').flatMap((b) => partsOf(b.messages, 'tool-result'));
    expect(results.map((p) => p.toolCallId).sort()).toEqual(replyCalls.flat().sort());
    for (const result of results) {
      expect(sha256(canonicalJson((result.output as { value: unknown }).value)), `the output of ${String(result.toolCallId)}`).toBe(
        ran.find((r) => r.callId === result.toolCallId)!.hash,
      );
    }
    // The user's requests, once each.
    const said = batches.filter((b) => b.activity === 'lineageAgentInput').flatMap((b) => b.messages.map((m) => (m as { content: unknown }).content));
    expect(said).toEqual(REQUESTS);
    const audit = await stack().client.operator.auditLineage(lineageId);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.duplicatedByKey, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0, 0]);

    // The finished workflow's history replays with the same code: no nondeterminism, no activity run, the lineage as it was.
    const before = { byKey: sorted(await storedByKey(lineageId)), head: await stack().client.transcript(lineageId), requests: responses.requests.length };
    await Worker.runReplayHistory({ workflowBundle, replayName: 'temporal-agent-kill' }, history);
    expect({ byKey: sorted(await storedByKey(lineageId)), head: await stack().client.transcript(lineageId), requests: responses.requests.length }).toEqual(
      before,
    );
    // ... and the replay does check: a step ran tools in parallel, and as the workflow that runs them one by one, the same history is refused.
    expect(replyCalls.some((calls) => calls.length > 1)).toBe(true);
    const other = temporal.api.history.v1.History.decode(temporal.api.history.v1.History.encode(history).finish());
    other.events[0].workflowExecutionStartedEventAttributes!.workflowType!.name = 'killableAgentSequential';
    await expect(Worker.runReplayHistory({ workflowBundle, replayName: 'temporal-agent-kill-sequential' }, other)).rejects.toThrow(/nondetermin/i);

    console.log(
      `temporal-agent-kill (${seconds.toFixed(1)} s to the answer): ${replies.length} model calls, ${ran.length} tool calls, ${appended.length} keyed appends; ` +
        `killed under ${modelKill.activity} and ${toolKill.activity} after their append, both completed by attempt 2; 0 duplicated, 0 lost, 0 rejected`,
    );
  }, 120_000);
});
