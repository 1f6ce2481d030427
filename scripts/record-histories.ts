/**
 * Re-records the replay fixtures in test/replay/histories: runs each significant path of
 * the session workflow against a fresh local stack (embedded Postgres, the Temporal dev
 * server, the worker, the local OpenAI-compatible test server) and saves each history with
 * historyToJSON. Run it only when a change to workflow code is meant to change histories
 * (see docs/development.md, "Changing workflow code"); never to make a failing replay test pass.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { SessionsClient } from '../src/client';
import { PROJECT_ROOT } from '../src/config';
import { openDatabase } from '../src/db/database';
import { closeSignal, compactSignal, lineageWorkflowId } from '../src/workflows/contract';
import { createSessionWorker } from '../src/worker';
import { conversation } from '../test/support/conversation';
import { startScratchStack } from '../test/support/scratch-stack';

export const HISTORIES_DIR = path.join(PROJECT_ROOT, 'test/replay/histories');

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const scratch = await startScratchStack('record-histories', { env: { COMPACTION_LEASE_TTL_MS: '3000', COMPACTION_STALL_TIMEOUT_MS: '30000' } });
  const { config, llm } = scratch;
  const database = openDatabase(config.databaseUrl);
  const nativeConnection = await NativeConnection.connect({ address: config.temporal.address });
  let silenceFirstAttempt = false;
  let failAfterCommit = false;
  const sessionWorker = await createSessionWorker({
    config,
    connection: nativeConnection,
    database,
    log: () => undefined,
    heartbeat: (details) => {
      // An attempt whose commit landed but whose report is lost: it fails for good after committing.
      if (failAfterCommit && (details as { phase?: string }).phase === 'committed') {
        throw ApplicationFailure.nonRetryable('the attempt was lost after its commit', 'SummariserAuthError');
      }
      if (!silenceFirstAttempt || Context.current().info.attempt > 1) Context.current().heartbeat(details);
    },
  });
  const running = sessionWorker.run();
  const settings = { retryInitialIntervalMs: 200, retryMaximumIntervalMs: 500, maxAttempts: 3 };
  const client = await SessionsClient.connect({ config, database, settings });
  const canClient = await SessionsClient.connect({ config, database, settings: { ...settings, maxCompactionsPerRun: 1 } });
  const idleClient = await SessionsClient.connect({ config, database, settings: { ...settings, idleTimeoutMs: 1000 } });
  const connection = await Connection.connect({ address: config.temporal.address });
  const temporal = new Client({ connection });
  const recorded: string[] = [];

  async function session(id: string, c = client, mode: 'rotate' | 'in_place' = 'rotate') {
    await c.createSession({ sessionId: id, source: 'replay', mode });
    await c.append(id, conversation(12));
    return id;
  }
  async function save(name: string, id: string, options: { close?: boolean } = {}) {
    const handle = temporal.workflow.getHandle(lineageWorkflowId(id));
    if (options.close !== false) await handle.signal(closeSignal);
    await handle.result();
    // Every run of the chain (continue-as-new starts new runs).
    const runs: string[] = [];
    for await (const execution of temporal.workflow.list({ query: `WorkflowId = '${lineageWorkflowId(id)}'` })) runs.push(execution.runId);
    let index = 0;
    for (const runId of runs.reverse()) {
      const history = await temporal.workflow.getHandle(lineageWorkflowId(id), runId).fetchHistory();
      const file = `${name}${runs.length > 1 ? `.run${++index}` : ''}.json`;
      writeFileSync(path.join(HISTORIES_DIR, file), historyToJSON(history));
      recorded.push(file);
    }
  }

  rmSync(HISTORIES_DIR, { recursive: true, force: true });
  mkdirSync(HISTORIES_DIR, { recursive: true });
  try {
    // Rotation: one compaction by Update.
    await client.compact(await session('rotation'));
    await save('rotation', 'rotation');

    // In place: the session id stays; two generations.
    await client.compact(await session('in-place', client, 'in_place'));
    await client.append('in-place', conversation(12).slice(1));
    await client.compact('in-place');
    await save('in-place', 'in-place');

    // Coalesced: concurrent Updates and signals for one head share one compaction.
    llm.setDefault({ delayMs: 500 });
    await session('coalesced');
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => client.compact('coalesced', { requestId: `u${i}` })),
      client.requestCompaction('coalesced', { requestId: 's1' }),
      client.requestCompaction('coalesced', { requestId: 's2' }),
    ]);
    llm.setDefault({});
    await save('coalesced', 'coalesced');

    // Stale: a caller naming the rotated parent.
    await client.compact(await session('stale'));
    await client.compact('stale');
    await save('stale', 'stale');

    // Refused: the summary does not shrink the transcript.
    llm.script({ text: 'too long '.repeat(5000) });
    await client.compact(await session('refused'));
    await save('refused', 'refused');

    // Aborted: the LLM rejects the key; then the queue goes on.
    llm.script({ status: 401 });
    await client.compact(await session('aborted'));
    await client.compact('aborted');
    await save('aborted', 'aborted');

    // Lost lease: attempt 1 stops heartbeating, attempt 2 commits, attempt 1's late result is discarded.
    silenceFirstAttempt = true;
    llm.script({ delayMs: 6000 }, {});
    await client.compact(await session('lost-lease'));
    await new Promise((r) => setTimeout(r, 6000));
    silenceFirstAttempt = false;
    await save('lost-lease', 'lost-lease');

    // Abort adopting a commit: the activity fails for good after its commit landed; the workflow
    // records the abort, finds the job committed in Postgres, and answers compacted.
    failAfterCommit = true;
    await client.compact(await session('abort-adopts-commit'));
    failAfterCommit = false;
    await save('abort-adopts-commit', 'abort-adopts-commit');

    // Queued while a job runs: a request naming another session waits, then is judged stale.
    await client.compact(await session('queued-while-running'));
    await client.append('queued-while-running', conversation(12).slice(1));
    llm.script({ delayMs: 1500 });
    const summariesBefore = llm.requests.length;
    const running = client.compact('queued-while-running--g1', { requestId: 'running' });
    await llm.waitForRequests(summariesBefore + 1);
    await client.compact('queued-while-running', { requestId: 'queued-old-head' });
    await running;
    await save('queued-while-running', 'queued-while-running');

    // Idle: the run completes after its idle timeout without being closed; the lineage stays open.
    await idleClient.compact(await session('idle', idleClient));
    await save('idle', 'idle', { close: false });

    // Closed at start: a run started for a lineage already closed in Postgres completes at once.
    await session('closed-at-start');
    await client.closeSession('closed-at-start');
    await temporal.workflow.signalWithStart('sessionLineageWorkflow', {
      workflowId: lineageWorkflowId('closed-at-start'),
      taskQueue: config.temporal.taskQueue,
      args: [{ lineageId: 'closed-at-start', headSessionId: 'closed-at-start', generation: 0, mode: 'rotate' }],
      signal: compactSignal,
      signalArgs: [{ sessionId: 'closed-at-start', requestId: 'after-close' }],
    });
    await save('closed-at-start', 'closed-at-start', { close: false });

    // Continue-as-new under load: the run reaches its limit while a request waits in the queue;
    // the next run gets it carried and answers it (stale: it names the old head).
    await canClient.compact(await session('continue-as-new-under-load', canClient));
    await canClient.append('continue-as-new-under-load', conversation(12).slice(1));
    llm.script({ delayMs: 1500 });
    const beforeLimit = llm.requests.length;
    const atLimit = canClient.compact('continue-as-new-under-load--g1', { requestId: 'at-limit' });
    await llm.waitForRequests(beforeLimit + 1);
    const waiting = canClient.compact('continue-as-new-under-load', { requestId: 'waiting', timeoutMs: 60_000 });
    await Promise.all([atLimit, waiting]);
    await save('continue-as-new-under-load', 'continue-as-new-under-load');

    // Continue-as-new after every compaction, with requests on both sides of the boundary.
    await session('continue-as-new', canClient);
    const first = await canClient.compact('continue-as-new', { requestId: 'before' });
    await canClient.append(first.sessionId, conversation(12).slice(1));
    await canClient.compact(first.sessionId, { requestId: 'after' });
    await canClient.compact('continue-as-new', { requestId: 'before' }); // a retry, answered from carried state
    await save('continue-as-new', 'continue-as-new');
  } finally {
    await client.close();
    await canClient.close();
    await idleClient.close();
    sessionWorker.shutdown();
    await running;
    await connection.close();
    await nativeConnection.close();
    await database.close();
    await scratch.stop();
  }
  console.log(`recorded ${recorded.length} histories in ${path.relative(PROJECT_ROOT, HISTORIES_DIR)}:\n  ${recorded.join('\n  ')}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
