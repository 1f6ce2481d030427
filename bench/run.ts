/**
 * `npm run bench`: measures the service on the real stack (embedded Postgres, the Temporal dev
 * server, a worker process, the local OpenAI-compatible server answering at once) and, in the
 * same run, the floor it cannot beat and a naive Temporal design a user might write instead.
 * Prints a markdown table and writes JSON to bench/results/. Never part of `npm test`.
 *
 *   npm run bench                 full sizes (several minutes on 2 cores)
 *   npm run bench -- --quick      small sizes, to check the benchmark itself
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { sql } from 'drizzle-orm';
import { createOpenAiSummariser } from '../src/activities/summariser';
import { SessionsClient } from '../src/client';
import type { ChatMessage } from '../src/compaction/messages';
import { PROJECT_ROOT } from '../src/config';
import { openDatabase, runMigrations } from '../src/db/database';
import { lineageWorkflowId } from '../src/workflows/contract';
import { startScratchStack } from '../test/support/scratch-stack';
import { spawnWorkerProcess } from '../test/support/worker-process';
import { createNaiveActivities } from './naive-activities';
import { naiveAppendSignal, naiveCompactUpdate, noopUpdate } from './workflows';

const quick = process.argv.includes('--quick');
const SIZES = quick
  ? { floor: 100, compactions: 50, costCompactions: 3, throughputSessions: 20, callers: 10, appends: 200, idle: 300, longLineage: 50, wakeSamples: 3, bigTranscript: 2000 }
  : { floor: 300, compactions: 100, costCompactions: 10, throughputSessions: 200, callers: 10, appends: 2000, idle: 10_000, longLineage: 1000, wakeSamples: 5, bigTranscript: 10_000 };

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
const log = (line: string) => console.error(`[bench] ${line}`);

// ---------------------------------------------------------------------------------------

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const scratch = await startScratchStack('session-bench');
  const { env, config, llm } = scratch;
  const tmp = scratch.dir;
  llm.setDefault({ text: 'Goal: continue. Completed: the summarised work.' });
  const database = openDatabase(config.databaseUrl, { max: 20 });
  await runMigrations(database);

  const bundlePath = path.join(tmp, 'bundle.js');
  const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;
  writeFileSync(bundlePath, (await bundleWorkflowCode({ workflowsPath: path.join(PROJECT_ROOT, 'src/workflows/index.ts'), logger: quiet })).code);

  let workerProcess: ChildProcess | undefined;
  const startWorkerProcess = async () => {
    workerProcess = await spawnWorkerProcess(env, { workflowBundlePath: bundlePath, echo: Boolean(process.env.BENCH_TRACE) });
    return workerProcess;
  };
  const stopWorkerProcess = async () => {
    if (!workerProcess) return;
    const exited = new Promise((r) => workerProcess!.once('exit', r));
    workerProcess.kill('SIGTERM');
    await exited;
    workerProcess = undefined;
  };
  await startWorkerProcess();

  // The floor and the naive design run on a second worker, in this process.
  const nativeConnection = await NativeConnection.connect({ address: config.temporal.address });
  const summariser = createOpenAiSummariser(config.llm, { stallTimeoutMs: 60_000, requestTimeoutMs: 60_000 });
  const auxWorker = await Worker.create({
    connection: nativeConnection,
    taskQueue: 'bench-aux',
    workflowBundle: { code: (await bundleWorkflowCode({ workflowsPath: path.join(__dirname, 'workflows.ts'), logger: quiet })).code },
    activities: createNaiveActivities(summariser),
  });
  const auxRunning = auxWorker.run();

  const connection = await Connection.connect({ address: config.temporal.address });
  const temporal = new Client({ connection });
  const sessions = await SessionsClient.connect({ config, database });
  const results: Record<string, unknown> = { quick, sizes: SIZES, machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version } };
  const historyOf = async (workflowId: string) => {
    const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
    return { events: history.events?.length ?? 0, bytes: historyToJSON(history).length };
  };
  const newSession = async (id: string, messages: number) => {
    await sessions.createSession({ sessionId: id });
    for (let i = 0; i < messages; i += 1000) await sessions.append(id, transcript(Math.min(1000, messages - i), id));
  };

  try {
    // 1. The floor -----------------------------------------------------------------------
    log('floor: bare Update round trip and one Postgres transaction');
    const floorHandle = await temporal.workflow.start('floorWorkflow', { workflowId: 'bench-floor', taskQueue: 'bench-aux' });
    await floorHandle.executeUpdate(noopUpdate, { args: [0] });
    const updateRoundTrips: number[] = [];
    for (let i = 0; i < SIZES.floor; i++) updateRoundTrips.push((await timed(() => floorHandle.executeUpdate(noopUpdate, { args: [i] })))[0]);
    await newSession('bench-floor-row', 1);
    const transactions: number[] = [];
    for (let i = 0; i < SIZES.floor; i++) {
      transactions.push(
        (await timed(() => database.db.transaction(async (tx) => void (await tx.execute(sql`update lineages set appended_count = appended_count where id = 'bench-floor-row'`)))))[0],
      );
    }
    const floor = { update: summary(updateRoundTrips), transaction: summary(transactions), sumP50: round(percentile(updateRoundTrips, 50) + percentile(transactions, 50)) };
    results.floor = floor;

    // 2. Compaction overhead ---------------------------------------------------------------
    log(`compaction latency: ${SIZES.compactions} compactions with an instant summariser`);
    const ids = Array.from({ length: SIZES.compactions }, (_, i) => `bench-lat-${i}`);
    await inBatches(ids, 10, (id) => newSession(id, 40));
    for (const id of ids) await sessions.state(id); // workflows started and cached
    const latencies: number[] = [];
    for (const id of ids) {
      const [ms, result] = await timed(() => sessions.compact(id));
      if (result.outcome !== 'compacted') throw new Error(`unexpected ${result.outcome}: ${result.reason}`);
      latencies.push(ms);
    }
    const compaction = summary(latencies);
    if (process.env.BENCH_TRACE) {
      const h = await temporal.workflow.getHandle(lineageWorkflowId(ids[ids.length - 1])).fetchHistory();
      const t0 = Number(h.events![0].eventTime!.seconds) * 1000 + h.events![0].eventTime!.nanos! / 1e6;
      for (const e of h.events!) console.error(String(e.eventId).padStart(3), (Number(e.eventTime!.seconds) * 1000 + e.eventTime!.nanos! / 1e6 - t0).toFixed(1).padStart(8), Object.keys(e).find((k) => k.endsWith('Attributes')));
    }
    results.compaction = { ...compaction, p50OverFloor: round(compaction.p50 / floor.sumP50) };

    // 3. Cost per compaction in history -------------------------------------------------
    log('history cost per compaction');
    await newSession('bench-cost', 40);
    const costBefore = await historyOf(lineageWorkflowId('bench-cost'));
    let costHead = 'bench-cost';
    for (let i = 0; i < SIZES.costCompactions; i++) {
      costHead = (await sessions.compact(costHead)).sessionId;
      await sessions.append(costHead, transcript(40, `cost${i}`));
    }
    const costAfter = await historyOf(lineageWorkflowId('bench-cost'));
    const perCompaction = { events: round((costAfter.events - costBefore.events) / SIZES.costCompactions, 1), bytes: round((costAfter.bytes - costBefore.bytes) / SIZES.costCompactions, 0) };
    const bytesBySize: Record<string, number> = {};
    for (const size of [100, SIZES.bigTranscript]) {
      const id = `bench-size-${String(size).padStart(5, '0')}`;
      await newSession(id, size);
      const before = await historyOf(lineageWorkflowId(id));
      await sessions.compact(id, { requestId: 'bench-fixed-length-id' });
      bytesBySize[size] = (await historyOf(lineageWorkflowId(id))).bytes - before.bytes;
    }
    results.costPerCompaction = { ...perCompaction, historyBytesByTranscriptSize: bytesBySize };

    // 4. Throughput ------------------------------------------------------------------------
    log(`throughput: ${SIZES.throughputSessions} sessions x ${SIZES.callers} concurrent callers`);
    const tIds = Array.from({ length: SIZES.throughputSessions }, (_, i) => `bench-tp-${i}`);
    await inBatches(tIds, 20, (id) => newSession(id, 40));
    let errors = 0;
    const outcomes: Record<string, number> = {};
    const [tpMs] = await timed(() =>
      Promise.all(
        tIds.flatMap((id) =>
          Array.from({ length: SIZES.callers }, () =>
            sessions.compact(id).then(
              (r) => void (outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1),
              () => void errors++,
            ),
          ),
        ),
      ),
    );
    const committed = Number(((await database.db.execute(sql`select count(*) as n from compactions where outcome = 'compacted' and lineage_id like 'bench-tp-%'`)).rows[0] as { n: string }).n);
    const audit = await sessions.audit();
    results.throughput = {
      sessions: SIZES.throughputSessions,
      callers: SIZES.throughputSessions * SIZES.callers,
      seconds: round(tpMs / 1000),
      compactionsPerSecond: round(committed / (tpMs / 1000)),
      answersPerSecond: round((SIZES.throughputSessions * SIZES.callers) / (tpMs / 1000)),
      outcomes,
      forks: audit.forks,
      errors,
      updateLimitFallbacks: sessions.stats.updateLimitFallbacks,
    };

    // 5. Appends ---------------------------------------------------------------------------
    log(`appends: ${SIZES.appends} single-message appends, 10 writers, alone and during compactions`);
    const appendRun = async (target: string[], during?: () => Promise<void>) => {
      const lat: number[] = [];
      let stop = false;
      const background = during ? (async () => { while (!stop) await during(); })() : undefined;
      const [ms] = await timed(() => inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => {
        const [t] = await timed(() => sessions.append(target[i % target.length], [{ role: 'user', content: `append ${i}` }]));
        lat.push(t);
      }));
      stop = true;
      await background;
      return { perSecond: round(SIZES.appends / (ms / 1000)), ...summary(lat) };
    };
    const aIds = Array.from({ length: 10 }, (_, i) => `bench-app-${i}`);
    await inBatches(aIds, 10, (id) => newSession(id, 40));
    const appendsAlone = await appendRun(aIds);
    let k = 0;
    const appendsDuring = await appendRun(aIds, async () => {
      const id = aIds[k++ % aIds.length];
      await sessions.compact((await sessions.transcript(id)).sessionId, { force: true });
    });
    results.appends = { alone: appendsAlone, duringCompactions: appendsDuring };

    // 6. Scale: idle sessions and wake latency ------------------------------------------
    log(`scale: ${SIZES.idle} idle sessions on a fresh worker`);
    await stopWorkerProcess();
    await startWorkerProcess();
    const rssBefore = rssKiB(workerProcess!.pid!);
    const idleIds = Array.from({ length: SIZES.idle }, (_, i) => `bench-idle-${i}`);
    await inBatches(idleIds, 25, async (id) => void (await sessions.createSession({ sessionId: id })));
    await inBatches(idleIds, 25, async (id) => void (await sessions.state(id))); // each has run its first task: cached
    const rssAfter = rssKiB(workerProcess!.pid!);
    log(`wake latency: lineages with 1 and ${SIZES.longLineage} prior compactions`);
    const shortIds = Array.from({ length: SIZES.wakeSamples }, (_, i) => `bench-wake-short-${i}`);
    for (const id of shortIds) {
      await newSession(id, 40);
      await sessions.compact(id);
    }
    // Continue-as-new every 201 compactions: after 1,000 the current run holds 196 of them,
    // close to the most a run ever replays (a lucky multiple of the period would hold none).
    const longClient = await SessionsClient.connect({ config, database, settings: { maxCompactionsPerRun: 201 } });
    await longClient.createSession({ sessionId: 'bench-wake-long' });
    await longClient.append('bench-wake-long', transcript(40, 'long'));
    let longHead = 'bench-wake-long';
    for (let i = 0; i < SIZES.longLineage; i++) {
      longHead = (await longClient.compact(longHead, { force: true })).sessionId;
      await longClient.append(longHead, transcript(6, `l${i}`));
    }
    await longClient.close();
    const longHistory = await historyOf(lineageWorkflowId('bench-wake-long'));
    // Evict everything: a new worker process has an empty cache and must replay on wake.
    await stopWorkerProcess();
    await startWorkerProcess();
    const wakeShort: number[] = [];
    for (const id of shortIds) wakeShort.push((await timed(() => sessions.state(id)))[0]);
    const [wakeLong] = await timed(() => sessions.state('bench-wake-long'));
    const wakeLongAgain = (await timed(() => sessions.state('bench-wake-long')))[0];
    results.scale = {
      idleSessions: SIZES.idle,
      workerRssMiB: { freshWorker: round(rssBefore / 1024, 1), withIdleSessions: round(rssAfter / 1024, 1) },
      kibPerCachedSession: round((rssAfter - rssBefore) / SIZES.idle, 2),
      wakeAfter1CompactionMs: summary(wakeShort),
      wakeAfterManyCompactionsMs: { compactions: SIZES.longLineage, firstTouch: round(wakeLong), cached: round(wakeLongAgain), currentRunEvents: longHistory.events },
    };

    // 7. The naive design ------------------------------------------------------------------
    log('naive design: transcript in workflow state, appends by signal');
    const naiveStart = async (id: string, messages: number) =>
      temporal.workflow.start('naiveSessionWorkflow', { workflowId: id, taskQueue: 'bench-aux', args: [transcript(messages, id)] });
    const nIds = Array.from({ length: SIZES.compactions }, (_, i) => `naive-lat-${i}`);
    const nHandles = [];
    for (const id of nIds) nHandles.push(await naiveStart(id, 40));
    const naiveLatencies: number[] = [];
    for (const h of nHandles) naiveLatencies.push((await timed(() => h.executeUpdate(naiveCompactUpdate)))[0]);
    const naiveBytes: Record<string, number> = {};
    for (const size of [100, SIZES.bigTranscript]) {
      const h = await naiveStart(`naive-size-${String(size).padStart(5, '0')}`, size);
      const before = await historyOf(h.workflowId);
      await h.executeUpdate(naiveCompactUpdate);
      naiveBytes[size] = (await historyOf(h.workflowId)).bytes - before.bytes;
    }
    const naiveAppendHandles = await Promise.all(Array.from({ length: 10 }, (_, i) => naiveStart(`naive-app-${i}`, 40)));
    const naiveAppendLat: number[] = [];
    const [naiveAppendMs] = await timed(() =>
      inBatches(Array.from({ length: SIZES.appends }), 10, async (_x, i) => {
        const [t] = await timed(() => naiveAppendHandles[i % 10].signal(naiveAppendSignal, [{ role: 'user', content: `append ${i}` }]));
        naiveAppendLat.push(t);
      }),
    );
    const naiveHistory = await historyOf(naiveAppendHandles[0].workflowId);
    const naiveCompaction = summary(naiveLatencies);
    results.naive = {
      compaction: naiveCompaction,
      historyBytesPerCompactionByTranscriptSize: naiveBytes,
      appends: { perSecond: round(SIZES.appends / (naiveAppendMs / 1000)), ...summary(naiveAppendLat) },
      historyBytesAfterAppends: naiveHistory.bytes,
    };
    results.ratios = {
      compactionP50OursOverNaive: round(compaction.p50 / naiveCompaction.p50),
      historyBytesBigTranscriptNaiveOverOurs: round(naiveBytes[SIZES.bigTranscript] / bytesBySize[SIZES.bigTranscript], 1),
      appendsPerSecondOursOverNaive: round(appendsAlone.perSecond / (SIZES.appends / (naiveAppendMs / 1000))),
    };
  } finally {
    await sessions.close();
    await stopWorkerProcess();
    auxWorker.shutdown();
    await auxRunning;
    await connection.close();
    await nativeConnection.close();
    await database.close();
    await scratch.stop();
  }

  mkdirSync(path.join(__dirname, 'results'), { recursive: true });
  const file = path.join(__dirname, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}${quick ? '-quick' : ''}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderTable(results as never));
  console.log(`\nJSON: ${path.relative(PROJECT_ROOT, file)}`);
}

function renderTable(r: any): string {
  const rows: Array<[string, string]> = [
    ['floor: bare Update round trip p50', `${r.floor.update.p50} ms`],
    ['floor: one Postgres transaction p50', `${r.floor.transaction.p50} ms`],
    ['compaction (instant summariser) p50 / p95 / p99', `${r.compaction.p50} / ${r.compaction.p95} / ${r.compaction.p99} ms`],
    ['compaction p50 / floor (target <= 2)', `${r.compaction.p50OverFloor}`],
    ['history events per compaction (target <= 12)', `${r.costPerCompaction.events}`],
    ['history bytes per compaction', `${r.costPerCompaction.bytes}`],
    ...Object.entries(r.costPerCompaction.historyBytesByTranscriptSize).map(([k, v]) => [`history bytes, compacting ${k} messages`, `${v}`] as [string, string]),
    [`throughput: ${r.throughput.sessions} sessions x ${r.throughput.callers / r.throughput.sessions} callers`, `${r.throughput.compactionsPerSecond} compactions/s, ${r.throughput.answersPerSecond} answers/s`],
    ['throughput: forks / errors', `${r.throughput.forks} / ${r.throughput.errors}`],
    ['appends alone: msgs/s, p99', `${r.appends.alone.perSecond}/s, ${r.appends.alone.p99} ms`],
    ['appends during compactions: msgs/s, p99', `${r.appends.duringCompactions.perSecond}/s, ${r.appends.duringCompactions.p99} ms`],
    [`worker memory per cached idle session (${r.scale.idleSessions})`, `${r.scale.kibPerCachedSession} KiB`],
    ['wake after eviction, 1 prior compaction (p50)', `${r.scale.wakeAfter1CompactionMs.p50} ms`],
    [`wake after eviction, ${r.scale.wakeAfterManyCompactionsMs.compactions} prior compactions`, `${r.scale.wakeAfterManyCompactionsMs.firstTouch} ms (current run: ${r.scale.wakeAfterManyCompactionsMs.currentRunEvents} events)`],
    ['naive: compaction p50', `${r.naive.compaction.p50} ms`],
    ...Object.entries(r.naive.historyBytesPerCompactionByTranscriptSize).map(([k, v]) => [`naive: history bytes, compacting ${k} messages`, `${v}`] as [string, string]),
    ['naive: appends by signal msgs/s, p99', `${r.naive.appends.perSecond}/s, ${r.naive.appends.p99} ms`],
    ['ratio: compaction p50, ours / naive', `${r.ratios.compactionP50OursOverNaive}`],
    [`ratio: history bytes compacting ${r.sizes.bigTranscript} messages, naive / ours`, `${r.ratios.historyBytesBigTranscriptNaiveOverOurs}`],
    ['ratio: appends/s, ours / naive', `${r.ratios.appendsPerSecondOursOverNaive}`],
  ];
  return ['| measure | value |', '| --- | --- |', ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join('\n');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
