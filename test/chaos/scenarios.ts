/**
 * Fault-injection scenarios. Each runs against its own ChaosStack (real Temporal dev server,
 * real Postgres, real worker processes), injects its faults, and returns one row of the
 * reliability table (docs/reliability.md). The tests assert on the rows; `npm run chaos`
 * runs them at full size and prints the table.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sql } from 'drizzle-orm';
import type { CompactResultWithTranscript } from '../../src/client';
import { PROJECT_ROOT } from '../../src/config';
import { SessionCompactionError, USER_ERROR_TYPES } from '../../src/errors';
import { readWithRetry } from '../../src/db/database';
import { compactUpdate, lineageWorkflowId } from '../../src/workflows/contract';
import { conversation } from '../support/conversation';
import { type SummariserCalls, summariserCallsPerHead } from '../support/fake-llm';
import { AppendLedger, ledgerProblems } from '../support/ledger';
import { type ChaosStack, startChaosStack } from './chaos-stack';

export interface ReliabilityRow {
  scenario: string;
  faults: string;
  requests: number;
  answered: number;
  compactionsCommitted: number;
  forks: number;
  orphans: number;
  lostWrites: number;
  duplicatedWrites: number;
  errorsToCallers: number;
  /** From the fault to every caller answered (for the storm: the longest any caller waited). */
  recoverySeconds: number | null;
  notes?: string;
  /** The test's own loss accounting (test/support/ledger.ts): messages checked, and every problem found. */
  ledgerChecked?: number;
  ledgerProblems?: string[];
  /** What shows that the fault really landed (asserted by the tests). */
  evidence?: Record<string, number | string | boolean>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

async function sessionsWithHistory(stack: ChaosStack, prefix: string, count: number, ledger?: AppendLedger): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  for (const id of ids) {
    await stack.client.createSession({ sessionId: id });
    const batch = conversation(12);
    const ack = await stack.client.append(id, batch);
    ledger?.record(id, batch, ack);
  }
  return ids;
}

/** The largest attempt number Temporal reached for any compaction (the audit row keeps it). */
async function maxAttempts(stack: ChaosStack): Promise<number> {
  const rows = await stack.db.db.execute(sql`select coalesce(max(attempts), 0)::int as n from compactions`);
  return (rows.rows[0] as { n: number }).n;
}

async function committedCount(stack: ChaosStack): Promise<number> {
  const rows = await stack.db.db.execute(sql`select count(*)::int as n from compactions where outcome = 'compacted'`);
  return (rows.rows[0] as { n: number }).n;
}

async function commitsPerLineage(stack: ChaosStack): Promise<number[]> {
  const rows = await stack.db.db.execute(sql`select count(*)::int as n from compactions where outcome = 'compacted' group by lineage_id, generation`);
  return rows.rows.map((r) => (r as { n: number }).n);
}

/** Sends requests, counting answers and errors instead of failing on the first error. */
class Callers {
  requests = 0;
  answered = 0;
  errors: unknown[] = [];
  readonly pending: Array<Promise<CompactResultWithTranscript | undefined>> = [];

  send(call: () => Promise<CompactResultWithTranscript>): Promise<CompactResultWithTranscript | undefined> {
    this.requests++;
    const p = call().then(
      (answer) => {
        this.answered++;
        return answer;
      },
      (error) => {
        this.errors.push(error);
        return undefined;
      },
    );
    this.pending.push(p);
    return p;
  }

  settle() {
    return Promise.all(this.pending);
  }
}

async function row(
  stack: ChaosStack,
  base: Pick<ReliabilityRow, 'scenario' | 'faults' | 'recoverySeconds' | 'notes' | 'evidence'>,
  callers: Callers,
  ledger?: AppendLedger,
): Promise<ReliabilityRow> {
  const report = await stack.audit();
  const own = ledger && (await ledger.check(stack.db.pool, { prompts: AppendLedger.prompts(stack.llm.requests) }));
  return {
    ...base,
    ...(own && ledger ? { ledgerChecked: own.checked, ledgerProblems: ledgerProblems(own) } : {}),
    requests: callers.requests,
    answered: callers.answered,
    compactionsCommitted: await committedCount(stack),
    forks: report.forks,
    orphans: report.orphans,
    lostWrites: report.lostMessages + report.sequenceGaps,
    duplicatedWrites: report.duplicatedMessages,
    errorsToCallers: callers.errors.length,
    ...(callers.errors.length
      ? { notes: `${base.notes ? `${base.notes}; ` : ''}first error: ${String((callers.errors[0] as Error).message ?? callers.errors[0]).slice(0, 200)}` }
      : {}),
  };
}

// ---------------------------------------------------------------------------------------

/** 1. SIGKILL the worker mid-summary, start another: each compaction commits exactly once. */
export async function workerKilledMidSummary(size: { sessions: number }): Promise<ReliabilityRow> {
  const stack = await startChaosStack('worker-kill');
  try {
    const doomed = await stack.startWorker();
    const ledger = new AppendLedger();
    const ids = await sessionsWithHistory(stack, 'wk', size.sessions, ledger);
    stack.llm.setDefault({ delayMs: 1500 });
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    await stack.llm.waitForRequests(1);
    await stack.killWorker(doomed);
    const killedAt = Date.now();
    await stack.startWorker();
    const answers = await callers.settle();
    const recovery = Date.now() - killedAt;
    // The fault landed: the killed attempts were summarising, so the LLM saw more calls than
    // there were jobs (counted at the LLM, not by the code under test), and Temporal retried.
    const firstWaveLlmCalls = stack.llm.requests.length;
    const firstWaveMaxAttempts = await maxAttempts(stack);
    // The queue goes on: a second compaction of every head.
    stack.llm.setDefault({});
    for (const [i, answer] of answers.entries()) {
      if (!answer) continue;
      const batch = conversation(12).slice(1);
      ledger.record(ids[i], batch, await stack.client.append(answer.sessionId, batch));
      await callers.send(() => stack.client.compact(answer.sessionId));
    }
    const perGeneration = await commitsPerLineage(stack);
    return await row(
      stack,
      {
        scenario: 'worker SIGKILLed mid-summary',
        faults: `1 worker kill during ${size.sessions} summaries`,
        recoverySeconds: seconds(recovery),
        notes: `commits per (lineage, generation): max ${Math.max(...perGeneration)}`,
        evidence: { sessions: size.sessions, firstWaveLlmCalls, maxAttempts: firstWaveMaxAttempts },
      },
      callers,
      ledger,
    );
  } finally {
    await stack.close();
  }
}

/** 2. SIGKILL the (file-backed) Temporal dev server mid-compaction and restart it. */
export async function temporalKilledMidCompaction(size: { sessions: number }): Promise<ReliabilityRow> {
  const stack = await startChaosStack('temporal-kill');
  try {
    await stack.startWorker();
    const ledger = new AppendLedger();
    const ids = await sessionsWithHistory(stack, 'tk', size.sessions, ledger);
    stack.llm.setDefault({ delayMs: 1500 });
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    await stack.llm.waitForRequests(1);
    const exited = await stack.killTemporal();
    const killedAt = Date.now();
    await sleep(1500);
    await stack.restartTemporal();
    await callers.settle();
    return await row(
      stack,
      {
        scenario: 'Temporal server SIGKILLed mid-compaction',
        faults: `server killed for 1.5 s during ${size.sessions} summaries`,
        recoverySeconds: seconds(Date.now() - killedAt),
        evidence: { serverKilledBy: String(exited) },
      },
      callers,
      ledger,
    );
  } finally {
    await stack.close();
  }
}

/** 3. Restart Postgres while a commit transaction is open: the commit is retried, once. */
export async function postgresRestartedMidCommit(size: { sessions: number }): Promise<ReliabilityRow> {
  const stack = await startChaosStack('pg-restart');
  try {
    // The first commit that creates a child sleeps inside its transaction, so the restart
    // lands mid-commit. A sequence is not rolled back, so it fires once.
    await stack.db.db.execute(
      sql.raw(`
      create sequence chaos_once;
      create function chaos_slow_commit() returns trigger as $$
      begin
        if nextval('chaos_once') = 1 then perform pg_sleep(5); end if;
        return new;
      end $$ language plpgsql;
      create trigger chaos_slow_commit before insert on sessions
        for each row when (new.parent_session_id is not null) execute function chaos_slow_commit();`),
    );
    await stack.startWorker();
    const ledger = new AppendLedger();
    const ids = await sessionsWithHistory(stack, 'pr', size.sessions, ledger);
    const startTime = async () => String((await stack.db.pool.query<{ t: string }>('select pg_postmaster_start_time()::text as t')).rows[0].t);
    const startedBefore = await startTime();
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    let commitSleeping = false;
    for (const deadline = Date.now() + 30_000; !commitSleeping && Date.now() < deadline;) {
      const sleeping = await stack.db.db.execute(sql`select count(*)::int as n from pg_stat_activity where wait_event = 'PgSleep'`);
      commitSleeping = (sleeping.rows[0] as { n: number }).n > 0;
      if (!commitSleeping) await sleep(50);
    }
    await stack.pg.stop();
    const stoppedAt = Date.now();
    await sleep(1000);
    await stack.pg.start();
    await callers.settle();
    const startedAfter = await readWithRetry(startTime);
    const perGeneration = await commitsPerLineage(stack);
    return await row(
      stack,
      {
        scenario: 'Postgres restarted mid-commit',
        faults: `restart (1 s down) during an open commit, ${size.sessions} compactions`,
        recoverySeconds: seconds(Date.now() - stoppedAt),
        notes: `commits per (lineage, generation): max ${Math.max(...perGeneration)}`,
        // The fault landed: a commit was inside its transaction when Postgres went down, and
        // the server that answers afterwards is a new one (its start time moved).
        evidence: { commitSleeping, startedBefore, startedAfter, restarted: startedBefore !== startedAfter },
      },
      callers,
      ledger,
    );
  } finally {
    await stack.close();
  }
}

/** 4. LLM faults from the local OpenAI-compatible server, one compaction each. */
export async function llmFaults(): Promise<ReliabilityRow> {
  const stack = await startChaosStack('llm');
  try {
    await stack.startWorker();
    const faults = [
      { name: '401', behaviours: [{ status: 401 }], expect: 'aborted' },
      { name: '429 retry-after', behaviours: [{ status: 429, headers: { 'retry-after': '1' } }], expect: 'compacted' },
      { name: '500', behaviours: [{ status: 500 }], expect: 'compacted' },
      { name: 'connection reset', behaviours: [{ reset: true }], expect: 'compacted' },
      { name: 'stream stalled > TTL', behaviours: [{ chunks: 4, stallAfterChunks: 1 }], expect: 'compacted' },
      { name: 'slow stream over 4 TTLs', behaviours: [{ chunks: 10, chunkDelayMs: 1300 }], expect: 'compacted' },
    ];
    const ledger = new AppendLedger();
    const ids = await sessionsWithHistory(stack, 'llm', faults.length, ledger);
    const callers = new Callers();
    const unexpected: string[] = [];
    for (const [i, fault] of faults.entries()) {
      stack.llm.script(...fault.behaviours);
      const answer = await callers.send(() => stack.client.compact(ids[i]));
      if (answer?.outcome !== fault.expect) unexpected.push(`${fault.name}: ${answer?.outcome}`);
    }
    return await row(
      stack,
      {
        scenario: 'LLM faults',
        faults: faults.map((f) => f.name).join(', '),
        recoverySeconds: null,
        notes: unexpected.length ? `unexpected: ${unexpected.join('; ')}` : '401 aborted, the rest compacted',
      },
      callers,
      ledger,
    );
  } finally {
    await stack.close();
  }
}

/** 5. Several workers, one killed at random moments, during a storm of compactions and appends. */
export interface StormOptions {
  workers: number;
  sessions: number;
  seconds: number;
  /** Seeds every random choice of the storm (victims, pauses); printed, so a run can be repeated. */
  seed?: number;
  /** SIGKILL a random worker every 2 to 5 s (default true). */
  kills?: boolean;
  /**
   * Drop the database's fork guards first (the unique-child index and the ended-session
   * trigger), to prove that the workflow alone prevents forks.
   */
  dropGuards?: boolean;
  /** Tag every summary with its LLM call number (see summariserCallsPerHead). */
  tagCalls?: boolean;
  env?: Record<string, string>;
}

export type StormRow = ReliabilityRow & {
  acknowledgedAppends: number;
  missingAppends: number;
  appendErrors: number;
  seed: number;
  guardsDropped: boolean;
  /** Rotations counted by our own query (children in the sessions table). */
  childSessions: number;
  /** Jobs that got as far as the summariser (committed, or refused by a gate after summarising). */
  summarisedJobs: number;
  refusedAfterSummary: number;
  calls?: SummariserCalls;
};

export async function workerStorm(size: StormOptions): Promise<StormRow> {
  const seed = size.seed ?? Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000_000);
  console.log(`worker storm: seed ${seed} (repeat with CHAOS_SEED=${seed})`);
  const r = prng(seed);
  const stack = await startChaosStack(size.dropGuards ? 'storm-unguarded' : 'storm', size.env);
  try {
    let guardsDropped = false;
    if (size.dropGuards) {
      await stack.db.pool.query('drop index sessions_one_child_per_parent');
      await stack.db.pool.query('drop trigger messages_live_sessions_only on messages');
      guardsDropped = (await guardsPresent(stack.db.pool)).length === 0;
    }
    for (let i = 0; i < size.workers; i++) await stack.startWorker();
    const ledger = new AppendLedger();
    const ids = await sessionsWithHistory(stack, 'st', size.sessions, ledger);
    stack.llm.setDefault({ delayMs: 300, tagCalls: size.tagCalls });
    const callers = new Callers();
    let appended = 0;
    let appendErrors = 0;
    let firstAppendError: string | undefined;
    let running = true;
    let longestWait = 0;
    let kills = 0;
    const loops: Array<Promise<void>> = [];
    for (const id of ids) {
      const pauses = prng(r.int(2 ** 31));
      loops.push(
        (async () => {
          for (let n = 0; running; n++) {
            const marker = `${id}/a${n}`;
            const batch = [
              { role: 'user', content: `${marker} next step please` },
              { role: 'assistant', content: `done ${marker}` },
            ];
            try {
              ledger.record(id, batch, await stack.client.append(id, batch));
              appended++;
            } catch (error) {
              appendErrors++;
              firstAppendError ??= String((error as Error).message ?? error);
            }
            await sleep(100 + pauses.next() * 200);
          }
        })(),
      );
      for (let c = 0; c < 2; c++) {
        const callerPauses = prng(r.int(2 ** 31));
        loops.push(
          (async () => {
            while (running) {
              const head = (await stack.client.transcript(id)).sessionId;
              const started = Date.now();
              await callers.send(() => stack.client.compact(head, { force: true }));
              longestWait = Math.max(longestWait, Date.now() - started);
              await sleep(200 + callerPauses.next() * 600);
            }
          })(),
        );
      }
    }
    const deadline = Date.now() + size.seconds * 1000;
    while (Date.now() < deadline) {
      await sleep(Math.min(2000 + r.next() * 3000, Math.max(0, deadline - Date.now())));
      if (size.kills === false || Date.now() >= deadline) continue;
      const victims = [...stack.workers];
      const victim = victims[r.int(victims.length)];
      if (victim) {
        await stack.killWorker(victim);
        kills++;
        await stack.startWorker();
      }
    }
    running = false;
    await Promise.all(loops);
    await callers.settle();
    const own = await ledger.check(stack.db.pool, { prompts: AppendLedger.prompts(stack.llm.requests) });
    const children = await stack.db.pool.query<{ n: number }>('select count(*)::int as n from sessions where parent_session_id is not null');
    const jobs = await stack.db.pool.query<{ summarised: number; refused: number }>(
      `select count(distinct id) filter (where outcome = 'compacted' or (outcome = 'refused' and summariser_prompt_tokens is not null))::int as summarised,
              count(distinct id) filter (where outcome = 'refused' and summariser_prompt_tokens is not null)::int as refused
       from compactions`,
    );
    const base = await row(
      stack,
      {
        scenario: size.dropGuards ? 'worker storm, fork guards dropped' : 'worker storm',
        faults: `${size.kills === false ? 'no' : kills} random worker kills, ${size.workers} workers, ${size.sessions} sessions, ${size.seconds} s, seed ${seed}${size.dropGuards ? ', unique-child index and ended-session trigger dropped' : ''}`,
        recoverySeconds: seconds(longestWait),
        notes: `${appended} appends acknowledged, ${appendErrors} failed${firstAppendError ? ` (first: ${firstAppendError.slice(0, 120)})` : ''}`,
        evidence: { kills, seed },
      },
      callers,
      ledger,
    );
    return {
      ...base,
      acknowledgedAppends: appended,
      missingAppends: own.lost.length,
      appendErrors,
      seed,
      guardsDropped,
      childSessions: children.rows[0].n,
      summarisedJobs: jobs.rows[0].summarised,
      refusedAfterSummary: jobs.rows[0].refused,
      ...(size.tagCalls ? { calls: summariserCallsPerHead(stack.llm.requests) } : {}),
    };
  } finally {
    await stack.close();
  }
}

/** The fork guards of the schema that are still present (by name). */
export async function guardsPresent(pool: import('pg').Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `select indexname as name from pg_indexes where indexname = 'sessions_one_child_per_parent'
     union all select tgname from pg_trigger where tgname = 'messages_live_sessions_only'`,
  );
  return rows.map((r) => r.name);
}

// ---------------------------------------------------------------------------------------
// 6. Bad input.

/** A small deterministic PRNG (mulberry32), so a failing fuzz run can be replayed by seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  return { next, pick, int: (n: number) => Math.floor(next() * n) };
}

const ODD_STRINGS = [
  '',
  ' ',
  '../../etc/passwd',
  "x'; drop table sessions; --",
  'a/b\\c',
  '\u0000nul',
  '\ud800lone',
  '🙂emoji',
  'ünïcödé',
  '%00%2e%2e',
  '$(rm -rf /)',
  '<script>',
  'x'.repeat(300),
  '\n\t',
];
const ODD_VALUES: unknown[] = [null, undefined, 0, -1, 1e308, NaN, true, [], {}, [1, 2], { $ne: 1 }, 'text', 'x'.repeat(100_000)];

function badSessionId(r: ReturnType<typeof prng>): unknown {
  const options: Array<() => unknown> = [
    () => r.pick(ODD_STRINGS),
    () => r.pick(ODD_VALUES.filter((v) => typeof v !== 'string')),
    () => `ok${r.pick(['/', ' ', "'", ';', '\u0000', '*', '?', '#', '\u202e'])}id`,
    () => 'a'.repeat(129 + r.int(1000)),
    () => `chat--g${r.int(9)}`, // reserved for children: bad only when creating
  ];
  return r.pick(options)();
}

function badMessage(r: ReturnType<typeof prng>): unknown {
  const options: Array<() => unknown> = [
    // ('function', the legacy role, is valid openai-chat; 'model' is Gemini's, not this lineage's.)
    () => ({ role: r.pick(['wizard', 'USER', '', 'model', 7]), content: 'x' }),
    () => ({ role: 'user', content: r.pick(ODD_VALUES.filter((v) => v !== null && typeof v !== 'string')) }),
    () => ({ role: 'tool', content: 'result without call id' }),
    // Unknown fields are kept, not refused; a known field where it does not belong, or of the wrong type, is refused.
    () => ({ role: 'user', content: 'x', [r.pick(['tool_call_id', 'tool_calls', 'name'])]: r.pick([1, '', {}]) }),
    () => ({ role: 'user', content: `nul ${'\u0000'} inside` }),
    () => ({ role: 'user', content: `lone ${'\udc00'} surrogate` }),
    () => ({ role: 'user', content: 'x'.repeat(200_001) }),
    () => ({ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: r.pick([7, null, {}]) } }] }),
    () => ({ role: 'user', content: [{ type: 'text', text: r.pick([5, null, {}]) }] }),
    () => r.pick(ODD_VALUES),
  ];
  return r.pick(options)();
}

function badCompactOptions(r: ReturnType<typeof prng>): Record<string, unknown> {
  const options: Array<() => Record<string, unknown>> = [
    () => ({ focusTopic: r.pick([5, {}, [], 'x'.repeat(1001)]) }),
    () => ({ force: r.pick(['yes', 1, null, {}]) }),
    () => ({ requestId: r.pick(['', 'x'.repeat(201), 5, {}]) }),
    () => ({ background: true }),
    () => ({ [r.pick(['colour', 'sessionID', 'priority', 'trigger2'])]: 1 }),
    () => ({ trigger: r.pick(['cron', 5, '']) }),
  ];
  return r.pick(options)();
}

export async function badInput(size: { iterations: number; cliRuns: number; seed: number }): Promise<ReliabilityRow & { typed: number; untyped: string[] }> {
  const stack = await startChaosStack('fuzz');
  const r = prng(size.seed);
  const untyped: string[] = [];
  let typed = 0;
  const callers = new Callers();
  const expectTyped = async (what: string, call: () => Promise<unknown>) => {
    callers.requests++;
    try {
      await call();
      untyped.push(`${what}: accepted`);
    } catch (error) {
      callers.answered++;
      if (error instanceof SessionCompactionError) typed++;
      else if (
        error instanceof WorkflowUpdateFailedError &&
        error.cause instanceof ApplicationFailure &&
        (USER_ERROR_TYPES as readonly string[]).includes(error.cause.type ?? '')
      )
        typed++;
      else untyped.push(`${what}: ${(error as Error).name}: ${(error as Error).message}`.slice(0, 300));
    }
  };
  try {
    await stack.startWorker();
    const [target] = await sessionsWithHistory(stack, 'fz', 1);
    const counts = async () =>
      (
        await stack.db.db.execute(
          sql`select (select count(*) from sessions) s, (select count(*) from messages) m, (select count(*) from lineages) l, (select count(*) from compactions) c`,
        )
      ).rows[0];
    const before = await counts();
    const connection = await Connection.connect({ address: stack.config.temporal.address });
    const raw = new Client({ connection }).workflow.getHandle(lineageWorkflowId(target));
    try {
      for (let i = 0; i < size.iterations; i++) {
        const kind = r.int(6);
        if (kind === 0) {
          const id = badSessionId(r);
          await expectTyped(`createSession(${JSON.stringify(id)?.slice(0, 40)})`, () => stack.client.createSession({ sessionId: id as string }));
        } else if (kind === 1) {
          await expectTyped('createSession(bad mode/source)', () =>
            stack.client.createSession({
              sessionId: `fz-new-${i}`,
              ...(r.next() < 0.5 ? { mode: r.pick(['fork', '', 7]) as never } : { source: r.pick([5, '', 'x'.repeat(101)]) as never }),
            }),
          );
        } else if (kind === 2) {
          const batch = Array.from({ length: 1 + r.int(4) }, () => ({ role: 'user', content: 'fine' }) as unknown);
          batch.splice(r.int(batch.length + 1), 0, badMessage(r));
          await expectTyped('append(bad batch)', () =>
            stack.client.append(r.next() < 0.8 ? target : (badSessionId(r) as string), r.next() < 0.9 ? batch : r.pick(ODD_VALUES)),
          );
        } else if (kind === 3) {
          await expectTyped('compact(bad options)', () => stack.client.compact(target, badCompactOptions(r) as never));
        } else if (kind === 4) {
          const request =
            r.next() < 0.5 ? { sessionId: target, ...badCompactOptions(r) } : { sessionId: badSessionId(r), ...(r.next() < 0.5 ? badCompactOptions(r) : {}) };
          await expectTyped('raw Update', () => raw.executeUpdate(compactUpdate, { args: [request as never] }));
        } else {
          // A signal cannot be rejected: it must be dropped without harming the workflow.
          callers.requests++;
          await raw.signal(
            'requestCompaction',
            r.pick([
              { sessionId: target, background: true },
              { sessionId: badSessionId(r) },
              r.pick(ODD_VALUES),
              { sessionId: target, ...badCompactOptions(r) },
            ]) as never,
          );
          callers.answered++;
          typed++;
        }
      }
      const run = promisify(execFile);
      for (let i = 0; i < size.cliRuns; i++) {
        const args = r.pick([
          ['create', r.pick(['../x', "x';--", 'a b', 'é', '-lead', 'x'.repeat(200), 'chat--g1', '']), '--json'],
          ['compact', target, '--focus', 'x'.repeat(1001), '--json'],
          ['compact', target, '--background', '--json'],
          ['append', target, '--json'],
          ['frobnicate'],
        ]);
        callers.requests++;
        const child = run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], { env: { ...process.env, ...stack.env } });
        if (args[0] === 'append') child.child.stdin!.end(JSON.stringify([badMessage(r)]));
        else child.child.stdin!.end();
        try {
          await child;
          untyped.push(`cli ${args.join(' ').slice(0, 60)}: exit 0`);
        } catch (error) {
          const e = error as { code: number; stdout: string };
          callers.answered++;
          if (e.code === 2) typed++;
          else untyped.push(`cli ${args.join(' ').slice(0, 60)}: exit ${e.code}`);
        }
      }
      const after = await counts();
      if (JSON.stringify(after) !== JSON.stringify(before)) untyped.push(`rows written by bad input: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
      // The workflow is still healthy: running, no failed workflow task, and it still compacts.
      const description = await raw.describe();
      const history = await raw.fetchHistory();
      const failedTasks = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
      if (description.status.name !== 'RUNNING' || failedTasks > 0) untyped.push(`workflow ${description.status.name} with ${failedTasks} failed task(s)`);
      const after2 = await callers.send(() => stack.client.compact(target));
      if (after2?.outcome !== 'compacted') untyped.push(`a valid compaction after the fuzz: ${after2?.outcome}${after2?.reason ? ` (${after2.reason})` : ''}`);
    } finally {
      await connection.close();
    }
    const base = await row(
      stack,
      {
        scenario: 'bad input (fuzz)',
        faults: `${size.iterations} bad calls (client, raw Updates, signals), ${size.cliRuns} CLI runs, seed ${size.seed}`,
        recoverySeconds: null,
      },
      callers,
    );
    return { ...base, errorsToCallers: untyped.length, typed, untyped };
  } finally {
    await stack.close();
  }
}
