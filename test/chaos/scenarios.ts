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
import type { CompactOutcome } from '../../src/client';
import { PROJECT_ROOT } from '../../src/config';
import { SessionCompactionError, USER_ERROR_TYPES } from '../../src/errors';
import { compactUpdate, lineageWorkflowId } from '../../src/workflows/contract';
import { conversation } from '../support/conversation';
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
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

async function sessionsWithHistory(stack: ChaosStack, prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  for (const id of ids) {
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, conversation(12));
  }
  return ids;
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
  readonly pending: Array<Promise<CompactOutcome | undefined>> = [];

  send(call: () => Promise<CompactOutcome>): Promise<CompactOutcome | undefined> {
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

async function row(stack: ChaosStack, base: Pick<ReliabilityRow, 'scenario' | 'faults' | 'recoverySeconds' | 'notes'>, callers: Callers): Promise<ReliabilityRow> {
  const report = await stack.audit();
  return {
    ...base,
    requests: callers.requests,
    answered: callers.answered,
    compactionsCommitted: await committedCount(stack),
    forks: report.forks,
    orphans: report.orphans,
    lostWrites: report.lostMessages + report.sequenceGaps,
    duplicatedWrites: report.duplicatedMessages,
    errorsToCallers: callers.errors.length,
    ...(callers.errors.length ? { notes: `${base.notes ? `${base.notes}; ` : ''}first error: ${String((callers.errors[0] as Error).message ?? callers.errors[0]).slice(0, 200)}` } : {}),
  };
}

// ---------------------------------------------------------------------------------------

/** 1. SIGKILL the worker mid-summary, start another: each compaction commits exactly once. */
export async function workerKilledMidSummary(size: { sessions: number }): Promise<ReliabilityRow> {
  const stack = await startChaosStack('worker-kill');
  try {
    const doomed = await stack.startWorker();
    const ids = await sessionsWithHistory(stack, 'wk', size.sessions);
    stack.llm.setDefault({ delayMs: 1500 });
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    await stack.llm.waitForRequests(1);
    await stack.killWorker(doomed);
    const killedAt = Date.now();
    await stack.startWorker();
    const answers = await callers.settle();
    const recovery = Date.now() - killedAt;
    // The queue goes on: a second compaction of every head.
    stack.llm.setDefault({});
    for (const answer of answers) {
      if (!answer) continue;
      await stack.client.append(answer.sessionId, conversation(12).slice(1));
      await callers.send(() => stack.client.compact(answer.sessionId));
    }
    const perGeneration = await commitsPerLineage(stack);
    return await row(stack, { scenario: 'worker SIGKILLed mid-summary', faults: `1 worker kill during ${size.sessions} summaries`, recoverySeconds: seconds(recovery), notes: `commits per (lineage, generation): max ${Math.max(...perGeneration)}` }, callers);
  } finally {
    await stack.close();
  }
}

/** 2. SIGKILL the (file-backed) Temporal dev server mid-compaction and restart it. */
export async function temporalKilledMidCompaction(size: { sessions: number }): Promise<ReliabilityRow> {
  const stack = await startChaosStack('temporal-kill');
  try {
    await stack.startWorker();
    const ids = await sessionsWithHistory(stack, 'tk', size.sessions);
    stack.llm.setDefault({ delayMs: 1500 });
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    await stack.llm.waitForRequests(1);
    await stack.killTemporal();
    const killedAt = Date.now();
    await sleep(1500);
    await stack.restartTemporal();
    await callers.settle();
    return await row(stack, { scenario: 'Temporal server SIGKILLed mid-compaction', faults: `server killed for 1.5 s during ${size.sessions} summaries`, recoverySeconds: seconds(Date.now() - killedAt) }, callers);
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
    await stack.db.db.execute(sql.raw(`
      create sequence chaos_once;
      create function chaos_slow_commit() returns trigger as $$
      begin
        if nextval('chaos_once') = 1 then perform pg_sleep(5); end if;
        return new;
      end $$ language plpgsql;
      create trigger chaos_slow_commit before insert on sessions
        for each row when (new.parent_session_id is not null) execute function chaos_slow_commit();`));
    await stack.startWorker();
    const ids = await sessionsWithHistory(stack, 'pr', size.sessions);
    const callers = new Callers();
    for (const id of ids) void callers.send(() => stack.client.compact(id));
    for (let i = 0; i < 200; i++) {
      const sleeping = await stack.db.db.execute(sql`select count(*)::int as n from pg_stat_activity where wait_event = 'PgSleep'`);
      if ((sleeping.rows[0] as { n: number }).n > 0) break;
      await sleep(50);
    }
    await stack.pg.stop();
    const stoppedAt = Date.now();
    await sleep(1000);
    await stack.pg.start();
    await callers.settle();
    const perGeneration = await commitsPerLineage(stack);
    return await row(stack, { scenario: 'Postgres restarted mid-commit', faults: `restart (1 s down) during an open commit, ${size.sessions} compactions`, recoverySeconds: seconds(Date.now() - stoppedAt), notes: `commits per (lineage, generation): max ${Math.max(...perGeneration)}` }, callers);
  } finally {
    await stack.close();
  }
}

/** 4. LLM faults from the local OpenAI-compatible server, one compaction each. */
export async function llmFaults(): Promise<ReliabilityRow> {
  const stack = await startChaosStack('llm', { COMPACTION_LEASE_TTL_MS: '1000' });
  try {
    await stack.startWorker();
    const faults = [
      { name: '401', behaviours: [{ status: 401 }], expect: 'aborted' },
      { name: '429 retry-after', behaviours: [{ status: 429, headers: { 'retry-after': '1' } }], expect: 'compacted' },
      { name: '500', behaviours: [{ status: 500 }], expect: 'compacted' },
      { name: 'connection reset', behaviours: [{ reset: true }], expect: 'compacted' },
      { name: 'stream stalled > TTL', behaviours: [{ chunks: 4, stallAfterChunks: 1 }], expect: 'compacted' },
      { name: 'slow stream over 4 TTLs', behaviours: [{ chunks: 10, chunkDelayMs: 400 }], expect: 'compacted' },
    ];
    const ids = await sessionsWithHistory(stack, 'llm', faults.length);
    const callers = new Callers();
    const unexpected: string[] = [];
    for (const [i, fault] of faults.entries()) {
      stack.llm.script(...fault.behaviours);
      const answer = await callers.send(() => stack.client.compact(ids[i]));
      if (answer?.outcome !== fault.expect) unexpected.push(`${fault.name}: ${answer?.outcome}`);
    }
    return await row(stack, { scenario: 'LLM faults', faults: faults.map((f) => f.name).join(', '), recoverySeconds: null, notes: unexpected.length ? `unexpected: ${unexpected.join('; ')}` : '401 aborted, the rest compacted' }, callers);
  } finally {
    await stack.close();
  }
}

/** 5. Several workers, one killed at random moments, during a storm of compactions and appends. */
export async function workerStorm(size: { workers: number; sessions: number; seconds: number }): Promise<ReliabilityRow & { acknowledgedAppends: number; missingAppends: number }> {
  const stack = await startChaosStack('storm');
  try {
    for (let i = 0; i < size.workers; i++) await stack.startWorker();
    const ids = await sessionsWithHistory(stack, 'st', size.sessions);
    stack.llm.setDefault({ delayMs: 300 });
    const callers = new Callers();
    const acked: string[] = [];
    let appendErrors = 0;
    let running = true;
    let longestWait = 0;
    let kills = 0;
    const loops: Array<Promise<void>> = [];
    for (const id of ids) {
      loops.push(
        (async () => {
          for (let n = 0; running; n++) {
            const marker = `${id}/a${n}`;
            try {
              await stack.client.append(id, [{ role: 'user', content: `${marker} next step please` }, { role: 'assistant', content: `done ${marker}` }]);
              acked.push(marker);
            } catch {
              appendErrors++;
            }
            await sleep(100 + Math.random() * 200);
          }
        })(),
      );
      for (let c = 0; c < 2; c++) {
        loops.push(
          (async () => {
            while (running) {
              const head = (await stack.client.transcript(id)).sessionId;
              const started = Date.now();
              await callers.send(() => stack.client.compact(head, { force: true }));
              longestWait = Math.max(longestWait, Date.now() - started);
              await sleep(200 + Math.random() * 600);
            }
          })(),
        );
      }
    }
    const deadline = Date.now() + size.seconds * 1000;
    while (Date.now() < deadline) {
      await sleep(2000 + Math.random() * 3000);
      const victims = [...stack.workers];
      const victim = victims[Math.floor(Math.random() * victims.length)];
      if (victim) {
        await stack.killWorker(victim);
        kills++;
        await stack.startWorker();
      }
    }
    running = false;
    await Promise.all(loops);
    await callers.settle();
    const stored = await stack.db.db.execute(sql`select content #>> '{}' as c from messages where written_by_compaction is null and role = 'user'`);
    const markers = new Set(stored.rows.map((r) => String((r as { c: string }).c).split(' ')[0]));
    const missing = acked.filter((m) => !markers.has(m)).length;
    const base = await row(
      stack,
      { scenario: 'worker storm', faults: `${kills} random worker kills, ${size.workers} workers, ${size.sessions} sessions, ${size.seconds} s`, recoverySeconds: seconds(longestWait), notes: `${acked.length} appends acknowledged, ${appendErrors} refused` },
      callers,
    );
    return { ...base, acknowledgedAppends: acked.length, missingAppends: missing };
  } finally {
    await stack.close();
  }
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

const ODD_STRINGS = ['', ' ', '../../etc/passwd', "x'; drop table sessions; --", 'a/b\\c', '\u0000nul', '\ud800lone', '🙂emoji', 'ünïcödé', '%00%2e%2e', '$(rm -rf /)', '<script>', 'x'.repeat(300), '\n\t'];
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
    () => ({ role: r.pick(['wizard', 'USER', '', 'function', 7]), content: 'x' }),
    () => ({ role: 'user', content: r.pick(ODD_VALUES.filter((v) => v !== null && typeof v !== 'string')) }),
    () => ({ role: 'tool', content: 'result without call id' }),
    () => ({ role: 'user', content: 'x', [r.pick(['extra', '__proto__x', 'role2'])]: 1 }),
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
      else if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && (USER_ERROR_TYPES as readonly string[]).includes(error.cause.type ?? '')) typed++;
      else untyped.push(`${what}: ${(error as Error).name}: ${(error as Error).message}`.slice(0, 300));
    }
  };
  try {
    await stack.startWorker();
    const [target] = await sessionsWithHistory(stack, 'fz', 1);
    const counts = async () => (await stack.db.db.execute(sql`select (select count(*) from sessions) s, (select count(*) from messages) m, (select count(*) from lineages) l, (select count(*) from compactions) c`)).rows[0];
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
          await expectTyped('createSession(bad mode/source)', () => stack.client.createSession({ sessionId: `fz-new-${i}`, ...(r.next() < 0.5 ? { mode: r.pick(['fork', '', 7]) as never } : { source: r.pick([5, '', 'x'.repeat(101)]) as never }) }));
        } else if (kind === 2) {
          const batch = Array.from({ length: 1 + r.int(4) }, () => ({ role: 'user', content: 'fine' }) as unknown);
          batch.splice(r.int(batch.length + 1), 0, badMessage(r));
          await expectTyped('append(bad batch)', () => stack.client.append(r.next() < 0.8 ? target : (badSessionId(r) as string), r.next() < 0.9 ? batch : r.pick(ODD_VALUES)));
        } else if (kind === 3) {
          await expectTyped('compact(bad options)', () => stack.client.compact(target, badCompactOptions(r) as never));
        } else if (kind === 4) {
          const request = r.next() < 0.5 ? { sessionId: target, ...badCompactOptions(r) } : { sessionId: badSessionId(r), ...(r.next() < 0.5 ? badCompactOptions(r) : {}) };
          await expectTyped('raw Update', () => raw.executeUpdate(compactUpdate, { args: [request as never] }));
        } else {
          // A signal cannot be rejected: it must be dropped without harming the workflow.
          callers.requests++;
          await raw.signal('requestCompaction', r.pick([{ sessionId: target, background: true }, { sessionId: badSessionId(r) }, r.pick(ODD_VALUES), { sessionId: target, ...badCompactOptions(r) }]) as never);
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
      if (after2?.outcome !== 'compacted') untyped.push(`a valid compaction after the fuzz: ${after2?.outcome}`);
    } finally {
      await connection.close();
    }
    const base = await row(stack, { scenario: 'bad input (fuzz)', faults: `${size.iterations} bad calls (client, raw Updates, signals), ${size.cliRuns} CLI runs, seed ${size.seed}`, recoverySeconds: null }, callers);
    return { ...base, errorsToCallers: untyped.length, typed, untyped };
  } finally {
    await stack.close();
  }
}
