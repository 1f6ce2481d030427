/**
 * `npm run bench`: measures the service on the real stack (embedded Postgres, the Temporal dev
 * server, worker processes, the local OpenAI-compatible server answering at once) and, in the
 * same run, the floors it cannot beat, the reference design (a lock row with a TTL lease, no
 * workflow; bench/reference-design.ts) and a naive Temporal design (transcript in workflow
 * state) on a fresh server of its own. Prints a markdown table and writes JSON to
 * bench/results/. Never part of `npm test`.
 *
 *   npm run bench                          full sizes (about 15 minutes on 2 cores)
 *   npm run bench -- --quick               small sizes, to check the benchmark itself (< 2 min)
 *   npm run bench -- --sections=cost,wake  some sections (latency always runs first); see SECTIONS
 *   npm run bench -- --render=<file>       the tables of a results file, without running
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { Pool } from 'pg';
import { createLlmSummariser } from '../src/activities/summariser';
import { SessionsClient } from '../src/client';
import { isTransientConnectionError } from '../src/client/rpc-errors';
import type { ChatMessage } from '../src/compaction/messages';
import { PROJECT_ROOT } from '../src/config';
import { openDatabase, runMigrations } from '../src/db/database';
import { causeChain } from '../src/errors';
import { lineageWorkflowId } from '../src/workflows/contract';
import { REMEMBERED_ANSWERS } from '../src/workflows/lineage-queue';
import { measureAgentsOnTemporal } from './temporal-agents';
import { measureTokenCounting } from './token-counting';
import { runFaults } from './faults';
import { measureRungs } from './rungs';
import { FLOOR_TABLE_SQL, insertFloorRow } from './naive-activities';
import { claudePeer, langGraphPeer, openaiAgentsPeer, oursPeer } from './peers';
import { createOrderedFloorSessions, ORDERED_FLOOR_TABLES_SQL, orderedFloorAppend } from './ordered-append-floor';
import { coresUsed, cpuSnapshot } from './proc-cpu';
import { createReferenceDesign } from './reference-design';
import { seedLineage, wakeBuildPlan } from './seed-lineage';
import { floorBParts, type CallTiming, type HistoryEvent, oursParts, PARTS } from './split';
import { promCounter, promLines, spawnBenchProcess, startBenchStack, stopProcess } from './stack';
import { type LlmTraceEntry, type SqlTraceEntry, traceSql, wallNow } from './trace';
import { naiveAppendSignal, naiveCompactUpdate, noopUpdate, sameShapeUpdate } from './workflows';

const quick = process.argv.includes('--quick');
/** `--sections a,b` or `--sections=a,b`: the sections to run (undefined: all, or the quick ones with --quick). */
const chosen = (() => {
  const at = process.argv.findIndex((a) => a === '--sections' || a.startsWith('--sections='));
  if (at < 0) return undefined;
  const value = process.argv[at].startsWith('--sections=') ? process.argv[at].slice('--sections='.length) : process.argv[at + 1];
  return (value ?? '').split(',').filter(Boolean);
})();
const SIZES = quick
  ? {
      rounds: 25,
      costCompactions: 3,
      streamSeconds: 3,
      throughputSessions: [10],
      callers: 10,
      appends: 300,
      idle: 300,
      ages: [1, 20],
      period: 10,
      wakeSamples: 1,
      bigTranscript: 2000,
      eagerRounds: 20,
      commitSamples: 8,
      contendedCommits: 8,
      peerConcurrency: [1, 10, 100],
      peerConversations: 10,
      peerTurns: 5,
      workerCounts: [1, 2],
      workerSessions: 20,
    }
  : {
      rounds: 150,
      costCompactions: 10,
      streamSeconds: 30,
      throughputSessions: [10, 100],
      callers: 10,
      appends: 2000,
      idle: 10_000,
      ages: [1, 1000],
      period: 10,
      wakeSamples: 5,
      bigTranscript: 10_000,
      eagerRounds: 100,
      commitSamples: 30,
      contendedCommits: 30,
      peerConcurrency: [1, 10, 100],
      peerConversations: 40,
      peerTurns: 10,
      workerCounts: [1, 2, 4],
      workerSessions: 100,
    };
if (process.env.BENCH_AGES) SIZES.ages = process.env.BENCH_AGES.split(',').map(Number);

// ---------------------------------------------------------------------------------------
// Small helpers

const now = () => performance.now();
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}
const round = (x: number, digits = 2) => Number(x.toFixed(digits));
function summary(values: number[]) {
  return { n: values.length, p50: round(percentile(values, 50)), p95: round(percentile(values, 95)), p99: round(percentile(values, 99)) };
}
async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const start = now();
  const result = await fn();
  return [now() - start, result];
}
async function inBatches<T>(items: T[], concurrency: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await fn(items[index], index);
      }
    }),
  );
}
function transcript(messages: number, tag: string): ChatMessage[] {
  return Array.from({ length: messages }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `${tag} message ${i}: ${'the agent edits files, runs tests and reports back. '.repeat(2)}`,
  }));
}
function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}
const log = (line: string) => console.error(`[bench] ${new Date().toISOString().slice(11, 19)} ${line}`);
const eventCounts = (events: Array<Record<string, unknown>>) => {
  const counts: Record<string, number> = {};
  for (const e of events) {
    const kind = Object.keys(e)
      .find((k) => k.endsWith('EventAttributes'))!
      .replace(/EventAttributes$/, '');
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
};
const EAGER_METRIC = 'activity_eager_execution';

// ---------------------------------------------------------------------------------------

/** The shared stack every section but eager and naive runs on, and what they measure with. */
async function openBench() {
  const stack = await startBenchStack('session-bench');
  const { env, config, llm } = stack;
  llm.setDefault({ text: 'Goal: continue. Completed: the summarised work.' });
  const database = openDatabase(config.databaseUrl, { max: 20 });
  await runMigrations(database);
  const pool = new Pool({ connectionString: config.databaseUrl, max: 20 });
  await pool.query(FLOOR_TABLE_SQL);
  const reference = createReferenceDesign(pool, createLlmSummariser(config.llm, { stallTimeoutMs: 60_000, requestTimeoutMs: 60_000 }), {
    leaseTtlMs: 60_000,
  });
  await reference.migrate();

  // Ours and the floors' worker: each its own process, the same layout.
  let workerProcess: ChildProcess | undefined;
  const startWorker = async (extraEnv: Record<string, string> = {}) => {
    workerProcess = await spawnBenchProcess('session-worker.ts', { ...env, ...extraEnv }, { ready: 'worker ready', echo: Boolean(process.env.BENCH_TRACE) });
    return workerProcess;
  };
  const stopWorker = async () => {
    await stopProcess(workerProcess);
    workerProcess = undefined;
  };
  await startWorker();
  const auxProcess = await spawnBenchProcess('aux-worker.ts', { ...env, BENCH_AUX_QUEUE: 'bench-aux' }, { ready: 'aux worker ready' });

  const connection = await Connection.connect({ address: config.temporal.address });
  const temporal = new Client({ connection });
  const sessions = await SessionsClient.connect({ config, database });
  const results: Record<string, any> = {
    quick,
    sizes: SIZES,
    machine: {
      cpus: os.cpus().length,
      cpu: os.cpus()[0]?.model,
      memoryGiB: round(os.totalmem() / 2 ** 30, 1),
      node: process.version,
      loadAverage1mAtStart: round(os.loadavg()[0]),
    },
  };
  const historyOf = async (workflowId: string, client = temporal) => {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    return { events: history.events?.length ?? 0, bytes: historyToJSON(history).length, counts: eventCounts(history.events as never) };
  };
  const newSession = async (id: string, messages: number, client = sessions) => {
    await client.createSession({ sessionId: id });
    for (let i = 0; i < messages; i += 1000) await client.append(id, transcript(Math.min(1000, messages - i), id));
  };
  const newRefSession = async (id: string, messages: number) => {
    await reference.createSession(id);
    await reference.append(id, transcript(messages, id));
  };

  return {
    stack,
    env,
    config,
    llm,
    database,
    pool,
    reference,
    temporal,
    sessions,
    results,
    historyOf,
    newSession,
    newRefSession,
    startWorker,
    stopWorker,
    /** The pid of ours' worker process (the one startWorker started). */
    workerPid: () => workerProcess?.pid,
    auxPid: auxProcess.pid,
    /** The lineages of the latency section, compacted once each (the wake section's warm-up reads one). */
    latencyIds: [] as string[],
    close: async () => {
      await sessions.close();
      await stopWorker();
      await stopProcess(auxProcess);
      await connection.close();
      await pool.end();
      await database.close();
      await stack.stop();
    },
  };
}
type Bench = Awaited<ReturnType<typeof openBench>>;

/**
 * One entry per section, in the order they run. `latency` always runs (it starts the workflows
 * and measures the floors the others are compared with); `shared` sections run on one stack,
 * the others each on a fresh server of their own, after it stops. --quick leaves out the
 * sections marked slow and runs one fault scenario, to stay under 2 minutes.
 */
const SECTIONS: Array<{ name: string; measures: string; shared: boolean; slow?: boolean; run: (b: Bench) => Promise<void> }> = [
  {
    name: 'latency',
    measures: 'compact() against floors (a) bare Update, (b) same shape, (c) INSERT transactions, and the reference design',
    shared: true,
    run: measureLatency,
  },
  {
    name: 'split',
    measures: "ours against floor (b), per compaction, cut into its parts (history event times, the worker's SQL and LLM traces, the client's statements)",
    shared: true,
    run: measureSplit,
  },
  { name: 'commit', measures: "the compaction commit's statements and time, from a SQL trace of the worker", shared: true, run: measureCommit },
  {
    name: 'contention',
    measures: 'commits under 25 concurrent appenders to the lineage: the optimistic path first (before) and the adaptive path (after)',
    shared: true,
    run: measureContention,
  },
  { name: 'cost', measures: 'per compaction: history events and bytes, billable actions, LLM tokens', shared: true, run: measureCost },
  { name: 'generations', measures: "summary prompt tokens over a lineage's life, and what a prompt cache serves", shared: true, run: measureGenerations },
  { name: 'throughput', measures: 'answers per second: ours, floor (b) and the reference design, at each load', shared: true, run: measureThroughput },
  {
    name: 'workers',
    measures: 'throughput of ours at 100 sessions x 10 callers with 1, 2 and 4 worker processes on one task queue, and the CPU each process used',
    shared: true,
    run: measureWorkers,
  },
  {
    name: 'appends',
    measures: 'appends per second: floor (c), ours and the reference design, alone and during compactions',
    shared: true,
    run: measureAppends,
  },
  {
    name: 'peers',
    measures: "an agent's per-turn work through ours and the frameworks' Postgres session stores, at 1, 10 and 100 conversations",
    shared: true,
    run: measurePeers,
  },
  { name: 'faults', measures: 'the fault scenarios, both designs', shared: true, run: measureFaults },
  { name: 'wake', measures: 'the first request to a lineage evicted from the worker cache', shared: true, run: measureWake },
  {
    name: 'agents',
    measures: 'an agent on Temporal: history bytes per model call with its conversation in a lineage and the plain way, and its model input per call',
    shared: true,
    run: measureAgents,
  },
  { name: 'memory', measures: 'worker memory per cached idle lineage, reuseV8Context on and off', shared: true, slow: true, run: measureMemory },
  {
    name: 'rungs',
    measures: 'per rung, over every compaction the sections before it ran: compactions, tokens shed, tokens paid, cached share',
    shared: true,
    run: async (b) => void (b.results.rungs = await measureRungs(b.database.db)),
  },
  {
    name: 'eager',
    measures: 'eager activity dispatch, on a fresh server with it enabled',
    shared: false,
    slow: true,
    run: async (b) => void (b.results.eager = await measureEager(b.llm)),
  },
  {
    name: 'naive',
    measures: 'the naive design (transcript in workflow state), in its own worker on a fresh server',
    shared: false,
    run: async (b) => void (b.results.naive = await measureNaive(b.results)),
  },
];
const wants = (section: (typeof SECTIONS)[number]) => section.name === 'latency' || (chosen ? chosen.includes(section.name) : !(quick && section.slow));

async function main(): Promise<void> {
  const unknown = (chosen ?? []).filter((name) => !SECTIONS.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(', ')}; the sections are ${SECTIONS.map((s) => s.name).join(', ')}`);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const started = now();
  const bench = await openBench();
  const { results } = bench;
  // A section that fails ends the run, but what the sections before it measured is still written
  // (with `failedSection` and its error), so a long run is not lost to its last section.
  const failing = async (section: (typeof SECTIONS)[number]) => {
    try {
      await section.run(bench);
    } catch (error) {
      results.failedSection = { name: section.name, error: String((error as Error)?.stack ?? error) };
      throw error;
    }
  };
  try {
    try {
      for (const section of SECTIONS.filter((s) => s.shared && wants(s))) await failing(section);
    } finally {
      await bench.close();
    }
    for (const section of SECTIONS.filter((s) => !s.shared && wants(s))) await failing(section);
  } finally {
    results.seconds = round((now() - started) / 1000, 1);
    mkdirSync(path.join(__dirname, 'results'), { recursive: true });
    const file = path.join(__dirname, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}${quick ? '-quick' : ''}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    console.log(renderTable(results));
    console.log(`\nJSON: ${path.relative(PROJECT_ROOT, file)}${results.failedSection ? ` (partial: section ${results.failedSection.name} failed)` : ''}`);
  }
}

/** Floors (a), (b) and (c), ours and the reference design, interleaved. */
async function measureLatency(b: Bench): Promise<void> {
  const { pool, reference, temporal, sessions, results, newSession, newRefSession } = b;
  log(`latency: ${SIZES.rounds} interleaved rounds of bare Update, same-shape floor, ours, reference design`);
  const floorHandle = await temporal.workflow.start('floorWorkflow', { workflowId: 'bench-floor', taskQueue: 'bench-aux' });
  const shapeHandle = await temporal.workflow.start('sameShapeWorkflow', { workflowId: 'bench-same-shape', taskQueue: 'bench-aux' });
  await floorHandle.executeUpdate(noopUpdate, { args: [0] });
  await shapeHandle.executeUpdate(sameShapeUpdate, { args: [0] });
  const ids = Array.from({ length: SIZES.rounds }, (_, i) => `bench-lat-${i}`);
  await inBatches(ids, 10, (id) => newSession(id, 40));
  for (const id of ids) await sessions.operator.state(id); // workflows started and cached
  b.latencyIds = ids;
  await inBatches(ids, 10, (id) => newRefSession(`ref-lat-${id}`, 40));
  const lat = { update: [] as number[], sameShape: [] as number[], ours: [] as number[], transcriptRead: [] as number[], reference: [] as number[] };
  for (let r = 0; r < SIZES.rounds; r++) {
    const steps: Array<() => Promise<void>> = [
      async () => void lat.update.push((await timed(() => floorHandle.executeUpdate(noopUpdate, { args: [r] })))[0]),
      async () => void lat.sameShape.push((await timed(() => shapeHandle.executeUpdate(sameShapeUpdate, { args: [r] })))[0]),
      async () => {
        // compact() without its read of the new head, so ours does what the floors do; the read apart.
        const [ms, result] = await timed(() => sessions.compactAnswer(ids[r]));
        if (result.outcome !== 'compacted') throw new Error(`unexpected ${result.outcome}: ${result.reason}`);
        lat.ours.push(ms);
        lat.transcriptRead.push((await timed(() => sessions.transcript(result.sessionId)))[0]);
      },
      async () => {
        const [ms, result] = await timed(() => reference.compact(`ref-lat-${ids[r]}`));
        if (result.outcome !== 'compacted') throw new Error(`reference: unexpected ${result.outcome}`);
        lat.reference.push(ms);
      },
    ];
    for (let s = 0; s < steps.length; s++) await steps[(s + r) % steps.length]();
  }
  const floorB = summary(lat.sameShape);
  const ours = summary(lat.ours);
  results.latency = {
    floorA_bareUpdate: summary(lat.update),
    floorB_sameShape: floorB,
    ours,
    transcriptRead: summary(lat.transcriptRead),
    reference: summary(lat.reference),
    oursOverFloorB: { p50: round(ours.p50 / floorB.p50), p99: round(ours.p99 / floorB.p99) },
    oursOverReference: { p50: round(ours.p50 / summary(lat.reference).p50) },
  };
  if (process.env.BENCH_TRACE) {
    const h = await temporal.workflow.getHandle(lineageWorkflowId(ids[ids.length - 1])).fetchHistory();
    const t0 = Number(h.events![0].eventTime!.seconds) * 1000 + h.events![0].eventTime!.nanos! / 1e6;
    for (const e of h.events!)
      console.error(
        String(e.eventId).padStart(3),
        (Number(e.eventTime!.seconds) * 1000 + e.eventTime!.nanos! / 1e6 - t0).toFixed(1).padStart(8),
        Object.keys(e).find((k) => k.endsWith('Attributes')),
      );
  }

  // Floor (c): single-row INSERT transactions, 10 writers, like the append benchmark.
  log(`floor (c): ${SIZES.appends} single-row INSERT transactions, 10 writers`);
  const insertLat: number[] = [];
  const [insertMs] = await timed(() =>
    inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => {
      const [t] = await timed(() => insertFloorRow(pool, i));
      insertLat.push(t);
    }),
  );
  const floorC = { perSecond: round(SIZES.appends / (insertMs / 1000)), ...summary(insertLat) };
  results.floorC_insertTransaction = floorC;
}

/**
 * Issue 41 §3: ours and floor (b) interleaved again, with the worker's SQL and LLM traces on
 * and the client's statements traced in this process, each compaction cut into its parts at
 * the history's event times and the traces' (bench/split.ts). Per part: its p50 and its share
 * of ours' p50, beside floor (b)'s same part. The traces cost a file append per statement.
 */
async function measureSplit(b: Bench): Promise<void> {
  const { stack, temporal, sessions, results, newSession, startWorker, stopWorker } = b;
  log(`split: ${SIZES.rounds} compactions and ${SIZES.rounds} same-shape Updates, interleaved, the worker's SQL and LLM traced`);
  const sqlFile = path.join(stack.dir, 'sql-trace-split.jsonl');
  const llmFile = path.join(stack.dir, 'llm-trace-split.jsonl');
  await stopWorker();
  await startWorker({ BENCH_SQL_TRACE_FILE: sqlFile, BENCH_LLM_TRACE_FILE: llmFile });
  const ids = Array.from({ length: SIZES.rounds }, (_, i) => `bench-split-${i}`);
  await inBatches(ids, 10, (id) => newSession(id, 40));
  for (const id of ids) await sessions.operator.state(id); // workflows started and cached
  const shape = temporal.workflow.getHandle('bench-same-shape');
  await shape.executeUpdate(sameShapeUpdate, { args: [0] });
  // The client's statements, traced in this process while a compaction runs (nothing else runs meanwhile).
  let clientSql: SqlTraceEntry[] | undefined;
  const untrace = traceSql((entry) => clientSql?.push(entry));
  const ours: CallTiming[] = [];
  const floor: CallTiming[] = [];
  try {
    for (let r = 0; r < SIZES.rounds; r++) {
      const steps: Array<() => Promise<void>> = [
        async () => {
          clientSql = [];
          const at = wallNow();
          const [ms, result] = await timed(() => sessions.compactAnswer(ids[r]));
          if (result.outcome !== 'compacted') throw new Error(`split: unexpected ${result.outcome}: ${result.reason}`);
          ours.push({ at, ms, clientSql });
          clientSql = undefined;
        },
        async () => {
          const at = wallNow();
          const [ms] = await timed(() => shape.executeUpdate(sameShapeUpdate, { args: [r + 1] }));
          floor.push({ at, ms });
        },
      ];
      for (let s = 0; s < steps.length; s++) await steps[(s + r) % steps.length]();
    }
  } finally {
    untrace();
  }
  await stopWorker();
  await startWorker();
  const lines = <T>(file: string) =>
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as T);
  const worker = { sql: lines<SqlTraceEntry>(sqlFile), llm: lines<LlmTraceEntry>(llmFile) };
  const eventsOf = async (workflowId: string) => ((await temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? []) as HistoryEvent[];
  const oursSplit = [];
  for (const [i, call] of ours.entries()) {
    const split = oursParts(await eventsOf(lineageWorkflowId(ids[i])), call, worker);
    if (split) oursSplit.push(split);
  }
  const floorEvents = await eventsOf('bench-same-shape');
  const floorSplit = floor.map((call) => floorBParts(floorEvents, call)).filter((p) => p !== undefined);
  const oursTotal = summary(ours.map((c) => c.ms));
  const floorTotal = summary(floor.map((c) => c.ms));
  const p50Of = (values: number[]) => (values.length ? round(percentile(values, 50)) : null);
  const share = (ms: number | null) => (ms === null ? null : round(ms / oursTotal.p50, 3));
  /** The p50 over compactions of the sum of some parts (a sum of p50s is not a p50). */
  const sumP50 = (splits: Array<Record<string, number>>, keys: string[]) => p50Of(splits.map((p) => keys.reduce((n, k) => n + (p[k] ?? 0), 0)));
  const oursByOwner = (owner: string) => PARTS.filter((p) => p.owner === owner && p.key !== 'activity').map((p) => p.key);
  const oursParts_ = oursSplit.map((s) => s.parts);
  const activityKeys = ['activityStart', 'begin', 'snapshot', 'summariser', 'gates', 'commit', 'activityCompletion'];
  results.split = {
    rounds: SIZES.rounds,
    matched: { ours: oursSplit.length, floorB: floorSplit.length },
    ours: oursTotal,
    floorB: floorTotal,
    oursOverFloorB: { p50: round(oursTotal.p50 / floorTotal.p50), p99: round(oursTotal.p99 / floorTotal.p99) },
    parts: PARTS.map((p) => {
      const mine = p.key === 'activity' ? null : p50Of(oursParts_.map((s) => s[p.key]));
      return {
        key: p.key,
        part: p.label,
        owner: p.owner,
        oursP50: mine,
        oursP99:
          p.key === 'activity'
            ? null
            : round(
                percentile(
                  oursParts_.map((s) => s[p.key]),
                  99,
                ),
              ),
        shareOfOursP50: share(mine),
        floorBP50: p.floorB ? p50Of(floorSplit.map((s) => s[p.key])) : null,
      };
    }),
    subtotals: {
      updateAccepted: {
        part: 'client to workflow accepted (Update to the server, dispatch, the workflow task)',
        oursP50: sumP50(oursParts_, ['updateToServer', 'wftDispatch1', 'wft1']),
        floorBP50: sumP50(floorSplit, ['updateToServer', 'wftDispatch1', 'wft1']),
      },
      activityInAll: {
        part: 'the activity, started to completed (history)',
        oursP50: sumP50(oursParts_, activityKeys),
        floorBP50: sumP50(floorSplit, ['activity']),
      },
      ...Object.fromEntries(
        (['ours', 'temporal', 'workflow task'] as const).map((owner) => [
          `owner: ${owner}`,
          {
            part: `every part that is ${owner === 'ours' ? 'ours' : owner === 'temporal' ? "Temporal's" : 'a workflow task'}`,
            oursP50: sumP50(oursParts_, oursByOwner(owner)),
          },
        ]),
      ),
      sumOfParts: {
        part: "all parts (the caller's time, as a check)",
        oursP50: sumP50(oursParts_, oursByOwner('ours').concat(oursByOwner('temporal'), oursByOwner('workflow task'))),
      },
    },
    // openBench's default answer has no delay: the local LLM answers at once.
    fakeLlmDelayMs: 0,
    llmCallsPerCompaction: round(oursSplit.reduce((n, s) => n + s.llmCalls, 0) / Math.max(1, oursSplit.length)),
    commitStatementsPerCompaction: round(oursSplit.reduce((n, s) => n + s.commitStatements, 0) / Math.max(1, oursSplit.length)),
    otherWorkerStatementsPerCompaction: round(oursSplit.reduce((n, s) => n + s.otherStatements, 0) / Math.max(1, oursSplit.length)),
    clientStatementsPerCompaction: round(ours.reduce((n, c) => n + (c.clientSql?.length ?? 0), 0) / Math.max(1, ours.length)),
    loadAverage1m: round(os.loadavg()[0]),
  };
}

/** The commit's own time, from a SQL trace of the worker. */
async function measureCommit(b: Bench): Promise<void> {
  const { stack, sessions, results, newSession, startWorker, stopWorker } = b;
  const floorC = b.results.floorC_insertTransaction as { perSecond: number; p50: number; p99: number };
  log('commit: statements and time of the compaction commit (SQL trace in the worker)');
  const traceFile = path.join(stack.dir, 'sql-trace.jsonl');
  await stopWorker();
  await startWorker({ BENCH_SQL_TRACE_FILE: traceFile });
  const cIds = Array.from({ length: SIZES.commitSamples }, (_, i) => `bench-commit-${i}`);
  await inBatches(cIds, 10, (id) => newSession(id, 40));
  for (const id of cIds) await sessions.compact(id);
  await stopWorker();
  await startWorker();
  const traced = readFileSync(traceFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { statements: number; ms: number; sql: string[] });
  // The commit is the statement that calls sc_compaction_commit (or, when appends kept landing, the
  // transaction that holds the locks around it); a retried commit is several of them for one compaction.
  const commits = traced.filter((t) => t.sql.some((s) => /sc_compaction_commit/i.test(s)));
  const transactions = traced.filter((t) => t.statements > 1);
  results.commit = {
    compactions: cIds.length,
    commitsFound: commits.length,
    statements: commits.length ? commits[0].statements : null,
    ...(commits.length ? { ms: summary(commits.map((c) => c.ms)) } : {}),
    statementsOfFirst: commits[0]?.sql,
    commitStatementsPerCompaction: round(commits.reduce((n, t) => n + t.statements, 0) / cIds.length, 2),
    // Every statement the worker sent, by its first words: where the round trips go.
    statementsByKind: Object.fromEntries(
      Object.entries(
        traced
          .flatMap((t) => (t.statements === 1 ? t.sql : [`transaction: ${t.sql.join(' / ')}`]))
          .reduce<Record<string, number>>((counts, text) => {
            const kind = text.slice(0, 60);
            counts[kind] = (counts[kind] ?? 0) + 1;
            return counts;
          }, {}),
      ).map(([kind, n]) => [kind, round(n / cIds.length, 2)]),
    ),
    transactionsPerCompaction: round(transactions.length / cIds.length, 1),
    roundTripsPerCompaction: round(traced.reduce((n, t) => n + t.statements, 0) / cIds.length, 1),
    ...(commits.length
      ? {
          overFloorCTransaction: {
            p50: round(summary(commits.map((c) => c.ms)).p50 / floorC.p50),
            p99: round(summary(commits.map((c) => c.ms)).p99 / floorC.p99),
          },
        }
      : {}),
  };
}

/**
 * Commits under load: 25 appenders append one message at a time to a lineage while it is
 * compacted contendedCommits times in a row, once with every commit trying the optimistic path
 * first (BENCH_COMMIT_PATH=optimistic, before) and once with the adaptive path (after). Per
 * compaction: the time of its commit statements and transaction (SQL trace of the worker), its
 * commit_retries (audit row), and the compaction's latency at the caller.
 */
async function measureContention(b: Bench): Promise<void> {
  const { stack, sessions, database, results, newSession, startWorker, stopWorker } = b;
  const appenders = 25;
  results.contention = { appenders, compactions: SIZES.contendedCommits };
  for (const path_ of ['optimistic', 'adaptive'] as const) {
    log(`contention: ${SIZES.contendedCommits} compactions of a lineage under ${appenders} appenders, commit path ${path_}`);
    const traceFile = path.join(stack.dir, `sql-trace-contention-${path_}.jsonl`);
    await stopWorker();
    await startWorker({ BENCH_SQL_TRACE_FILE: traceFile, ...(path_ === 'optimistic' ? { BENCH_COMMIT_PATH: 'optimistic' } : {}) });
    const id = `bench-contention-${path_}`;
    await newSession(id, 40);
    await sessions.operator.state(id);
    let stop = false;
    let appended = 0;
    const appending = Promise.all(
      Array.from({ length: appenders }, async (_x, w) => {
        while (!stop) {
          await sessions.append(id, [{ role: 'user', content: `appender ${w}: ${appended++}` }]);
        }
      }),
    );
    const latencies: number[] = [];
    let head = id;
    try {
      for (let c = 0; c < SIZES.contendedCommits; c++) {
        const [t, result] = await timed(() => sessions.compactAnswer(head, { force: true }));
        if (result.outcome !== 'compacted') throw new Error(`contention: ${result.outcome} ${result.reason ?? ''}`);
        latencies.push(t);
        head = result.sessionId;
      }
    } finally {
      stop = true;
      await appending;
    }
    await stopWorker();
    await startWorker();
    // The worker's statements in order: a compaction's commit is every entry naming sc_compaction_commit after its begin.
    const commitMs: number[] = [];
    for (const line of readFileSync(traceFile, 'utf8').trim().split('\n')) {
      const t = JSON.parse(line) as { ms: number; sql: string[] };
      if (t.sql.some((s) => /sc_compaction_begin/i.test(s))) commitMs.push(0);
      else if (t.sql.some((s) => /sc_compaction_commit/i.test(s)) && commitMs.length > 0) commitMs[commitMs.length - 1] += t.ms;
    }
    const audit = (
      await database.db.execute(
        sql`select avg(commit_retries)::float as retries, count(*)::int as n from compactions where lineage_id = ${id} and outcome = 'compacted'`,
      )
    ).rows[0] as { retries: number; n: number };
    results.contention[path_] = {
      commitMs: summary(commitMs.filter((m) => m > 0)),
      compactionMs: summary(latencies),
      commitRetriesMean: round(audit.retries),
      compactionsCommitted: audit.n,
      appendsMeanwhile: appended,
    };
  }
  const before = results.contention.optimistic.commitMs;
  const after = results.contention.adaptive.commitMs;
  results.contention.commitAdaptiveOverOptimistic = { p50: round(after.p50 / before.p50), p99: round(after.p99 / before.p99) };
}

/** Cost per compaction: history, billable actions, LLM tokens. */
async function measureCost(b: Bench): Promise<void> {
  const { stack, llm, database, sessions, results, historyOf, newSession } = b;
  log('cost: history per compaction');
  await newSession('bench-cost', 40);
  const costBefore = await historyOf(lineageWorkflowId('bench-cost'));
  let costHead = 'bench-cost';
  for (let i = 0; i < SIZES.costCompactions; i++) {
    costHead = (await sessions.compact(costHead)).sessionId;
    await sessions.append(costHead, transcript(40, `cost${i}`));
  }
  const costAfter = await historyOf(lineageWorkflowId('bench-cost'));
  const bytesBySize: Record<string, number> = {};
  for (const size of [100, SIZES.bigTranscript]) {
    const id = `bench-size-${String(size).padStart(5, '0')}`;
    await newSession(id, size);
    const before = await historyOf(lineageWorkflowId(id));
    await sessions.compact(id, { requestId: 'bench-fixed-length-id' });
    bytesBySize[size] = (await historyOf(lineageWorkflowId(id))).bytes - before.bytes;
  }
  log(`cost: billable actions for a ${SIZES.streamSeconds} s streamed summary, default TTL (60 s)`);
  const streamed = ['bench-bill-0', 'bench-bill-1'];
  for (const id of streamed) await newSession(id, 40);
  const beforeBill = await Promise.all(streamed.map((id) => historyOf(lineageWorkflowId(id))));
  const heartbeatsBefore = await promCounter(stack.temporal.metricsUrl, 'service_requests', {
    operation: 'RecordActivityTaskHeartbeat',
    service_name: 'frontend',
  });
  llm.script(...streamed.map(() => ({ chunks: SIZES.streamSeconds * 2, chunkDelayMs: 500 })));
  const [streamMs] = await timed(() => Promise.all(streamed.map((id) => sessions.compact(id))));
  results.heartbeatMetricLines = await promLines(stack.temporal.metricsUrl, 'service_requests', 'RecordActivityTaskHeartbeat');
  const heartbeats =
    (await promCounter(stack.temporal.metricsUrl, 'service_requests', { operation: 'RecordActivityTaskHeartbeat', service_name: 'frontend' })) -
    heartbeatsBefore;
  const afterBill = await Promise.all(streamed.map((id) => historyOf(lineageWorkflowId(id))));
  const delta = (k: string) => afterBill.reduce((n, h, i) => n + (h.counts[k] ?? 0) - (beforeBill[i].counts[k] ?? 0), 0) / streamed.length;
  const actions = {
    updates: delta('workflowExecutionUpdateAccepted'),
    activityStarts: delta('activityTaskScheduled'),
    heartbeatsRecorded: heartbeats / streamed.length,
    searchAttributeUpserts: delta('upsertWorkflowSearchAttributes'),
    memoUpserts: delta('workflowPropertiesModified'),
    signals: delta('workflowExecutionSignaled'),
    timers: delta('timerStarted'),
    localActivities: delta('markerRecorded'),
  };
  const tokens = (
    await database.db.execute(
      sql`select avg(coalesce(summariser_prompt_tokens, 0) + coalesce(summariser_completion_tokens, 0))::float as total, avg(summariser_prompt_tokens)::float as prompt, avg(summariser_completion_tokens)::float as completion, count(*)::int as n from compactions where outcome = 'compacted'`,
    )
  ).rows[0] as Record<string, number>;
  results.cost = {
    historyPerCompaction: {
      events: round((costAfter.events - costBefore.events) / SIZES.costCompactions, 1),
      bytes: round((costAfter.bytes - costBefore.bytes) / SIZES.costCompactions, 0),
    },
    historyBytesByTranscriptSize: bytesBySize,
    billable: {
      streamSeconds: SIZES.streamSeconds,
      measuredSeconds: round(streamMs / 1000, 1),
      ...actions,
      total: round(
        Object.values(actions).reduce((a, b) => a + b, 0),
        1,
      ),
    },
    llmTokensPerCompaction: {
      fromAuditRows: tokens.n,
      prompt: round(tokens.prompt, 1),
      completion: round(tokens.completion, 1),
      total: round(tokens.total, 1),
    },
  };
}

/** Summary prompt tokens over a lineage's life, and what a prompt cache serves. */
async function measureGenerations(b: Bench): Promise<void> {
  const { config, llm, database, sessions, results } = b;
  const generations = quick ? 10 : 100;
  log(`generations: two lineages compacted ${generations} times, the summariser the session's own model (prefix layout) and another (rendered)`);
  const agent = new OpenAI({ apiKey: 'bench', baseURL: config.llm.baseURL, maxRetries: 0 });
  /** The agent's call with its head, as it sends it: what the local LLM reported. */
  const agentCall = async (messages: unknown[]) => {
    await agent.chat.completions.create({ model: config.llm.model, messages: messages as OpenAI.ChatCompletionMessageParam[] });
    return llm.requests.at(-1)!.usage;
  };
  results.generations = { generations };
  for (const [layout, model] of [
    ['prefix', config.llm.model],
    ['rendered', 'another-model'],
  ] as const) {
    const id = `bench-gen-${layout}`;
    await sessions.createSession({ sessionId: id, model });
    // An agent's instructions come first and stay: what its next call can be served from the cache.
    await sessions.append(id, [{ role: 'system', content: `You are ${layout}-agent, a careful coding agent. ${'Follow the house rules. '.repeat(80)}` }]);
    let head = id;
    const nextCall = { prompt: 0, cached: 0 };
    for (let g = 0; g < generations; g++) {
      await sessions.append(head, transcript(40, `${layout}-gen${g}`));
      await agentCall((await sessions.transcript(head)).messages);
      const result = await sessions.compact(head, { force: true });
      if (result.outcome !== 'compacted') throw new Error(`generation ${g + 1}: ${result.outcome} ${result.reason ?? ''}`);
      head = result.sessionId;
      const next = await agentCall(result.messages);
      nextCall.prompt += next.prompt_tokens;
      nextCall.cached += next.prompt_tokens_details?.cached_tokens ?? 0;
    }
    const rows = (
      await database.db.execute(
        sql`select generation, summariser_prompt_tokens as prompt, summariser_cached_prompt_tokens as cached from compactions where lineage_id = ${id} and outcome = 'compacted' order by generation`,
      )
    ).rows as Array<{ generation: number; prompt: number; cached: number | null }>;
    const at = (n: number) => rows.find((r) => r.generation === n);
    const sum = (k: 'prompt' | 'cached') => rows.reduce((t, r) => t + (r[k] ?? 0), 0);
    results.generations[layout] = {
      model,
      promptTokensAt: Object.fromEntries([1, 10, 100].filter((n) => n <= generations).map((n) => [n, at(n)?.prompt ?? null])),
      cachedTokensAt: Object.fromEntries([1, 10, 100].filter((n) => n <= generations).map((n) => [n, at(n)?.cached ?? null])),
      uncachedTokensAt: Object.fromEntries([1, 10, 100].filter((n) => n <= generations).map((n) => [n, at(n) ? at(n)!.prompt - (at(n)!.cached ?? 0) : null])),
      summaryCachedShare: round(sum('cached') / sum('prompt')),
      agentNextCallCachedShare: round(nextCall.cached / nextCall.prompt),
    };
  }
}

/** Throughput: ours, floor (b) and the reference design, at each load. */
async function measureThroughput(b: Bench): Promise<void> {
  const { database, reference, temporal, sessions, results, newSession, newRefSession } = b;
  results.throughput = [];
  for (const sessionCount of SIZES.throughputSessions) {
    log(`throughput: ${sessionCount} sessions x ${SIZES.callers} concurrent callers: ours, floor (b), the reference design`);
    const tIds = Array.from({ length: sessionCount }, (_, i) => `bench-tp${sessionCount}-${i}`);
    await inBatches(tIds, 20, (id) => newSession(id, 40));
    await inBatches(tIds, 20, (id) => newRefSession(`ref-${id}`, 40));
    const shapes = await Promise.all(tIds.map((id) => temporal.workflow.start('sameShapeWorkflow', { workflowId: `shape-${id}`, taskQueue: 'bench-aux' })));
    const run = async (call: (i: number) => Promise<string>) => {
      let errors = 0;
      const outcomes: Record<string, number> = {};
      const [ms] = await timed(() =>
        Promise.all(
          tIds.flatMap((_id, i) =>
            Array.from({ length: SIZES.callers }, () =>
              call(i).then(
                (o) => void (outcomes[o] = (outcomes[o] ?? 0) + 1),
                () => void errors++,
              ),
            ),
          ),
        ),
      );
      return { ms, outcomes, errors };
    };
    const o = await run(async (i) => (await sessions.compactAnswer(tIds[i])).outcome);
    const committed = Number(
      (
        (await database.db.execute(sql`select count(*) as n from sessions where parent_session_id like ${`bench-tp${sessionCount}-%`}`)).rows[0] as {
          n: string;
        }
      ).n,
    );
    const b = await run(async (i) => String(typeof (await shapes[i].executeUpdate(sameShapeUpdate, { args: [i] }))));
    const r = await run(async (i) => (await reference.compact(`ref-${tIds[i]}`)).outcome);
    const refAudit = await reference.audit(tIds.map((id) => `ref-${id}`));
    await Promise.all(shapes.map((h) => h.terminate('benchmark done')));
    const callers = sessionCount * SIZES.callers;
    const perSecond = (n: number, ms: number) => round(n / (ms / 1000));
    results.throughput.push({
      sessions: sessionCount,
      callers,
      ours: {
        seconds: round(o.ms / 1000),
        compactionsPerSecond: perSecond(committed, o.ms),
        answersPerSecond: perSecond(callers, o.ms),
        outcomes: o.outcomes,
        errors: o.errors,
        forks: (await sessions.operator.audit()).forks,
      },
      floorB: { seconds: round(b.ms / 1000), answersPerSecond: perSecond(callers, b.ms), errors: b.errors },
      reference: {
        seconds: round(r.ms / 1000),
        compactionsPerSecond: perSecond(refAudit.committedCompactions, r.ms),
        answersPerSecond: perSecond(callers, r.ms),
        outcomes: r.outcomes,
        errors: r.errors,
        forks: refAudit.forks,
      },
      oursOverFloorB: round(perSecond(callers, o.ms) / perSecond(callers, b.ms)),
    });
  }
}

/**
 * Issue 41 §4: ours at SIZES.workerSessions sessions x SIZES.callers callers with 1, 2 and 4
 * worker processes on one task queue, in the order 1, 2, 4, 4, 2, 1 (each count twice, so drift
 * on a shared machine shows), each round on fresh sessions; and the cores each process of the
 * stack used meanwhile (bench/proc-cpu.ts), which says where it saturates.
 */
async function measureWorkers(b: Bench): Promise<void> {
  const { database, env, sessions, results, newSession } = b;
  const counts = SIZES.workerCounts;
  const order = [...counts, ...[...counts].reverse()];
  log(`workers: ${SIZES.workerSessions} sessions x ${SIZES.callers} callers with ${order.join(', ')} worker processes on one task queue`);
  const extra: ChildProcess[] = [];
  const rounds: Array<Record<string, unknown>> = [];
  try {
    for (const [round_, workers] of order.entries()) {
      while (extra.length + 1 < workers) extra.push(await spawnBenchProcess('session-worker.ts', env, { ready: 'worker ready' }));
      while (extra.length + 1 > workers) await stopProcess(extra.pop());
      const prefix = `bench-w${round_}-`;
      const ids = Array.from({ length: SIZES.workerSessions }, (_, i) => `${prefix}${i}`);
      await inBatches(ids, 20, (id) => newSession(id, 40));
      const labels = new Map<number, string>([[b.auxPid!, 'aux worker (idle)']]);
      labels.set(b.workerPid()!, 'worker 1');
      extra.forEach((w, i) => labels.set(w.pid!, `worker ${i + 2}`));
      let errors = 0;
      const outcomes: Record<string, number> = {};
      const before = cpuSnapshot(labels);
      const [ms] = await timed(() =>
        Promise.all(
          ids.flatMap((id) =>
            Array.from({ length: SIZES.callers }, () =>
              sessions.compactAnswer(id).then(
                (a) => void (outcomes[a.outcome] = (outcomes[a.outcome] ?? 0) + 1),
                () => void errors++,
              ),
            ),
          ),
        ),
      );
      const cores = coresUsed(before, cpuSnapshot(labels));
      const committed = Number(
        ((await database.db.execute(sql`select count(*) as n from sessions where parent_session_id like ${`${prefix}%`}`)).rows[0] as { n: string }).n,
      );
      const callers = ids.length * SIZES.callers;
      rounds.push({
        workers,
        seconds: round(ms / 1000),
        answersPerSecond: round(callers / (ms / 1000)),
        compactionsPerSecond: round(committed / (ms / 1000)),
        outcomes,
        errors,
        cores,
      });
      log(`workers: ${workers}: ${round(callers / (ms / 1000))} answers/s; cores ${JSON.stringify(cores)}`);
    }
  } finally {
    for (const w of extra) await stopProcess(w);
  }
  const mean = (workers: number, key: string) => {
    const of = rounds.filter((r) => r.workers === workers).map((r) => r[key] as number);
    return round(of.reduce((a, x) => a + x, 0) / of.length);
  };
  const byWorkers = Object.fromEntries(
    counts.map((n) => [n, { answersPerSecond: mean(n, 'answersPerSecond'), compactionsPerSecond: mean(n, 'compactionsPerSecond') }]),
  );
  results.workers = {
    sessions: SIZES.workerSessions,
    callers: SIZES.workerSessions * SIZES.callers,
    order,
    rounds,
    byWorkers,
    // Answers per second with n workers over with 1 (the mean of each count's two rounds).
    ratioOverOne: Object.fromEntries(counts.map((n) => [n, round(byWorkers[n].answersPerSecond / byWorkers[counts[0]].answersPerSecond)])),
    forks: (await sessions.operator.audit()).forks,
  };
}

/** Appends: floor (c), ours and the reference design, alone and during compactions. */
async function measureAppends(b: Bench): Promise<void> {
  const { reference, sessions, results, newSession, newRefSession } = b;
  const floorC = b.results.floorC_insertTransaction as { perSecond: number; p50: number; p99: number };
  log(`appends: ${SIZES.appends} single-message appends, 10 writers`);
  const appendRun = async (append: (i: number) => Promise<unknown>, during?: () => Promise<void>) => {
    const latencies: number[] = [];
    let stop = false;
    let compactions = 0;
    const background = during
      ? (async () => {
          while (!stop) {
            await during();
            compactions++;
          }
        })()
      : undefined;
    const [ms] = await timed(() =>
      inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => void latencies.push((await timed(() => append(i)))[0])),
    );
    stop = true;
    await background;
    return { perSecond: round(SIZES.appends / (ms / 1000)), ...summary(latencies), ...(during ? { compactionsMeanwhile: compactions } : {}) };
  };
  const aIds = Array.from({ length: 10 }, (_, i) => `bench-app-${i}`);
  await inBatches(aIds, 10, (id) => newSession(id, 40));
  await inBatches(aIds, 10, (id) => newRefSession(`ref-${id}`, 40));
  await b.pool.query(ORDERED_FLOOR_TABLES_SQL);
  await createOrderedFloorSessions(b.pool, aIds);
  const oursAppend = (i: number) => sessions.append(aIds[i % 10], [{ role: 'user', content: `append ${i}` }]);
  const refAppend = (i: number) => reference.append(`ref-${aIds[i % 10]}`, [{ role: 'user', content: `append ${i}` }]);
  // Floor (d) and ours, the same batches: one message, then an agent's turn of 2 to 4 (a request, the model's answers).
  const single = (i: number): ChatMessage[] => [{ role: 'user', content: `append ${i}` }];
  const turnOf = (i: number): ChatMessage[] => transcript(2 + (i % 3), `turn ${i}`);
  log('appends: floor (d), the ordered append (session row locked, next sequence numbers), and ours, 1-message and 2-4-message batches');
  // Floor (c) again, beside floor (d) and ours: the shared machine's load moves between sections.
  const floorCHere = await appendRun((i) => insertFloorRow(b.pool, i));
  const floorD1 = await appendRun((i) => orderedFloorAppend(b.pool, aIds[i % 10], single(i)));
  const ours1 = await appendRun((i) => sessions.append(aIds[i % 10], single(i)));
  const floorDN = await appendRun((i) => orderedFloorAppend(b.pool, aIds[i % 10], turnOf(i)));
  const oursN = await appendRun((i) => sessions.append(aIds[i % 10], turnOf(i)));
  const profile = await profileAppends(b, (i) => sessions.append(aIds[i % 10], turnOf(i)));
  let k = 0;
  const oursAlone = await appendRun(oursAppend);
  const oursDuring = await appendRun(
    oursAppend,
    async () => void (await sessions.compact((await sessions.transcript(aIds[k++ % 10])).sessionId, { force: true })),
  );
  const refAlone = await appendRun(refAppend);
  const refDuring = await appendRun(refAppend, async () => {
    const id = `ref-${aIds[k++ % 10]}`;
    await reference.compact(await reference.head(id));
  });
  const tokenCounting = measureTokenCounting();
  results.appends = {
    tokenCounting,
    floorC: floorC,
    orderedFloor: {
      floorC: floorCHere,
      singleMessage: { floorD: floorD1, ours: ours1 },
      severalMessages: { messagesPerBatch: '2-4', floorD: floorDN, ours: oursN },
      ratios: {
        singleOverFloorD: round(ours1.perSecond / floorD1.perSecond),
        singleOverFloorC: round(ours1.perSecond / floorCHere.perSecond),
        severalOverFloorD: round(oursN.perSecond / floorDN.perSecond),
        severalOverFloorC: round(oursN.perSecond / floorCHere.perSecond),
        floorDSingleOverFloorC: round(floorD1.perSecond / floorCHere.perSecond),
      },
      profile,
    },
    ours: { alone: oursAlone, duringCompactions: oursDuring },
    reference: { alone: refAlone, duringCompactions: refDuring },
    ratios: {
      oursThroughputOverFloorC: round(oursAlone.perSecond / floorC.perSecond),
      oursP99DuringOverAlone: round(oursDuring.p99 / oursAlone.p99),
      referenceThroughputOverFloorC: round(refAlone.perSecond / floorC.perSecond),
    },
  };
}

/**
 * Where an append's time goes inside Postgres: with track_functions on (superuser, applied by a
 * reload), the self and total time per call of every SQL function the appends ran, from
 * pg_stat_user_functions, over SIZES.appends appends of 2-4 messages. A profile run, apart
 * from the timed ones (the tracking costs a little).
 */
async function profileAppends(b: Bench, append: (i: number) => Promise<unknown>) {
  const { pool } = b;
  try {
    await pool.query("alter system set track_functions = 'all'");
    await pool.query('select pg_reload_conf()');
    await new Promise((r) => setTimeout(r, 500));
    await pool.query('select pg_stat_reset()');
    const [ms] = await timed(() => inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => void (await append(i))));
    // An idle backend flushes its function statistics within 10 s (PGSTAT_IDLE_INTERVAL); per append is per call of session_append.
    await new Promise((r) => setTimeout(r, 11_000));
    const { rows } = await pool.query(
      'select funcname, calls, total_time, self_time from pg_stat_user_functions where calls > 0 order by self_time desc limit 15',
    );
    const appends = Number(rows.find((r: { funcname: string }) => r.funcname === 'session_append')?.calls ?? SIZES.appends);
    return {
      appends,
      appendsCounted: appends / SIZES.appends,
      wallMsPerAppend: round(ms / SIZES.appends, 3),
      functions: rows.map((r: { funcname: string; calls: string; total_time: number; self_time: number }) => ({
        name: r.funcname,
        callsPerAppend: round(Number(r.calls) / appends, 2),
        totalMsPerAppend: round(r.total_time / appends, 3),
        selfMsPerAppend: round(r.self_time / appends, 3),
      })),
    };
  } catch (error) {
    return { error: String((error as Error).message) };
  } finally {
    await pool.query('alter system reset track_functions').catch(() => undefined);
    await pool.query('select pg_reload_conf()').catch(() => undefined);
  }
}

/**
 * Per-turn work beside the frameworks' session stores (bench/peers.ts): at each concurrency, every
 * peer in turn (rotating which goes first), max(concurrency, peerConversations) conversations of
 * peerTurns turns each. A peer that cannot be driven is reported with the reason.
 */
async function measurePeers(b: Bench): Promise<void> {
  const { config, sessions, results } = b;
  log(`peers: per-turn work at ${SIZES.peerConcurrency.join(', ')} concurrent conversations, ours and the frameworks' stores`);
  const peers: Array<Awaited<ReturnType<typeof langGraphPeer>>> = [
    oursPeer(sessions),
    await langGraphPeer(config.databaseUrl),
    openaiAgentsPeer(config.databaseUrl),
  ];
  const notDriven: Record<string, string> = {};
  const claude = await claudePeer(config.databaseUrl).catch((error: Error) => `could not load it: ${error.message}`);
  if (typeof claude === 'string') notDriven['Claude Agent SDK PostgresSessionStore'] = claude;
  else peers.push(claude);
  const levels: Array<Record<string, unknown>> = [];
  try {
    for (const concurrency of SIZES.peerConcurrency) {
      const load = { concurrency, conversations: Math.max(concurrency, SIZES.peerConversations), turns: SIZES.peerTurns };
      const byPeer: Record<string, unknown> = {};
      for (let p = 0; p < peers.length; p++) {
        const peer = peers[(p + concurrency) % peers.length];
        try {
          const run = await peer.run(load, `peer-${concurrency}-${p}-${Date.now()}`);
          byPeer[peer.name] = { ...summary(run.latencies), turnsPerSecond: round(run.latencies.length / (run.wallMs / 1000)) };
        } catch (error) {
          notDriven[peer.name] = `failed at ${concurrency} conversations: ${(error as Error).message.slice(0, 500)}`;
        }
      }
      const ours = byPeer.ours as { p50: number; p99: number } | undefined;
      const others = Object.entries(byPeer).filter(([name]) => name !== 'ours') as Array<[string, { p50: number; p99: number; turnsPerSecond: number }]>;
      const bestP50 = others.length ? Math.min(...others.map(([, v]) => v.p50)) : undefined;
      const bestP99 = others.length ? Math.min(...others.map(([, v]) => v.p99)) : undefined;
      levels.push({
        ...load,
        peers: byPeer,
        oursOverBestPeer: ours && bestP50 && bestP99 ? { p50: round(ours.p50 / bestP50), p99: round(ours.p99 / bestP99) } : null,
      });
    }
  } finally {
    for (const peer of peers) await peer.close();
  }
  results.peers = { turn: 'append 1 user message, read the conversation, append 3 (tool call, tool result, answer)', pool: 20, levels, notDriven };
}

/** Faults, both designs. */
async function measureFaults(b: Bench): Promise<void> {
  const { stack, database, results, startWorker, stopWorker } = b;
  await stopWorker(); // the fault scenarios run their own worker processes on their own queue
  results.faults = await runFaults(stack, database, log, { onlyConcurrentTriggers: quick && !chosen });
  await startWorker();
}

/** Wake after eviction. */
async function measureWake(b: Bench): Promise<void> {
  const { config, database, sessions, results, historyOf, newSession, startWorker, stopWorker } = b;
  log(`wake: lineages after ${SIZES.ages.join(', ')} compactions and one at its run's worst point, continue-as-new every ${SIZES.period}`);
  const tuned = await SessionsClient.connect({ config, database, settings: { maxCompactionsPerRun: SIZES.period } });
  const ages = [...SIZES.ages, SIZES.period - 1];
  const wakeIds = ages.map((n, i) => `bench-wake-${i === SIZES.ages.length ? 'worst' : n}`);
  // A long lineage is seeded (bench/seed-lineage.ts: the worker's compaction activity called in this process, no
  // workflow yet) up to its last REMEMBERED_ANSWERS compactions, which take the real path: the workflow then starts
  // from Postgres's head and carries as many answers as a lineage built wholly through it.
  const builds = await Promise.all(
    wakeIds.map(async (id, i) => {
      const plan = wakeBuildPlan(ages[i], SIZES.period, REMEMBERED_ANSWERS);
      const started = now();
      let head = id;
      let seedMs = 0;
      if (plan.seeded > 0) {
        const seeded = await seedLineage(
          { config, database, sessionId: id, compactions: plan.seeded, initial: transcript(40, id) },
          (c) => transcript(6, `s${c}`),
          log,
        );
        head = seeded.headSessionId;
        seedMs = seeded.ms;
        log(`wake: ${id} seeded with ${plan.seeded} compactions in ${round(seedMs / 1000, 1)} s`);
      } else await newSession(id, 40, tuned);
      for (let c = 0; c < plan.real; c++) {
        head = (await tuned.compact(head, { force: true })).sessionId;
        await tuned.append(head, transcript(6, `w${c}`));
      }
      return { ...plan, seedSeconds: round(seedMs / 1000, 1), buildSeconds: round((now() - started) / 1000, 1) };
    }),
  );
  await tuned.close();
  const wake: Record<string, number[]> = Object.fromEntries(wakeIds.map((id) => [id, []]));
  for (let s = 0; s < SIZES.wakeSamples; s++) {
    await stopWorker();
    await startWorker(); // an empty cache: every lineage replays its current run on wake
    await sessions.operator.state(b.latencyIds[0]); // the worker's first workflow task (its V8 context, its connections) is not a wake
    for (const id of s % 2 ? [...wakeIds].reverse() : wakeIds) wake[id].push((await timed(() => sessions.operator.state(id)))[0]);
  }
  results.wake = {
    maxCompactionsPerRun: SIZES.period,
    lineages: await Promise.all(
      wakeIds.map(async (id, i) => ({
        compactions: ages[i],
        worstPointOfRun: i === SIZES.ages.length,
        currentRunEvents: (await historyOf(lineageWorkflowId(id))).events,
        build: builds[i],
        ms: summary(wake[id]),
        samples: wake[id].map((x) => round(x)),
      })),
    ),
  };
}

/** Memory per cached idle lineage, cache = number of lineages, reuseV8Context on/off. */
/** An agent on Temporal, two ways (bench/temporal-agents.ts): history per model call, and the head per call. */
async function measureAgents(b: Bench): Promise<void> {
  // The plain way's history pages pass gRPC's default 4 MB.
  const connection = await Connection.connect({ address: b.config.temporal.address, channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 } });
  try {
    b.results.agents = await measureAgentsOnTemporal({
      temporalAddress: b.config.temporal.address,
      temporal: new Client({ connection }),
      sessions: b.sessions,
      quick,
      log: (line) => console.log(line),
    });
  } finally {
    await connection.close();
  }
}

/** Tries a state query at most this many times while it times out (the memory section). */
const STATE_QUERY_TRIES = 6;

/**
 * The state query, sent again while it times out: a worker loading thousands of lineages into
 * its cache answers some queries after their deadline (issue 41 §4; the full run once failed
 * there). Bounded: STATE_QUERY_TRIES tries, 1, 2, 4, 8, 16 s apart; any other error, or the
 * last timeout, is thrown. Each retry is counted in `retries`.
 */
async function stateWithRetry(sessions: SessionsClient, id: string, retries: { count: number }): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await sessions.operator.state(id);
      return;
    } catch (error) {
      const timedOut = isTransientConnectionError(error) || [...causeChain(error)].some((e) => /deadline|timed? ?out/i.test(String(e.message ?? '')));
      if (!timedOut || attempt >= STATE_QUERY_TRIES) throw error;
      retries.count++;
      await new Promise((r) => setTimeout(r, 1000 * 2 ** (attempt - 1)));
    }
  }
}

async function measureMemory(b: Bench): Promise<void> {
  const { sessions, results, startWorker, stopWorker } = b;
  log(`memory: ${SIZES.idle} idle lineages, cache set to ${SIZES.idle}`);
  const idleIds = Array.from({ length: SIZES.idle }, (_, i) => `bench-idle-${i}`);
  await inBatches(idleIds, 25, async (id) => void (await sessions.createSession({ sessionId: id })));
  const memory: Record<string, unknown> = {};
  // reuseV8Context off costs about 3x the memory: compared on a smaller set (so the machine, shared, is not pushed
  // past its RAM), then the default (on) at the full count for the 4 GiB target.
  const compareCount = Math.min(SIZES.idle, 2000);
  for (const [label, reuse, count] of [
    ['reuseV8Context', true, compareCount],
    ['noReuseV8Context', false, compareCount],
    ['reuseV8ContextFull', true, SIZES.idle],
  ] as const) {
    if (label === 'reuseV8ContextFull' && count === compareCount) continue;
    const some = idleIds.slice(0, count);
    await stopWorker();
    const w = await startWorker({ WORKER_MAX_CACHED_WORKFLOWS: String(count), BENCH_WORKER_OPTIONS: JSON.stringify({ reuseV8Context: reuse }) });
    const fresh = rssKiB(w.pid!);
    const retries = { count: 0 };
    const [loadMs] = await timed(() => inBatches(some, 25, (id) => stateWithRetry(sessions, id, retries))); // each replays into the cache
    const loaded = rssKiB(w.pid!);
    const loadRetries = retries.count;
    // Touch them all again: if any had been evicted, this would replay it (cache check).
    const [touchMs] = await timed(() => inBatches(some, 25, (id) => stateWithRetry(sessions, id, retries)));
    memory[label] = {
      lineages: count,
      cacheSize: count,
      freshWorkerMiB: round(fresh / 1024, 1),
      withIdleLineagesMiB: round(loaded / 1024, 1),
      kibPerCachedLineage: round((loaded - fresh) / count, 1),
      loadSeconds: round(loadMs / 1000, 1),
      secondTouchSeconds: round(touchMs / 1000, 1),
      // State queries that timed out and were sent again, while loading and at the second touch.
      stateQueryRetries: { load: loadRetries, secondTouch: retries.count - loadRetries },
      within4GiB: rssKiB(w.pid!) < 4 * 1024 * 1024,
    };
  }
  results.memory = { idleLineages: SIZES.idle, cacheSize: SIZES.idle, ...memory };
  await stopWorker();
  await startWorker();
}
/** Does this SDK and the dev server dispatch activities eagerly? The same-shape floor with and without. */
async function measureEager(_llm: unknown) {
  log('eager activity dispatch: the same-shape floor on the default dev server and on one with it enabled, workers with and without eager slots');
  const out: Record<string, unknown> = {};
  for (const enabled of [false, true]) {
    const stack = await startBenchStack(`bench-eager-${enabled}`, {
      temporalArgs: enabled ? ['--dynamic-config-value', 'system.enableActivityEagerExecution=true'] : [],
    });
    const on = await spawnBenchProcess('aux-worker.ts', { ...stack.env, BENCH_AUX_QUEUE: 'eager-on' }, { ready: 'aux worker ready' });
    const off = await spawnBenchProcess(
      'aux-worker.ts',
      { ...stack.env, BENCH_AUX_QUEUE: 'eager-off', BENCH_WORKER_OPTIONS: JSON.stringify({ maxEagerActivityReservationsPerWorkflowTask: 0 }) },
      { ready: 'aux worker ready' },
    );
    const connection = await Connection.connect({ address: stack.config.temporal.address });
    const client = new Client({ connection });
    try {
      const handles: Record<string, WorkflowHandle> = {};
      for (const q of ['eager-on', 'eager-off']) {
        handles[q] = await client.workflow.start('sameShapeWorkflow', { workflowId: `shape-${q}`, taskQueue: q });
        await handles[q].executeUpdate(sameShapeUpdate, { args: [0] });
      }
      const lat: Record<string, number[]> = { 'eager-on': [], 'eager-off': [] };
      const eagerBefore = await promCounter(stack.temporal.metricsUrl, EAGER_METRIC);
      for (let r = 0; r < SIZES.eagerRounds; r++) {
        for (const q of r % 2 ? ['eager-on', 'eager-off'] : ['eager-off', 'eager-on'])
          lat[q].push((await timed(() => handles[q].executeUpdate(sameShapeUpdate, { args: [r] })))[0]);
      }
      out[enabled ? 'serverEnabled' : 'serverDefault'] = {
        metricLines: await promLines(stack.temporal.metricsUrl, EAGER_METRIC),
        eagerDispatchesCounted: (await promCounter(stack.temporal.metricsUrl, EAGER_METRIC)) - eagerBefore,
        workerWithEagerSlots: summary(lat['eager-on']),
        workerWithoutEagerSlots: summary(lat['eager-off']),
      };
    } finally {
      await connection.close();
      await stopProcess(on);
      await stopProcess(off);
      await stack.stop();
    }
  }
  return out;
}

/** The naive design (transcript in workflow state) in its own worker process, on a fresh server. */
async function measureNaive(results: Record<string, any>) {
  log('naive design: its own worker process on a fresh server; appends write the same Postgres rows as ours, then signal');
  const stack = await startBenchStack('bench-naive');
  const aux = await spawnBenchProcess('aux-worker.ts', { ...stack.env, BENCH_AUX_QUEUE: 'naive' }, { ready: 'aux worker ready' });
  const database = openDatabase(stack.config.databaseUrl, { max: 20 });
  await runMigrations(database);
  const connection = await Connection.connect({ address: stack.config.temporal.address });
  const temporal = new Client({ connection });
  const sessions = await SessionsClient.connect({ config: stack.config, database });
  const historyBytes = async (id: string) => historyToJSON(await temporal.workflow.getHandle(id).fetchHistory()).length;
  try {
    const start = async (id: string, messages: number) =>
      temporal.workflow.start('naiveSessionWorkflow', { workflowId: id, taskQueue: 'naive', args: [transcript(messages, id)] });
    const nIds = Array.from({ length: Math.min(SIZES.rounds, 100) }, (_, i) => `naive-lat-${i}`);
    const handles = [];
    for (const id of nIds) handles.push(await start(id, 40));
    const latencies: number[] = [];
    for (const h of handles) latencies.push((await timed(() => h.executeUpdate(naiveCompactUpdate)))[0]);
    const bytes: Record<string, number> = {};
    for (const size of [100, SIZES.bigTranscript]) {
      const h = await start(`naive-size-${size}`, size);
      const before = await historyBytes(h.workflowId);
      await h.executeUpdate(naiveCompactUpdate);
      bytes[size] = (await historyBytes(h.workflowId)) - before;
    }
    // Appends: the same Postgres rows as ours (through the same store), then the signal that puts them in workflow state.
    const appendHandles = await Promise.all(Array.from({ length: 10 }, (_, i) => start(`naive-app-${i}`, 40)));
    await Promise.all(appendHandles.map((h) => sessions.createSession({ sessionId: h.workflowId })));
    const appendLat: number[] = [];
    const [appendMs] = await timed(() =>
      inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => {
        const batch: ChatMessage[] = [{ role: 'user', content: `append ${i}` }];
        const h = appendHandles[i % 10];
        const [t] = await timed(async () => {
          await sessions.append(h.workflowId, batch);
          await h.signal(naiveAppendSignal, batch);
        });
        appendLat.push(t);
      }),
    );
    const compaction = summary(latencies);
    const appends = { perSecond: round(SIZES.appends / (appendMs / 1000)), ...summary(appendLat) };
    return {
      compaction,
      historyBytesPerCompactionByTranscriptSize: bytes,
      appends,
      historyBytesAfterAppends: await historyBytes(appendHandles[0].workflowId),
      ratios: {
        compactionP50OursOverNaive: results.latency ? round(results.latency.ours.p50 / compaction.p50) : null,
        historyBytesBigTranscriptNaiveOverOurs: results.cost
          ? round(bytes[SIZES.bigTranscript] / results.cost.historyBytesByTranscriptSize[SIZES.bigTranscript], 1)
          : null,
        appendsPerSecondOursOverNaive: results.appends ? round(results.appends.ours.alone.perSecond / appends.perSecond) : null,
      },
    };
  } finally {
    await sessions.close();
    await connection.close();
    await stopProcess(aux);
    await database.close();
    await stack.stop();
  }
}

const ms = (s: { p50: number; p99: number }) => `${s.p50} / ${s.p99} ms`;
function renderTable(r: Record<string, any>): string {
  const rows: Array<[string, string]> = [];
  const add = (a: string, b: unknown) => rows.push([a, String(b)]);
  const L = r.latency;
  add('floor (a): bare Update, p50 / p99', ms(L.floorA_bareUpdate));
  add('floor (b): same-shape Update (heartbeating activity, one transaction), p50 / p99', ms(L.floorB_sameShape));
  add('ours: compaction (instant summariser), without the read of the new head, p50 / p99', ms(L.ours));
  if (L.transcriptRead) add('ours: the read of the new head after it (what compact() adds), p50 / p99', ms(L.transcriptRead));
  add('reference design: compaction (instant summariser), p50 / p99', ms(L.reference));
  add('ours / floor (b), p50 (target <= 1.3) / p99', `${L.oursOverFloorB.p50} / ${L.oursOverFloorB.p99}`);
  add('floor (c): single-row INSERT transaction, 10 writers: per s, p50 / p99', `${r.floorC_insertTransaction.perSecond}/s, ${ms(r.floorC_insertTransaction)}`);
  if (r.split) {
    const S = r.split;
    add(
      `split (${S.matched.ours} compactions, ${S.matched.floorB} same-shape Updates, traced; load ${S.loadAverage1m}): ours / floor (b), p50 / p99`,
      `${ms(S.ours)} / ${ms(S.floorB)}; ${S.oursOverFloorB.p50} / ${S.oursOverFloorB.p99}`,
    );
    for (const p of S.parts)
      add(
        `split, ${p.part} (${p.owner}): ours p50 (share of ours' p50) / floor (b) p50`,
        `${p.oursP50 ?? '-'} ms${p.shareOfOursP50 === null ? '' : ` (${round(p.shareOfOursP50 * 100, 1)}%)`} / ${p.floorBP50 ?? '-'} ms`,
      );
    for (const t of Object.values<any>(S.subtotals)) add(`split, ${t.part}: ours p50 / floor (b) p50`, `${t.oursP50} ms / ${t.floorBP50 ?? '-'} ms`);
    add(
      "split: the local LLM's own delay; LLM calls, commit statements, other worker statements, client statements per compaction",
      `${S.fakeLlmDelayMs} ms; ${S.llmCallsPerCompaction}, ${S.commitStatementsPerCompaction}, ${S.otherWorkerStatementsPerCompaction}, ${S.clientStatementsPerCompaction}`,
    );
  }
  if (r.commit) {
    add('commit: statements (round trips) per compaction (target <= 2)', r.commit.commitStatementsPerCompaction);
    if (r.commit.ms) add('commit: own time p50 / p99', ms(r.commit.ms));
    if (r.commit.overFloorCTransaction)
      add(
        'commit: own time / one INSERT transaction (floor c), p50 / p99 (target <= 2)',
        `${r.commit.overFloorCTransaction.p50} / ${r.commit.overFloorCTransaction.p99}`,
      );
    add('round trips to Postgres per compaction (all statements)', r.commit.roundTripsPerCompaction);
  }
  if (r.contention) {
    const c = r.contention;
    for (const k of ['optimistic', 'adaptive'])
      add(
        `commit under ${c.appenders} appenders, ${k === 'optimistic' ? 'optimistic path first (before)' : 'adaptive path (after)'}: commit p50 / p99, commit_retries mean, compaction p50 / p99`,
        `${ms(c[k].commitMs)}, ${c[k].commitRetriesMean}, ${ms(c[k].compactionMs)}`,
      );
    add(
      `commit under ${c.appenders} appenders, adaptive / optimistic, p50 / p99`,
      `${c.commitAdaptiveOverOptimistic.p50} / ${c.commitAdaptiveOverOptimistic.p99}`,
    );
  }
  if (r.agents) {
    const A = r.agents;
    const T = A.plainTerminated;
    const plainMissing = T ? `terminated after ${T.afterModelCalls}` : 'not run';
    for (const [n, v] of Object.entries(A.historyBytesAfter) as [string, { lineage: number | null; plain: number | null }][])
      add(`agent on Temporal: history bytes after ${n} model calls, lineage / plain way`, `${v.lineage ?? '-'} / ${v.plain ?? plainMissing}`);
    for (const [n, v] of Object.entries(A.historyBytesOfCall) as [string, { lineage: number | null; plain: number | null }][])
      add(`agent on Temporal: history bytes of model call ${n}, lineage / plain way`, `${v.lineage ?? '-'} / ${v.plain ?? plainMissing}`);
    if (T)
      add(
        'agent on Temporal: plain way terminated by Temporal (history size limit): after model calls / history bytes (server count)',
        `${T.afterModelCalls} / ${T.historyBytes} (${T.serverHistorySizeBytes ?? '-'})`,
      );
    add(
      `agent on Temporal: model input tokens per call, compaction at ${A.compactAtTokens}: mean / last half mean / last half max (plain way: mean / last)`,
      `${A.headTokensPerCall.mean} / ${A.headTokensPerCall.meanLastHalf} / ${A.headTokensPerCall.maxLastHalf} (${A.plainInputTokensPerCall.mean} / ${A.plainInputTokensPerCall.last})`,
    );
  }
  if (r.cost) {
    add('history per compaction: events / bytes', `${r.cost.historyPerCompaction.events} / ${r.cost.historyPerCompaction.bytes}`);
    for (const [k, v] of Object.entries(r.cost.historyBytesByTranscriptSize)) add(`history bytes, compacting ${k} messages`, v);
    const b = r.cost.billable;
    add(
      `billable actions per compaction, ${b.streamSeconds} s streamed summary, TTL 60 s (target <= 5)`,
      `${b.total} (Update ${b.updates}, activity ${b.activityStarts}, heartbeats ${b.heartbeatsRecorded}, upserts ${b.searchAttributeUpserts + b.memoUpserts}, signals ${b.signals}, timers ${b.timers})`,
    );
    add('LLM tokens per compaction (audit rows): prompt / completion', `${r.cost.llmTokensPerCompaction.prompt} / ${r.cost.llmTokensPerCompaction.completion}`);
  }
  if (r.generations) {
    for (const layout of ['prefix', 'rendered'] as const) {
      const g = r.generations[layout];
      const gens = Object.keys(g.promptTokensAt);
      add(
        `summary prompt tokens at generations ${gens.join(' / ')}, ${layout} layout (audit rows; cached in brackets)`,
        gens.map((n) => `${g.promptTokensAt[n]} (${g.cachedTokensAt[n] ?? 0})`).join(' / '),
      );
      add(
        `summary prompt tokens not served by the cache at generations ${gens.join(' / ')}, ${layout} layout`,
        gens.map((n) => g.uncachedTokensAt[n]).join(' / '),
      );
      add(
        `share of summary prompt tokens a prefix cache served, ${layout} layout; of the agent's next call`,
        `${g.summaryCachedShare}; ${g.agentNextCallCachedShare}`,
      );
    }
  }
  for (const t of r.throughput ?? []) {
    const load = `${t.sessions} sessions x ${t.callers / t.sessions} callers`;
    add(
      `throughput, ours: ${load}`,
      `${t.ours.compactionsPerSecond} compactions/s, ${t.ours.answersPerSecond} answers/s, errors ${t.ours.errors}, forks ${t.ours.forks}`,
    );
    add(`throughput, floor (b) (same-shape Updates): ${load}`, `${t.floorB.answersPerSecond} answers/s, errors ${t.floorB.errors}`);
    add(`throughput, ours / floor (b), answers per s (target >= 0.8): ${load}`, t.oursOverFloorB);
    add(
      `throughput, reference design: ${load}`,
      `${t.reference.compactionsPerSecond} compactions/s, ${t.reference.answersPerSecond} answers/s, errors ${t.reference.errors}, forks ${t.reference.forks}`,
    );
  }
  if (r.appends) {
    const a = r.appends;
    add('appends, ours alone: per s, p50 / p99', `${a.ours.alone.perSecond}/s, ${ms(a.ours.alone)}`);
    add('appends, ours during compactions: per s, p50 / p99', `${a.ours.duringCompactions.perSecond}/s, ${ms(a.ours.duringCompactions)}`);
    add('appends, reference alone: per s, p50 / p99', `${a.reference.alone.perSecond}/s, ${ms(a.reference.alone)}`);
    add('appends, reference during compactions: per s, p50 / p99', `${a.reference.duringCompactions.perSecond}/s, ${ms(a.reference.duringCompactions)}`);
    add('appends ours / floor (c) throughput (target >= 0.5)', a.ratios.oursThroughputOverFloorC);
    const o = a.orderedFloor;
    if (o) {
      add('floor (c) again, beside floor (d): per s, p50 / p99', `${o.floorC.perSecond}/s, ${ms(o.floorC)}`);
      add(
        'floor (d): ordered append (session row locked, next seq), 10 writers, 1 message: per s, p50 / p99',
        `${o.singleMessage.floorD.perSecond}/s, ${ms(o.singleMessage.floorD)}`,
      );
      add('appends, ours, 1 message (same run): per s, p50 / p99', `${o.singleMessage.ours.perSecond}/s, ${ms(o.singleMessage.ours)}`);
      add('floor (d), 2-4 messages: per s, p50 / p99', `${o.severalMessages.floorD.perSecond}/s, ${ms(o.severalMessages.floorD)}`);
      add('appends, ours, 2-4 messages: per s, p50 / p99', `${o.severalMessages.ours.perSecond}/s, ${ms(o.severalMessages.ours)}`);
      add('appends ours / floor (d), 1 message; 2-4 messages (target >= 0.8)', `${o.ratios.singleOverFloorD}; ${o.ratios.severalOverFloorD}`);
      add(
        'appends ours / floor (c) (same section), 1 message; 2-4 messages (target >= 0.5 for several)',
        `${o.ratios.singleOverFloorC}; ${o.ratios.severalOverFloorC}`,
      );
      add('floor (d) / floor (c) (same section), 1 message', o.ratios.floorDSingleOverFloorC);
      if (o.profile?.functions)
        add(
          'append profile (2-4 messages, pg_stat_user_functions): self ms per append of the top functions',
          o.profile.functions
            .slice(0, 6)
            .map((f: any) => `${f.name} ${f.selfMsPerAppend}`)
            .join(', '),
        );
    }
    add('appends ours p99 during / alone (target <= 1.5)', a.ratios.oursP99DuringOverAlone);
    add(
      'token counting per appended message: estimate / real tokenizer (o200k, gpt-tokenizer, as appends use it); estimate / real tokens',
      `${a.tokenCounting.estimateUsPerMessage} / ${a.tokenCounting.realUsPerMessage} µs; ${a.tokenCounting.estimateOverRealTokens}`,
    );
  }
  for (const level of r.peers?.levels ?? []) {
    for (const [name, v] of Object.entries<any>(level.peers))
      add(`per turn, ${name}, ${level.concurrency} concurrent conversations: p50 / p99, turns per s`, `${ms(v)}, ${v.turnsPerSecond}/s`);
    if (level.oursOverBestPeer)
      add(
        `per turn, ours / best peer, ${level.concurrency} concurrent conversations, p50 / p99 (target <= 1)`,
        `${level.oursOverBestPeer.p50} / ${level.oursOverBestPeer.p99}`,
      );
  }
  for (const [name, why] of Object.entries<string>(r.peers?.notDriven ?? {})) add(`per turn, ${name}: not driven`, why);
  if (r.wake) {
    for (const l of r.wake.lineages)
      add(
        `wake after eviction, ${l.worstPointOfRun ? `worst point of a run (${l.compactions} compactions in it)` : `${l.compactions} compactions`}: p50 / p99 (target p99 <= 250)`,
        `${ms(l.ms)} (${l.currentRunEvents} events${l.build?.seeded ? `; seeded ${l.build.seeded}, then ${l.build.real} through the workflow, built in ${l.build.buildSeconds} s` : ''})`,
      );
  }
  if (r.workers) {
    const w = r.workers;
    for (const n of Object.keys(w.byWorkers))
      add(
        `workers: ours at ${w.sessions} sessions x ${w.callers / w.sessions} callers, ${n} worker process(es): answers / compactions per s (mean of ${w.order.filter((x: number) => String(x) === n).length} rounds); over 1 worker`,
        `${w.byWorkers[n].answersPerSecond} / ${w.byWorkers[n].compactionsPerSecond}; ${w.ratioOverOne[n]}`,
      );
    for (const round_ of w.rounds)
      add(
        `workers: cores used during the round with ${round_.workers} worker process(es)`,
        Object.entries<number>(round_.cores)
          .map(([role, cores]) => `${role} ${cores}`)
          .join(', '),
      );
  }
  if (r.memory) {
    for (const k of ['reuseV8Context', 'noReuseV8Context', 'reuseV8ContextFull']) {
      const m = r.memory[k];
      if (m)
        add(
          `memory, ${k === 'noReuseV8Context' ? 'reuseV8Context off' : 'reuseV8Context on (default)'}, ${m.lineages} idle lineages, cache ${m.cacheSize}: per lineage, worker RSS`,
          `${m.kibPerCachedLineage} KiB, ${m.withIdleLineagesMiB} MiB${m.stateQueryRetries ? ` (state queries sent again after a timeout: ${m.stateQueryRetries.load} loading, ${m.stateQueryRetries.secondTouch} touching again)` : ''}`,
        );
    }
  }
  if (r.rungs) {
    for (const [rung, f] of Object.entries<any>(r.rungs))
      add(
        `rung ${rung}: compactions / tokens shed / tokens paid / cached share`,
        `${f.compactions} / ${f.tokensShed} / ${f.tokensPaid} / ${f.cachedShare ?? 'n/a'}`,
      );
  }
  if (r.eager) {
    for (const [k, v] of Object.entries<any>(r.eager))
      add(
        `eager dispatch, ${k}: eager dispatches counted; floor (b) with / without eager slots p50`,
        `${v.eagerDispatchesCounted}; ${v.workerWithEagerSlots.p50} / ${v.workerWithoutEagerSlots.p50} ms`,
      );
  }
  if (r.naive) {
    add('naive: compaction p50 / p99', ms(r.naive.compaction));
    add('naive: appends (Postgres row + signal) per s, p99', `${r.naive.appends.perSecond}/s, ${r.naive.appends.p99} ms`);
    for (const [k, v] of Object.entries(r.naive.historyBytesPerCompactionByTranscriptSize)) add(`naive: history bytes, compacting ${k} messages`, v);
  }
  const table = ['| measure | value |', '| --- | --- |', ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join('\n');
  const faults = r.faults
    ? [
        '',
        '| scenario | design | callers: compacted / unchanged / error | committed | LLM calls per commit | forks | orphans | appends acked | lost | duplicated |',
        '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...r.faults.map(
          (f: any) =>
            `| ${f.scenario} | ${f.design} | ${f.compacted} / ${f.unchanged} / ${f.errors} | ${f.committedCompactions} | ${f.llmCallsPerCommit === null ? 'n/a' : round(f.llmCallsPerCommit)} | ${f.forks} | ${f.orphans} | ${f.appendsAcknowledged} | ${f.lostMessages} | ${f.duplicatedMessages} |`,
        ),
      ].join('\n')
    : '';
  return table + '\n' + faults;
}

// `--render=<file>`: print the tables of a results file written earlier, without running anything.
const render = process.argv.find((a) => a.startsWith('--render='))?.slice('--render='.length);
if (render) console.log(renderTable(JSON.parse(readFileSync(render, 'utf8'))));
else
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
