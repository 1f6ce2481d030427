/**
 * The same faults for both designs, on the same Postgres and the same local LLM:
 * - a compaction holder frozen (SIGSTOP) past its lease TTL, then resumed (SIGCONT);
 * - the process running the summary killed (SIGKILL) mid-summary;
 * - 40 concurrent triggers on one head.
 * While each runs, a writer appends to the session continuously. Counted with the benchmark's
 * own ledger: LLM calls (the local LLM's request log), committed compactions and forks (rows),
 * appends acknowledged, and what every caller got back.
 */
import type { ChildProcess } from 'node:child_process';
import { sql } from 'drizzle-orm';
import { Pool } from 'pg';
import { createLlmSummariser } from '../src/activities/summariser';
import { SessionsClient } from '../src/client';
import type { ChatMessage } from '../src/compaction/messages';
import { loadConfig } from '../src/config';
import type { DatabaseHandle } from '../src/db/database';
import { createReferenceDesign, type ReferenceDesign } from './reference-design';
import { type BenchStack, spawnBenchProcess, stopProcess } from './stack';

const FAULT_TTL_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FaultRow {
  design: 'ours' | 'reference';
  scenario: string;
  callers: number;
  compacted: number;
  /** Callers that got their input back unchanged (reference) or a stale/refused/aborted answer (ours). */
  unchanged: number;
  errors: number;
  committedCompactions: number;
  llmCalls: number;
  /** LLM calls per committed compaction (1 = no double summary). */
  llmCallsPerCommit: number | null;
  forks: number;
  orphans: number;
  appendsAcknowledged: number;
  appendErrors: number;
  lostMessages: number;
  duplicatedMessages: number;
  /** Ours: the distinct answers callers got. */
  answers?: string[];
}

function messages(n: number, tag: string): ChatMessage[] {
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `${tag} ${i}: ${'the agent edits files and runs tests. '.repeat(3)}`,
  }));
}

/** Appends one message every few ms until stopped; counts acknowledgements and errors. */
function writer(append: (batch: ChatMessage[]) => Promise<unknown>) {
  let stop = false;
  const tally = { acknowledged: 0, errors: 0 };
  const done = (async () => {
    for (let i = 0; !stop; i++) {
      try {
        await append([{ role: 'user', content: `w${i}` }]);
        tally.acknowledged++;
      } catch {
        tally.errors++;
      }
      await sleep(15);
    }
  })();
  return { tally, stop: async () => ((stop = true), await done) };
}

type Outcome = 'compacted' | 'unchanged' | 'error';
const tallyOutcomes = (outcomes: Outcome[]) => ({
  callers: outcomes.length,
  compacted: outcomes.filter((o) => o === 'compacted').length,
  unchanged: outcomes.filter((o) => o === 'unchanged').length,
  errors: outcomes.filter((o) => o === 'error').length,
});

/** Waits until the local LLM has seen no new request for 3 s (a resumed or retried attempt may still call it). */
async function llmQuiet(llm: BenchStack['llm']) {
  const deadline = Date.now() + 60_000;
  let last = llm.requests.length;
  let since = Date.now();
  while (Date.now() - since < 3000 && Date.now() < deadline) {
    await sleep(100);
    if (llm.requests.length !== last) [last, since] = [llm.requests.length, Date.now()];
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export async function runFaults(
  stack: BenchStack,
  database: DatabaseHandle,
  log: (line: string) => void,
  options: { onlyConcurrentTriggers?: boolean } = {},
): Promise<FaultRow[]> {
  const env = { ...stack.env, TEMPORAL_TASK_QUEUE: 'bench-faults', COMPACTION_LEASE_TTL_MS: String(FAULT_TTL_MS) };
  const config = loadConfig(env);
  const sessions = await SessionsClient.connect({
    config,
    database,
    settings: { leaseTtlMs: FAULT_TTL_MS, retryInitialIntervalMs: 200, retryMaximumIntervalMs: 1000 },
  });
  const pool = new Pool({ connectionString: config.databaseUrl, max: 12 });
  const reference: ReferenceDesign = createReferenceDesign(pool, createLlmSummariser(config.llm, { stallTimeoutMs: 600_000, requestTimeoutMs: 600_000 }), {
    leaseTtlMs: FAULT_TTL_MS,
  });
  await reference.migrate();
  const refEnv = { ...env, REF_LEASE_TTL_MS: String(FAULT_TTL_MS) };
  const workers: ChildProcess[] = [];
  const spawnWorker = async () => {
    const w = await spawnBenchProcess('session-worker.ts', env, { ready: 'worker ready' });
    workers.push(w);
    return w;
  };
  const rows: FaultRow[] = [];
  const oursCounts = async (lineageId: string) => {
    const r = (
      await database.db.execute(sql`
      select (select count(*) from sessions where lineage_id = ${lineageId} and parent_session_id is not null) as committed,
             (select count(*) from (select parent_session_id from sessions where lineage_id = ${lineageId} and parent_session_id is not null group by 1 having count(*) > 1) f) as forks`)
    ).rows[0] as { committed: string; forks: string };
    return { committed: Number(r.committed), forks: Number(r.forks) };
  };
  const ours = async (scenario: string, id: string, body: (w: { compact: () => Promise<Outcome> }) => Promise<Outcome[]>) => {
    log(`faults, ours: ${scenario}`);
    await sessions.createSession({ sessionId: id });
    await sessions.append(id, messages(40, id));
    await sessions.operator.state(id);
    const auditBefore = await sessions.operator.audit();
    const llmBefore = stack.llm.requests.length;
    const w = writer((batch) => sessions.append(id, batch));
    const answers: string[] = [];
    const compact = () =>
      sessions.compact(id).then(
        (r) => {
          answers.push(`${r.outcome}${r.reason ? `: ${r.reason}` : ''}`);
          // A caller whose head was compacted (its own job, or one it joined, or `stale` with the new head) did not get its input back.
          return (r.sessionId !== id ? 'compacted' : 'unchanged') as Outcome;
        },
        (e) => (answers.push(`error: ${e?.message ?? e}`), 'error' as Outcome),
      );
    const outcomes = await body({ compact });
    await llmQuiet(stack.llm);
    await w.stop();
    const audit = await sessions.operator.audit();
    const counts = await oursCounts(id);
    const llmCalls = stack.llm.requests.length - llmBefore;
    rows.push({
      design: 'ours',
      scenario,
      ...tallyOutcomes(outcomes),
      committedCompactions: counts.committed,
      llmCalls,
      llmCallsPerCommit: counts.committed ? llmCalls / counts.committed : null,
      forks: counts.forks,
      orphans: audit.orphans - auditBefore.orphans,
      appendsAcknowledged: w.tally.acknowledged,
      appendErrors: w.tally.errors,
      lostMessages: audit.lostMessages - auditBefore.lostMessages,
      duplicatedMessages: audit.duplicatedMessages - auditBefore.duplicatedMessages,
      answers: [...new Set(answers)],
    });
  };
  const ref = async (scenario: string, id: string, body: (w: { compact: () => Promise<Outcome> }) => Promise<Outcome[]>) => {
    log(`faults, reference design: ${scenario}`);
    await reference.createSession(id);
    await reference.append(id, messages(40, id));
    const llmBefore = stack.llm.requests.length;
    const w = writer((batch) => reference.append(id, batch));
    const compact = () =>
      reference
        .head(id)
        .then((head) => reference.compact(head))
        .then(
          (r) => r.outcome as Outcome,
          () => 'error' as Outcome,
        );
    const outcomes = await body({ compact });
    await llmQuiet(stack.llm);
    await w.stop();
    const audit = await reference.audit([id]);
    const llmCalls = stack.llm.requests.length - llmBefore;
    rows.push({
      design: 'reference',
      scenario,
      ...tallyOutcomes(outcomes),
      committedCompactions: audit.committedCompactions,
      llmCalls,
      llmCallsPerCommit: audit.committedCompactions ? llmCalls / audit.committedCompactions : null,
      forks: audit.forks,
      orphans: audit.orphans,
      appendsAcknowledged: w.tally.acknowledged,
      appendErrors: w.tally.errors,
      lostMessages: audit.lostMessages,
      duplicatedMessages: audit.duplicatedMessages,
    });
  };
  /** A reference caller in its own process; resolves with its outcome when the process ends. */
  const refRunner = async (head: string) => {
    const child = await spawnBenchProcess('reference-runner.ts', refEnv, { args: [head], ready: 'runner ready' });
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    const outcome = new Promise<Outcome>((resolve) =>
      child.once('exit', () => resolve(/RESULT .*"compacted"/.test(out) ? 'compacted' : /RESULT /.test(out) ? 'unchanged' : 'error')),
    );
    return { child, outcome };
  };

  try {
    if (!options.onlyConcurrentTriggers) await freezeAndKill();
    if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) await spawnWorker();
    // 3. 40 concurrent triggers on one head. ---------------------------------------------
    stack.llm.setDefault({ delayMs: 300 });
    await ours('40 concurrent triggers', 'fault-storm-ours', async ({ compact }) => Promise.all(Array.from({ length: 40 }, () => compact())));
    await ref('40 concurrent triggers', 'fault-storm-ref', async ({ compact }) => Promise.all(Array.from({ length: 40 }, () => compact())));
    stack.llm.setDefault({ text: 'Goal: continue. Completed: the summarised work.' });
  } finally {
    for (const w of workers) {
      if (w.exitCode === null && w.signalCode === null) w.kill('SIGCONT');
      await stopProcess(w);
    }
    await sessions.close();
    await pool.end();
  }
  return rows;

  async function freezeAndKill() {
    // 1. A holder frozen past its TTL, then resumed. -----------------------------------
    // The first summary takes 2 s; its holder is frozen at once for TTL + 2 s, a second caller arrives meanwhile, then the holder resumes.
    const llmSlowFirst = () => stack.llm.script({ delayMs: 2000 });
    let w1 = await spawnWorker();
    llmSlowFirst();
    await ours('holder frozen (SIGSTOP) past its TTL, then resumed', 'fault-freeze-ours', async ({ compact }) => {
      const seen = stack.llm.requests.length;
      const first = compact();
      await waitFor(() => stack.llm.requests.length > seen, 30_000, 'the first summary');
      w1.kill('SIGSTOP');
      const w2 = await spawnWorker();
      await sleep(Math.max(0, FAULT_TTL_MS + 2000));
      const second = await compact();
      w1.kill('SIGCONT');
      const outcomes = [await first, second];
      await stopProcess(w2);
      return outcomes;
    });
    llmSlowFirst();
    await ref('holder frozen (SIGSTOP) past its TTL, then resumed', 'fault-freeze-ref', async ({ compact }) => {
      const seen = stack.llm.requests.length;
      const runner = await refRunner('fault-freeze-ref');
      await waitFor(() => stack.llm.requests.length > seen, 30_000, 'the first summary');
      runner.child.kill('SIGSTOP');
      await sleep(FAULT_TTL_MS + 2000);
      const second = await compact();
      runner.child.kill('SIGCONT');
      return [await runner.outcome, second];
    });

    // 2. The process running the summary killed mid-summary. --------------------------
    stack.llm.script({ delayMs: 2000 });
    await ours('worker killed (SIGKILL) mid-summary', 'fault-kill-ours', async ({ compact }) => {
      const seen = stack.llm.requests.length;
      const first = compact();
      await waitFor(() => stack.llm.requests.length > seen, 30_000, 'the first summary');
      await stopProcess(w1, 'SIGKILL');
      const second = compact();
      w1 = await spawnWorker();
      return [await first, await second];
    });
    stack.llm.script({ delayMs: 2000 });
    await ref('worker killed (SIGKILL) mid-summary', 'fault-kill-ref', async ({ compact }) => {
      const seen = stack.llm.requests.length;
      const runner = await refRunner('fault-kill-ref');
      await waitFor(() => stack.llm.requests.length > seen, 30_000, 'the first summary');
      runner.child.kill('SIGKILL');
      return [await runner.outcome, await compact()];
    });
  }
}
