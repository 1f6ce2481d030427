/**
 * Fault-injection scenarios. Each runs against its own ChaosStack (real Temporal dev server,
 * real Postgres, real worker processes), injects its faults, and returns one row of the
 * reliability table (docs/reliability.md). The tests assert on the rows; `npm run chaos`
 * runs them at full size and prints the table.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { sql } from 'drizzle-orm';
import type { Pool } from 'pg';
import { type CompactResultWithTranscript, SessionsClient } from '../../src/client';
import { DIALECT_NAMES, type DialectName, dialectOf, type Message } from '../../src/compaction/dialects';
import { loadConfig, PROJECT_ROOT } from '../../src/config';
import { DatabaseQueryError, InvalidInputError, LineageErasedError, SessionCompactionError, USER_ERROR_TYPES } from '../../src/errors';
import { readWithRetry } from '../../src/db/database';
import { auditRows } from '../../src/db/session-store';
import { compactSignal, compactUpdate, lineageWorkflowId } from '../../src/workflows/contract';
import { conversation } from '../support/conversation';
import { FORGED_OUTPUTS, forgeriesInSummaries } from '../support/forged';
import { type SummariserCalls, summariserCallsPerHead } from '../support/fake-llm';
import { AppendLedger, canonical, ledgerProblems } from '../support/ledger';
import { strictProviderCheck } from '../support/strict-check';
import { type ChaosStack, startChaosStack } from './chaos-stack';
import {
  base,
  cutPointTurns,
  dialectAt,
  forgedField,
  forgedMessage,
  forgedSites,
  HOSTILE,
  HOSTILE_KINDS,
  historyFor,
  hostileSites,
  MARKER_SPACES,
  nonTextRequest,
  stepTurn,
  structuralMistakes,
} from './dialect-shapes';

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
        for each row when (new.parent_session_id is not null) execute function chaos_slow_commit();
      -- The trigger runs as the commit function's owner (sc_compaction_commit is SECURITY DEFINER).
      grant usage on sequence chaos_once to sc_owner;`),
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
  // A key long enough to be told apart, which the 401's body quotes back (as some gateways do).
  const key = `sk-chaos-${randomBytes(16).toString('hex')}`;
  const stack = await startChaosStack('llm', { OPENAI_API_KEY: key });
  try {
    await stack.startWorker();
    const faults = [
      { name: '401 echoing the key', behaviours: [{ status: 401, echoAuthorization: true }], expect: 'aborted' },
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
      // No error text holds the key: not the answer, not the audit row.
      const rows = await auditRows(stack.db.db, ids[i]);
      if (JSON.stringify([answer, rows.map((r) => r.reason)]).includes(key)) unexpected.push(`${fault.name}: the key is in the reason`);
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

/** 5. Several workers, one killed at random moments, during a storm of compactions and appends, in every dialect. */
export interface StormOptions {
  workers: number;
  /** Sessions, spread round-robin over the dialects (DIALECT_NAMES order). */
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

/** What the storm proved for the lineages of one dialect. */
interface DialectStormResult {
  sessions: number;
  acknowledgedAppends: number;
  appendErrors: number;
  compactionsCommitted: number;
  /** The test's own ledger, for this dialect's lineages only. */
  ledgerChecked: number;
  ledgerSummarised: number;
  /** Summarised messages whose text the ledger looked for in the summariser's prompts (and found: else a problem). */
  ledgerProbed: number;
  ledgerProblems: string[];
  /** Heads the dialect's strict provider refuses (`strictProviderCheck` of the provider view), with why. */
  providerRefusals: string[];
  /** Heads whose latest real user request is not the last one appended, verbatim. */
  latestRequestProblems: string[];
  /** What the forged tool outputs (stepTurn's every fourth step) forged in any summary the lineages ever had: a heading, a request line, a closing line. */
  ledgerForgeries: string[];
  /** Ledger command entries (in the audit rows) of the forged shell calls: evidence that summaries read the forged outputs. */
  forgedCommandsInLedgers: number;
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
  /** Per dialect with at least one session. */
  dialects: Partial<Record<DialectName, DialectStormResult>>;
};

/** Lineages spread round-robin over the dialects, each created in its dialect with a messy history of its own shape. */
async function dialectSessions(stack: ChaosStack, prefix: string, count: number, seed: number, ledger: AppendLedger) {
  const sessions = Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i}`, dialect: dialectAt(i), index: i }));
  for (const { id, dialect, index } of sessions) {
    await stack.client.createSession({ sessionId: id, dialect });
    const batch = historyFor(dialect, seed + index);
    ledger.record(id, batch, await stack.client.append(id, batch));
  }
  return sessions;
}

/** Why a head does not keep `request` verbatim as its latest real user request, or undefined. */
function latestRequestProblem(dialect: DialectName, head: readonly Message[], request: Message | undefined): string | undefined {
  if (!request) return 'no request was acknowledged';
  let at = head.length - 1;
  while (at >= 0 && canonical(head[at]) !== canonical(request)) at--;
  if (at < 0) return `the last request appended is not in the head: ${JSON.stringify(request).slice(0, 120)}`;
  const later = head.findIndex((m, i) => i > at && dialectOf(dialect).isRealUserRequest(m));
  return later >= 0 ? `message ${later} of the head comes after the last request as a real user request` : undefined;
}

/** The head's provider view as the dialect's strict provider reads it: why it would refuse it, or undefined. */
async function providerRefusal(client: SessionsClient, dialect: DialectName, sessionId: string): Promise<string | undefined> {
  const view = await client.transcript(sessionId, { for: 'provider' });
  const refusal = await strictProviderCheck(dialect, view.messages);
  return refusal ? `${view.sessionId}: ${refusal}` : undefined;
}

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
    const sessions = await dialectSessions(stack, 'st', size.sessions, seed, ledger);
    stack.llm.setDefault({ delayMs: 300, tagCalls: size.tagCalls });
    const callers = new Callers();
    const appendsOf = new Map<string, { acknowledged: number; errors: number; lastRequest?: Message }>(
      sessions.map((s) => [s.id, { acknowledged: 0, errors: 0 }]),
    );
    let firstAppendError: string | undefined;
    let running = true;
    let longestWait = 0;
    let kills = 0;
    const loops: Array<Promise<void>> = [];
    for (const { id, dialect, index } of sessions) {
      const pauses = prng(r.int(2 ** 31));
      const appends = appendsOf.get(id)!;
      loops.push(
        (async () => {
          for (let n = 0; running; n++) {
            // One agent step in the lineage's own shape: the request and the answer carry the
            // marker where the dialect keeps text; the tool results are JSON text.
            const batch = stepTurn(dialect, `${id}/a${n}`, `call_${index}`, n);
            try {
              ledger.record(id, batch, await stack.client.append(id, batch));
              appends.acknowledged++;
              appends.lastRequest = batch[0];
            } catch (error) {
              appends.errors++;
              firstAppendError ??= `${dialect}: ${String((error as Error).message ?? error)}`;
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
    const prompts = AppendLedger.prompts(stack.llm.requests);
    const own = await ledger.check(stack.db.pool, { prompts });
    const children = await stack.db.pool.query<{ n: number }>('select count(*)::int as n from sessions where parent_session_id is not null');
    const jobs = await stack.db.pool.query<{ summarised: number; refused: number }>(
      `select count(distinct id) filter (where outcome = 'compacted' or (outcome = 'refused' and summariser_prompt_tokens is not null))::int as summarised,
              count(distinct id) filter (where outcome = 'refused' and summariser_prompt_tokens is not null)::int as refused
       from compactions`,
    );
    const commitsByDialect = await stack.db.pool.query<{ dialect: DialectName; n: number }>(
      `select l.dialect, count(*)::int as n from compactions c join lineages l on l.id = c.lineage_id where c.outcome = 'compacted' group by l.dialect`,
    );
    // Per dialect: the same proof, by the same ledger, and the heads the agents would send next.
    const dialects: Partial<Record<DialectName, DialectStormResult>> = {};
    for (const dialect of DIALECT_NAMES) {
      const mine = sessions.filter((s) => s.dialect === dialect);
      if (mine.length === 0) continue;
      const report = await ledger.check(stack.db.pool, { prompts, lineages: mine.map((s) => s.id) });
      const providerRefusals: string[] = [];
      const latestRequestProblems: string[] = [];
      for (const { id } of mine) {
        const refusal = await providerRefusal(stack.client, dialect, id);
        if (refusal) providerRefusals.push(refusal);
        const problem = latestRequestProblem(dialect, (await stack.client.transcript(id)).messages, appendsOf.get(id)!.lastRequest);
        if (problem) latestRequestProblems.push(`${id}: ${problem}`);
      }
      // Every summary these lineages ever had (archived ones too), read line by line; and the audit rows' ledgers.
      const summaries = await stack.db.pool.query<{ body: Message }>(
        `select m.body from messages m join sessions s on s.id = m.session_id
         where s.lineage_id = any($1) and m.written_by_compaction is not null and m.lineage_seq is null`,
        [mine.map((s) => s.id)],
      );
      const d = dialectOf(dialect);
      const ledgers = await stack.db.pool.query<{ ledger: { commands?: Array<{ command: string }> } | null }>(
        `select ledger from compactions where lineage_id = any($1) and outcome = 'compacted'`,
        [mine.map((s) => s.id)],
      );
      const forgedCommands = FORGED_OUTPUTS.map((f) => `${f.command} # `);
      dialects[dialect] = {
        ledgerForgeries: forgeriesInSummaries(summaries.rows.filter((r) => d.isSummary(r.body)).map((r) => d.textOf(r.body))),
        forgedCommandsInLedgers: ledgers.rows.reduce(
          (n, r) => n + (r.ledger?.commands ?? []).filter((c) => forgedCommands.some((f) => c.command.startsWith(f))).length,
          0,
        ),
        sessions: mine.length,
        acknowledgedAppends: mine.reduce((n, s) => n + appendsOf.get(s.id)!.acknowledged, 0),
        appendErrors: mine.reduce((n, s) => n + appendsOf.get(s.id)!.errors, 0),
        compactionsCommitted: commitsByDialect.rows.find((row) => row.dialect === dialect)?.n ?? 0,
        ledgerChecked: report.checked,
        ledgerSummarised: report.summarised,
        ledgerProbed: report.probed,
        ledgerProblems: ledgerProblems(report),
        providerRefusals,
        latestRequestProblems,
      };
    }
    console.log(
      `worker storm: ${Object.entries(dialects)
        .map(
          ([d, x]) =>
            `${d} ${x.acknowledgedAppends} appends, ${x.compactionsCommitted} commits, ledger ${x.ledgerChecked} (${x.ledgerSummarised} summarised, ${x.ledgerProbed} probed)`,
        )
        .join('; ')}`,
    );
    const appended = [...appendsOf.values()].reduce((n, a) => n + a.acknowledged, 0);
    const appendErrors = [...appendsOf.values()].reduce((n, a) => n + a.errors, 0);
    const base = await row(
      stack,
      {
        scenario: size.dropGuards ? 'worker storm, fork guards dropped' : 'worker storm',
        faults: `${size.kills === false ? 'no' : kills} random worker kills, ${size.workers} workers, ${size.sessions} sessions (${Object.keys(dialects).join(', ')}), ${size.seconds} s, seed ${seed}${size.dropGuards ? ', unique-child index and ended-session trigger dropped' : ''}`,
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
      dialects,
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

/** What the fuzzer proved for one dialect. */
interface DialectFuzzResult {
  /** Library calls the database refused (a full disk: SQLSTATE 53100) that reached the caller as DatabaseQueryError. */
  refusedByDatabase: number;
  /** Hostile calls at this dialect's lineage refused by the client with a typed error (naming the field where the case knows it). */
  refusedByClient: number;
  /** Batches refused through raw SQL (SC400 naming the field, or a data exception for text Postgres cannot hold), nothing written. */
  refusedBySql: number;
  /** The SQLSTATEs of those refusals, and how often. */
  sqlStates: Record<string, number>;
  /** Outcomes of the compactions of hostile but valid input (cut points, image-only and file-only requests), per summariser. */
  hostileCompactions: { llm: string[]; extractive: string[] };
  /** The LLM summariser's prompts for this dialect show a tool result and arguments cut at their caps (the visible notes), all well-formed. */
  llmSawCuts: boolean;
  /** The built-in extractive summariser wrote the summary, with lines cut at its cap ('…'). */
  extractiveCut: boolean;
  /** The valid compaction of the fuzzed lineage after the fuzz. */
  afterFuzz?: string;
  /** Heads the dialect's strict provider refuses, after each compaction above. */
  providerRefusals: string[];
}

export type BadInputRow = ReliabilityRow & {
  typed: number;
  untyped: string[];
  /** Typed errors of library calls whose whole text (message, stack, properties, cause chain) was searched for SENT_VALUE. */
  errorsSearched: number;
  dialects: Record<DialectName, DialectFuzzResult>;
};

/**
 * A value every fuzzed batch carries in its fine messages (a ticket and a card number, as a
 * user pastes them): no error the library answers a refused call with may hold it, in its
 * message or anywhere in its cause chain (issue 33, point 5: drizzle's message held every
 * parameter). Raw SQL refusals are Postgres's own (its JSON parser quotes the input) and not searched.
 */
const SENT_VALUE = 'fz-sent-value: ticket INV-1042, card 4111 1111 1111 1111';
/** A fine message of the dialect that carries SENT_VALUE. */
const sent = (dialect: DialectName) => base(dialect, `${SENT_VALUE} {"step":"checkout","ok":true}`);

/** Every string reachable from `error`: its message, stack, own properties and its whole cause chain (as test/stack/secrets-in-errors.test.ts). */
function everythingIn(error: unknown): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (depth > 8 || value === null || value === undefined || seen.has(value)) return;
    if (typeof value === 'string') return void parts.push(value);
    if (typeof value !== 'object') return void parts.push(String(value));
    seen.add(value);
    if (value instanceof Error) parts.push(value.message, value.stack ?? '');
    for (const key of Object.getOwnPropertyNames(value)) visit((value as Record<string, unknown>)[key], depth + 1);
  };
  visit(error, 0);
  return parts.join('\n');
}

/** Code points, for case names: `U+00A0 U+FEFF`. */
const codePoints = (s: string) => [...s].map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join(' ');

/** Every string and key inside a JSON value is well-formed Unicode. */
function allWellFormed(value: unknown): boolean {
  const ok = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();
  if (typeof value === 'string') return ok(value);
  if (Array.isArray(value)) return value.every(allWellFormed);
  if (value && typeof value === 'object') return Object.entries(value).every(([k, v]) => ok(k) && allWellFormed(v));
  return true;
}

/** One lineage's rows, and the number of lineages: what a refused call must leave as it was. */
async function rowsOf(pool: Pool, lineageId: string): Promise<string> {
  const { rows } = await pool.query(
    `select (select count(*) from messages m join sessions s on s.id = m.session_id where s.lineage_id = $1)::int as messages,
            (select count(*) from sessions where lineage_id = $1)::int as sessions,
            (select count(*) from compactions where lineage_id = $1)::int as compactions,
            (select count(*) from append_keys where lineage_id = $1)::int as append_keys,
            (select appended_count from lineages where id = $1) as appended,
            (select count(*) from lineages)::int as lineages`,
    [lineageId],
  );
  return JSON.stringify(rows[0]);
}

const isTypedUpdateFailure = (error: unknown): error is WorkflowUpdateFailedError & { cause: ApplicationFailure } =>
  error instanceof WorkflowUpdateFailedError &&
  error.cause instanceof ApplicationFailure &&
  (USER_ERROR_TYPES as readonly string[]).includes(error.cause.type ?? '');

/** The fuzzer's book: every case ends typed (refused, naming its field) or answered; anything else is written down. */
class Fuzz {
  typed = 0;
  errorsSearched = 0;
  readonly untyped: string[] = [];
  readonly callers = new Callers();
  readonly dialects = Object.fromEntries(
    DIALECT_NAMES.map((d): [DialectName, DialectFuzzResult] => [
      d,
      {
        refusedByDatabase: 0,
        refusedByClient: 0,
        refusedBySql: 0,
        sqlStates: {},
        hostileCompactions: { llm: [], extractive: [] },
        llmSawCuts: false,
        extractiveCut: false,
        providerRefusals: [],
      },
    ]),
  ) as Record<DialectName, DialectFuzzResult>;
  /** Raw SQL batches accepted that must not have been, per dialect: the first is followed by a compaction, to show what it does. */
  private readonly wronglyAccepted = new Map<DialectName, number>();

  constructor(
    private readonly pool: Pool,
    private readonly client: SessionsClient,
  ) {}

  /** A call that must be refused with a typed error; with `field`, an InvalidInputError (or a typed Update failure) naming it. */
  async refused(what: string, call: () => Promise<unknown>, expected: { field?: string; dialect?: DialectName; sqlState?: string } = {}): Promise<void> {
    this.callers.requests++;
    let error: unknown;
    try {
      await call();
      this.untyped.push(`${what}: accepted`);
      return;
    } catch (e) {
      error = e;
    }
    this.callers.answered++;
    this.errorsSearched++;
    if (everythingIn(error).includes(SENT_VALUE)) this.untyped.push(`${what}: the error holds a value the call sent (${(error as Error).name})`);
    if (!(error instanceof SessionCompactionError) && !isTypedUpdateFailure(error)) {
      this.untyped.push(`${what}: ${(error as Error).name}: ${(error as Error).message}`.slice(0, 300));
      return;
    }
    if (expected.sqlState !== undefined) {
      if (!(error instanceof DatabaseQueryError) || error.code !== expected.sqlState) {
        this.untyped.push(`${what}: ${(error as Error).name}: ${(error as Error).message} (expected DatabaseQueryError ${expected.sqlState})`.slice(0, 300));
        return;
      }
      this.typed++;
      if (expected.dialect) this.dialects[expected.dialect].refusedByDatabase++;
      return;
    }
    if (expected.field !== undefined) {
      const named =
        error instanceof InvalidInputError
          ? error.field
          : isTypedUpdateFailure(error) && error.cause.type === 'InvalidInputError' && error.cause.message.startsWith(`invalid ${expected.field}:`)
            ? expected.field
            : undefined;
      if (named !== expected.field) {
        this.untyped.push(
          `${what}: refused, but naming ${JSON.stringify(named ?? (error as Error).message.slice(0, 100))} instead of ${JSON.stringify(expected.field)}`,
        );
        return;
      }
    }
    this.typed++;
    if (expected.dialect) this.dialects[expected.dialect].refusedByClient++;
  }

  /**
   * A statement through raw SQL that must fail and write nothing (counted in rows of the
   * lineage): SQLSTATE SC400 whose DETAIL names `field` (or a field under `fieldUnder`), or,
   * for text Postgres cannot receive at all (a NUL, a lone surrogate: `'text-rule'`), any data
   * exception (SQLSTATE class 22).
   */
  async sqlRefused(
    what: string,
    dialect: DialectName,
    lineageId: string,
    statement: { text: string; values: unknown[] },
    expected: { field: string } | { fieldUnder: string } | 'text-rule',
  ): Promise<void> {
    this.callers.requests++;
    const before = await rowsOf(this.pool, lineageId);
    let error: (Error & { code?: string; detail?: string }) | undefined;
    try {
      await this.pool.query(statement.text, statement.values);
    } catch (e) {
      error = e as Error & { code?: string; detail?: string };
    }
    const after = await rowsOf(this.pool, lineageId);
    const written = after !== before ? `; rows written: ${before} -> ${after}` : '';
    if (!error) {
      this.untyped.push(`${what}, through SQL: accepted${written}${await this.consequence(dialect, lineageId)}`);
      return;
    }
    this.callers.answered++;
    const code = error.code ?? '(no SQLSTATE)';
    let field: string | undefined;
    try {
      field = (JSON.parse(error.detail ?? '{}') as { field?: string }).field;
    } catch {
      field = undefined;
    }
    const right =
      expected === 'text-rule'
        ? code.startsWith('22')
        : code === 'SC400' && ('field' in expected ? field === expected.field : (field ?? '').startsWith(expected.fieldUnder));
    if (!right || written) {
      this.untyped.push(`${what}, through SQL: ${code} ${field ?? ''} ${error.message.slice(0, 120)} (expected ${JSON.stringify(expected)})${written}`);
      return;
    }
    this.typed++;
    const d = this.dialects[dialect];
    d.refusedBySql++;
    d.sqlStates[code] = (d.sqlStates[code] ?? 0) + 1;
  }

  /** What a wrongly accepted batch does to the lineage: the next compaction's outcome (for the first per dialect). */
  private async consequence(dialect: DialectName, lineageId: string): Promise<string> {
    const n = (this.wronglyAccepted.get(dialect) ?? 0) + 1;
    this.wronglyAccepted.set(dialect, n);
    if (n > 1) return '';
    const next = await this.client.compact(lineageId, { force: true }).catch((e: Error) => ({ outcome: `error ${e.message}`, reason: undefined }));
    return `; the next forced compaction: ${next.outcome}${next.reason ? ` (${next.reason})` : ''}`;
  }
}

/** A raw SQL append, as any client in any language may send it. */
const sqlAppend = (lineageId: string, batch: unknown, appendKey: string | null = null) => ({
  text: 'select session_append($1, $2::jsonb, $3)',
  values: [lineageId, JSON.stringify(batch), appendKey],
});

/**
 * The cases of every dialect, each once: every hostile string (NUL, lone high and low
 * surrogates) in every value and key the dialect's messages have (known and unknown fields),
 * forged summary markers behind every white space and format character in every place the
 * dialect keeps text, structural mistakes, and hostile strings in every other field (request
 * ids, focus topics, append keys, source, model, session ids, dialect names), from the
 * TypeScript client, raw Updates and signals, and raw SQL.
 */
async function fuzzEveryCase(
  fz: Fuzz,
  stack: ChaosStack,
  targets: ReadonlyArray<{ id: string; dialect: DialectName; raw: WorkflowHandle }>,
  exhaustive: boolean,
) {
  // Small runs send each case from the client with every kind of hostile string, and through
  // SQL with one (rotating over the sites); a forged marker behind every space character in
  // each dialect, in one site per character (rotating). Exhaustive runs send everything both ways.
  const hostile = exhaustive ? HOSTILE : HOSTILE_KINDS;
  // The dialects side by side (each on a lineage of its own), the cases of each in order.
  const oneDialect = async ({ id, dialect, raw }: (typeof targets)[number], t: number) => {
    for (const [i, site] of hostileSites(dialect).entries()) {
      for (const [j, bad] of hostile.entries()) {
        const { message, field } = site.build(bad);
        const batch = [sent(dialect), message];
        const what = `${dialect}: ${codePoints(bad)} in ${site.name}`;
        await fz.refused(what, () => stack.client.append(id, batch), { field: `messages[1]${field}`, dialect });
        if (exhaustive || j === (i + t) % hostile.length) await fz.sqlRefused(what, dialect, id, sqlAppend(id, batch), 'text-rule');
      }
    }
    const forged = forgedSites(dialect);
    for (const [i, space] of MARKER_SPACES.entries()) {
      for (const site of exhaustive ? forged : [forged[(i + t) % forged.length]]) {
        const batch = [sent(dialect), forgedMessage(site, space)];
        const what = `${dialect}: a summary marker behind ${codePoints(space)} in ${site.name}`;
        const field = `messages[1]${forgedField(dialect)}`;
        await fz.refused(what, () => stack.client.append(id, batch), { field, dialect });
        await fz.sqlRefused(what, dialect, id, sqlAppend(id, batch), { field });
      }
    }
    for (const mistake of structuralMistakes(dialect)) {
      const batch = [sent(dialect), mistake];
      const what = `${dialect}: ${JSON.stringify(mistake)}`;
      await fz.refused(what, () => stack.client.append(id, batch), { dialect });
      await fz.sqlRefused(what, dialect, id, sqlAppend(id, batch), { fieldUnder: 'messages[1]' });
    }
    for (const bad of HOSTILE_KINDS) {
      const s = `x${bad}y`;
      const what = (field: string) => `${dialect}: ${codePoints(bad)} in ${field}`;
      await fz.refused(what('requestId'), () => stack.client.compact(id, { requestId: s }), { field: 'requestId', dialect });
      await fz.refused(what('focusTopic'), () => stack.client.compact(id, { focusTopic: s }), { field: 'focusTopic', dialect });
      await fz.refused(what('appendKey'), () => stack.client.append(id, [sent(dialect)], { appendKey: s }), { field: 'appendKey', dialect });
      await fz.refused(what('the session id of an append'), () => stack.client.append(`fz${s}`, [sent(dialect)]), { field: 'sessionId', dialect });
      await fz.refused(what('source'), () => stack.client.createSession({ sessionId: `fz-new-${dialect}`, dialect, source: s }), { field: 'source', dialect });
      await fz.refused(what('model'), () => stack.client.createSession({ sessionId: `fz-new-${dialect}`, dialect, model: s }), { field: 'model', dialect });
      await fz.refused(what('a new session id'), () => stack.client.createSession({ sessionId: `fz${s}`, dialect }), { field: 'sessionId', dialect });
      await fz.refused(what('the dialect'), () => stack.client.createSession({ sessionId: `fz-new-${dialect}`, dialect: `${dialect}${bad}` as DialectName }), {
        field: 'dialect',
        dialect,
      });
      // Straight to the workflow: an Update is refused by its validator; a signal is dropped (the workflow's health is checked after the fuzz).
      for (const field of ['requestId', 'focusTopic'] as const) {
        await fz.refused(what(`a raw Update's ${field}`), () => raw.executeUpdate(compactUpdate, { args: [{ sessionId: id, [field]: s } as never] }), {
          field,
          dialect,
        });
        fz.callers.requests++;
        await raw.signal(compactSignal, { sessionId: id, [field]: s } as never);
        fz.callers.answered++;
        fz.typed++;
      }
    }
    // Text parameters through SQL: Postgres cannot receive a NUL at all.
    await fz.sqlRefused(`${dialect}: U+0000 in an append key`, dialect, id, sqlAppend(id, [sent(dialect)], 'key\u0000'), 'text-rule');
    await fz.sqlRefused(
      `${dialect}: U+0000 in a source`,
      dialect,
      id,
      { text: 'select session_create($1, $2, p_dialect => $3)', values: [`fz-sql-${dialect}`, 'src\u0000', dialect] },
      'text-rule',
    );
    // The data plane's limits (issue 33): what the clients refuse, SQL refuses too, and nothing wedges the lineage.
    await fz.sqlRefused(
      `${dialect}: a token count of 2^31-1`,
      dialect,
      id,
      { text: 'select session_append($1, $2::jsonb, null, $3)', values: [id, JSON.stringify([sent(dialect)]), '{2147483647}'] },
      { field: 'tokenCounts' },
    );
    await fz.sqlRefused(`${dialect}: a 20,000,000-character message`, dialect, id, sqlAppend(id, [base(dialect, 'x'.repeat(20_000_000))]), {
      field: 'messages[0]',
    });
    await fz.sqlRefused(
      `${dialect}: 1,001 messages in one append`,
      dialect,
      id,
      sqlAppend(
        id,
        Array.from({ length: 1001 }, (_, i) => base(dialect, `m${i}`)),
      ),
      {
        field: 'messages',
      },
    );
    // A batch the database refuses (a full disk, whose DETAIL quotes the row): the library answers
    // a DatabaseQueryError holding nothing the batch carried, keyed or not.
    for (const appendKey of [undefined, `fz-disk-full-${dialect}`]) {
      await fz.refused(
        `${dialect}: an append the database refuses${appendKey ? ' (keyed)' : ''}`,
        () => stack.client.append(id, [sent(dialect), base(dialect, `${DISK_FULL} ${SENT_VALUE}`)], appendKey ? { appendKey } : {}),
        { dialect, sqlState: '53100' },
      );
    }
    await fz.sqlRefused(
      `${dialect}: erasing the open lineage without closing it`,
      dialect,
      id,
      { text: 'select session_erase($1)', values: [id] },
      { field: 'close' },
    );
  };
  // The database refuses any message that carries DISK_FULL, as a full disk would, quoting the row.
  await stack.db.pool.query(`
    create function fz_disk_full() returns trigger language plpgsql as $$ begin
      raise exception 'could not extend file: No space left on device' using errcode = '53100', detail = 'Failing row contains ' || new.body::text;
    end $$;
    create trigger fz_disk_full before insert on messages for each row when (new.body::text like '%${DISK_FULL}%') execute function fz_disk_full();`);
  try {
    await Promise.all(targets.map(oneDialect));
  } finally {
    await stack.db.pool.query('drop trigger fz_disk_full on messages; drop function fz_disk_full();');
  }
}

/** The text of a message the fuzz's database refuses as a full disk would. */
const DISK_FULL = 'fz-disk-full';

/**
 * Hostile but valid input, answered by a compaction: turns whose cut points fall inside
 * surrogate pairs and emoji sequences at the summariser's caps, then a request with only an
 * image or only a file (one round per request). Each compaction must commit a head that is well-formed,
 * accepted by the dialect's strict provider, and keeps the non-text request verbatim as the
 * latest real user request.
 */
async function compactsHostileText(
  fz: Fuzz,
  client: SessionsClient,
  pool: Pool,
  dialect: DialectName,
  id: string,
  summariser: 'llm' | 'extractive',
  requests: ReadonlyArray<'image' | 'file'>,
  seed: number,
) {
  const d = fz.dialects[dialect];
  await client.createSession({ sessionId: id, dialect });
  await client.append(id, historyFor(dialect, seed));
  let head = id;
  for (const [round, kind] of requests.entries()) {
    const request = nonTextRequest(dialect, kind);
    await client.append(head, [...cutPointTurns(dialect, `${id}/r${round}`), ...stepTurn(dialect, `${id}/s${round}`, `call_s${round}`, round), request]);
    const what = `${dialect} (${summariser} summariser): cut points inside emoji, then a ${kind}-only request`;
    const answer = await fz.callers.send(() => client.compact(head, { force: true }));
    if (!answer) {
      fz.untyped.push(`${what}: the compaction failed`);
      continue;
    }
    d.hostileCompactions[summariser].push(answer.outcome);
    if (answer.outcome !== 'compacted') {
      fz.untyped.push(`${what}: ${answer.outcome}${answer.reason ? ` (${answer.reason})` : ''}`);
      continue;
    }
    head = answer.sessionId;
    if (!allWellFormed(answer.messages)) fz.untyped.push(`${what}: the head holds a string that is not well-formed`);
    const refusal = await providerRefusal(client, dialect, head);
    if (refusal) d.providerRefusals.push(refusal);
    const problem = latestRequestProblem(dialect, answer.messages, request);
    if (problem) fz.untyped.push(`${what}: ${problem}`);
    if (summariser === 'extractive') {
      const summary = answer.messages.find((m) => dialectOf(dialect).isSummary(m));
      const { rows } = await pool.query<{ model: string }>(`select model from compactions where lineage_id = $1 and outcome = 'compacted'`, [id]);
      d.extractiveCut ||= rows.every((r) => r.model === 'builtin-extractive') && summary !== undefined && dialectOf(dialect).textOf(summary).includes('…');
    }
  }
}

export async function badInput(size: {
  iterations: number;
  cliRuns: number;
  seed: number;
  /** Every hostile string in every site both ways, every forged marker in every site, both non-text requests with both summarisers (npm run chaos). */
  exhaustive?: boolean;
}): Promise<BadInputRow> {
  const stack = await startChaosStack('fuzz');
  const r = prng(size.seed);
  const fz = new Fuzz(stack.db.pool, stack.client);
  // A second task queue whose worker has no LLM: lineages created through `extractive` are
  // summarised by the built-in extractive summariser, the others by the local LLM.
  const extractiveEnv = { TEMPORAL_TASK_QUEUE: `${stack.env.TEMPORAL_TASK_QUEUE}-extractive`, OPENAI_API_KEY: '' };
  let extractive: SessionsClient | undefined;
  const phases: Record<string, number> = {};
  let phaseStart = Date.now();
  const phase = (name: string) => {
    phases[`${name}Seconds`] = seconds(Date.now() - phaseStart);
    phaseStart = Date.now();
  };
  try {
    await stack.startWorker();
    // The extractive worker starts while the refusals run (it is needed only for the compactions after them).
    const extractiveWorker = stack.startWorker(extractiveEnv);
    extractiveWorker.catch(() => undefined);
    extractive = await SessionsClient.connect({ config: loadConfig({ ...stack.env, ...extractiveEnv }), database: stack.db });
    const connection = await Connection.connect({ address: stack.config.temporal.address });
    try {
      const workflows = new Client({ connection }).workflow;
      const targets: Array<{ id: string; dialect: DialectName; raw: WorkflowHandle }> = [];
      for (const [i, dialect] of DIALECT_NAMES.entries()) {
        const id = `fz-${dialect}`;
        await stack.client.createSession({ sessionId: id, dialect });
        await stack.client.append(id, historyFor(dialect, size.seed + i));
        targets.push({ id, dialect, raw: workflows.getHandle(lineageWorkflowId(id)) });
      }
      const chat = targets[0];
      const counts = async () =>
        (
          await stack.db.db.execute(
            sql`select (select count(*) from sessions) s, (select count(*) from messages) m, (select count(*) from lineages) l, (select count(*) from compactions) c, (select count(*) from append_keys) k`,
          )
        ).rows[0];
      const before = await counts();
      phase('setup');

      await fuzzEveryCase(fz, stack, targets, size.exhaustive === true);
      phase('everyCase');

      for (let i = 0; i < size.iterations; i++) {
        const target = r.pick(targets);
        const { id, dialect, raw } = target;
        const kind = r.int(10);
        if (kind === 0) {
          const sessionId = badSessionId(r);
          await fz.refused(`createSession(${JSON.stringify(sessionId)?.slice(0, 40)})`, () =>
            stack.client.createSession({ sessionId: sessionId as string, dialect }),
          );
        } else if (kind === 1) {
          await fz.refused('createSession(bad mode/source)', () =>
            stack.client.createSession({
              sessionId: `fz-new-${i}`,
              dialect,
              ...(r.next() < 0.5 ? { mode: r.pick(['fork', '', 7]) as never } : { source: r.pick([5, '', 'x'.repeat(101)]) as never }),
            }),
          );
        } else if (kind === 2) {
          const batch: unknown[] = Array.from({ length: 1 + r.int(4) }, () => sent(dialect));
          batch.splice(r.int(batch.length + 1), 0, dialect === 'openai-chat' && r.next() < 0.5 ? badMessage(r) : r.pick(structuralMistakes(dialect)));
          await fz.refused(`append(bad ${dialect} batch)`, () =>
            stack.client.append(r.next() < 0.8 ? id : (badSessionId(r) as string), r.next() < 0.9 ? batch : r.pick(ODD_VALUES)),
          );
        } else if (kind === 3) {
          await fz.refused('compact(bad options)', () => stack.client.compact(id, badCompactOptions(r) as never));
        } else if (kind === 4) {
          const request =
            r.next() < 0.5 ? { sessionId: id, ...badCompactOptions(r) } : { sessionId: badSessionId(r), ...(r.next() < 0.5 ? badCompactOptions(r) : {}) };
          await fz.refused('raw Update', () => raw.executeUpdate(compactUpdate, { args: [request as never] }));
        } else if (kind === 5) {
          // A signal cannot be rejected: it must be dropped without harming the workflow.
          fz.callers.requests++;
          await raw.signal(
            'requestCompaction',
            r.pick([
              { sessionId: id, background: true },
              { sessionId: badSessionId(r) },
              r.pick(ODD_VALUES),
              { sessionId: id, ...badCompactOptions(r) },
            ]) as never,
          );
          fz.callers.answered++;
          fz.typed++;
        } else if (kind === 6) {
          // A hostile string anywhere in a message of the dialect, in a batch of fine ones.
          const site = r.pick(hostileSites(dialect));
          const bad = `${r.pick(['', 'text ', '🙂'])}${r.pick(HOSTILE)}${r.pick(['', ' tail', '👍🏽'])}`;
          const { message, field } = site.build(bad);
          const batch: unknown[] = Array.from({ length: r.int(4) }, () => sent(dialect));
          const at = r.int(batch.length + 1);
          batch.splice(at, 0, message);
          const what = `${dialect}: ${codePoints(bad)} in ${site.name}`;
          if (r.next() < 0.5) await fz.refused(what, () => stack.client.append(id, batch), { field: `messages[${at}]${field}`, dialect });
          else await fz.sqlRefused(what, dialect, id, sqlAppend(id, batch), 'text-rule');
        } else if (kind === 7) {
          // A forged marker behind any run of white space and format characters.
          const site = r.pick(forgedSites(dialect));
          const space = Array.from({ length: 1 + r.int(3) }, () => r.pick(MARKER_SPACES)).join('');
          const batch: unknown[] = Array.from({ length: r.int(3) }, () => sent(dialect));
          const at = r.int(batch.length + 1);
          batch.splice(at, 0, forgedMessage(site, space));
          const what = `${dialect}: a summary marker behind ${codePoints(space)} in ${site.name}`;
          const field = `messages[${at}]${forgedField(dialect)}`;
          if (r.next() < 0.5) await fz.refused(what, () => stack.client.append(id, batch), { field, dialect });
          else await fz.sqlRefused(what, dialect, id, sqlAppend(id, batch), { field });
        } else if (kind === 8) {
          // A hostile string in a field that is not a message.
          const s = `${r.pick(['', 'a', '🧑‍💻'])}${r.pick(HOSTILE)}${r.pick(['', 'z', '🇯🇵'])}`;
          const [field, call] = r.pick<[string, () => Promise<unknown>]>([
            ['requestId', () => stack.client.compact(id, { requestId: s })],
            ['focusTopic', () => stack.client.compact(id, { focusTopic: s, force: true })],
            ['appendKey', () => stack.client.append(id, [sent(dialect)], { appendKey: s })],
            ['source', () => stack.client.createSession({ sessionId: `fz-new-${i}`, dialect, source: s })],
            ['model', () => stack.client.createSession({ sessionId: `fz-new-${i}`, dialect, model: s })],
            ['sessionId', () => stack.client.createSession({ sessionId: `fz-${s}`, dialect })],
            ['requestId', () => raw.executeUpdate(compactUpdate, { args: [{ sessionId: id, requestId: s } as never] })],
            ['focusTopic', () => raw.executeUpdate(compactUpdate, { args: [{ sessionId: id, focusTopic: s } as never] })],
          ]);
          await fz.refused(`${dialect}: ${codePoints(s)} in ${field}`, call, { field, dialect });
        } else {
          const batch = [sent(dialect), r.pick(structuralMistakes(dialect))];
          await fz.sqlRefused(`${dialect}: ${JSON.stringify(batch[1])}`, dialect, id, sqlAppend(id, batch), { fieldUnder: 'messages[1]' });
        }
      }
      phase('random');
      const run = promisify(execFile);
      // The CLI runs three at a time (each is a process of its own).
      const cliRuns = Array.from({ length: size.cliRuns }, (_, i) => {
        const target = r.pick(targets);
        const args = r.pick([
          ['create', r.pick(['../x', "x';--", 'a b', 'é', '-lead', 'x'.repeat(200), 'chat--g1', '']), '--json'],
          ['create', `fz-cli-${i}`, '--dialect', r.pick(['klingon', 'OPENAI-CHAT', 'gemini ', '']), '--json'],
          ['compact', chat.id, '--focus', 'x'.repeat(1001), '--json'],
          ['compact', chat.id, '--background', '--json'],
          ['append', target.id, '--json'],
          ['frobnicate'],
        ]);
        // JSON on stdin: a lone surrogate travels as its \u escape, as any JSON encoder writes it.
        const message =
          r.next() < 0.5
            ? r.pick(hostileSites(target.dialect)).build(r.pick(HOSTILE)).message
            : forgedMessage(r.pick(forgedSites(target.dialect)), r.pick(MARKER_SPACES));
        return { args, stdin: args[0] === 'append' ? JSON.stringify([base(target.dialect), message]) : '' };
      });
      const runCli = async ({ args, stdin }: (typeof cliRuns)[number]) => {
        fz.callers.requests++;
        const child = run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], { env: { ...process.env, ...stack.env } });
        child.child.stdin!.end(stdin);
        try {
          await child;
          fz.untyped.push(`cli ${args.join(' ').slice(0, 60)}: exit 0`);
        } catch (error) {
          const e = error as { code: number; stdout: string };
          fz.callers.answered++;
          if (e.code === 2) fz.typed++;
          else fz.untyped.push(`cli ${args.join(' ').slice(0, 60)}: exit ${e.code}`);
        }
      };
      for (let i = 0; i < cliRuns.length; i += 3) await Promise.all(cliRuns.slice(i, i + 3).map(runCli));
      const after = await counts();
      if (JSON.stringify(after) !== JSON.stringify(before)) fz.untyped.push(`rows written by bad input: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
      phase('cli');

      // Hostile but valid input, per dialect and summariser, all at once: an image-only
      // request with the LLM and a file-only one with the extractive summariser (both with each when exhaustive).
      const client = extractive;
      await extractiveWorker;
      await Promise.all(
        DIALECT_NAMES.flatMap((dialect, i) => [
          compactsHostileText(
            fz,
            stack.client,
            stack.db.pool,
            dialect,
            `fzv-${dialect}`,
            'llm',
            size.exhaustive ? ['image', 'file'] : ['image'],
            size.seed + 10 + i,
          ),
          compactsHostileText(
            fz,
            client,
            stack.db.pool,
            dialect,
            `fzx-${dialect}`,
            'extractive',
            size.exhaustive ? ['file', 'image'] : ['file'],
            size.seed + 20 + i,
          ),
        ]),
      );
      const bodies = stack.llm.requests.map((request) => request.body);
      if (!allWellFormed(bodies)) fz.untyped.push('a summariser request held a string that is not well-formed');
      for (const dialect of DIALECT_NAMES) {
        const prompts = bodies.map((b) => JSON.stringify(b)).filter((b) => b.includes(`fzv-${dialect}/r`));
        fz.dialects[dialect].llmSawCuts =
          prompts.some((p) => p.includes('more characters of this tool result not shown')) &&
          prompts.some((p) => p.includes('more characters of these arguments not shown'));
      }
      phase('hostileCompactions');

      // Each fuzzed workflow is healthy (running, no failed workflow task), and its lineage compacts.
      for (const { id, dialect, raw } of targets) {
        const description = await raw.describe();
        const history = await raw.fetchHistory();
        const failedTasks = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
        if (description.status.name !== 'RUNNING' || failedTasks > 0)
          fz.untyped.push(`${dialect}: workflow ${description.status.name} with ${failedTasks} failed task(s)`);
        const step = stepTurn(dialect, `${id}/after`, 'call_after', 0);
        await stack.client.append(id, step);
        const answer = await fz.callers.send(() => stack.client.compact(id));
        fz.dialects[dialect].afterFuzz = answer?.outcome;
        if (answer?.outcome !== 'compacted') {
          fz.untyped.push(`${dialect}: a valid compaction after the fuzz: ${answer?.outcome}${answer?.reason ? ` (${answer.reason})` : ''}`);
          continue;
        }
        const refusal = await providerRefusal(stack.client, dialect, answer.sessionId);
        if (refusal) fz.dialects[dialect].providerRefusals.push(refusal);
        const problem = latestRequestProblem(dialect, answer.messages, step[0]);
        if (problem) fz.untyped.push(`${dialect}: after the fuzz: ${problem}`);
      }
      phase('afterFuzz');
      console.log(`bad input: seed ${size.seed}, ${JSON.stringify(phases)}`);
    } finally {
      await connection.close();
    }
    const base_ = await row(
      stack,
      {
        scenario: 'bad input (fuzz)',
        faults: `every hostile case of ${DIALECT_NAMES.length} dialects, ${size.iterations} random bad calls (client, raw SQL, raw Updates, signals), ${size.cliRuns} CLI runs, cut points with both summarisers, seed ${size.seed}`,
        recoverySeconds: null,
        evidence: phases,
      },
      fz.callers,
    );
    return { ...base_, errorsToCallers: fz.untyped.length, typed: fz.typed, untyped: fz.untyped, errorsSearched: fz.errorsSearched, dialects: fz.dialects };
  } finally {
    await extractive?.close();
    await stack.close();
  }
}

// ---------------------------------------------------------------------------------------
// 7. Lineage churn: erase and re-create under a slow summary, and two retention batches at once.

export type ChurnRow = ReliabilityRow & {
  /** Per cycle: what showed that its faults landed, and what the test's own SQL found in the new lineage. */
  cycles: Array<{
    oldJob?: string;
    oldJobReason?: string;
    staleWritesRefused: number;
    oldWriterAppendsBefore: number;
    leaks: string[];
  }>;
  /** Errors the old writers got that were not typed (LineageErasedError, SessionNotFoundError). */
  untyped: string[];
  retention: {
    firstBatch: number;
    secondBatch: number;
    /** B was sent while A's transaction was open (holding its deleted rows). */
    secondOverlapped: boolean;
    secondWaitedOnLock: boolean;
    gaps: Record<string, number>;
  };
  afterChurn?: string;
};

/** The lineage's messages (own SQL, by session id and sequence number), canonical. */
async function bodiesOf(pool: Pool, lineageId: string): Promise<string[]> {
  const { rows } = await pool.query<{ body: unknown }>(
    `select m.body from messages m join sessions s on s.id = m.session_id where s.lineage_id = $1 order by s.id, m.seq`,
    [lineageId],
  );
  return rows.map((r) => canonical(r.body));
}

/** Sequence numbers of a lineage neither stored nor inside a pruned range (the SQL of test/stack/retention-serial.test.ts). */
async function gapsOf(pool: Pool, lineageId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `select count(*)::int as n from generate_series(1, (select appended_count from lineages where id = $1)) g(seq)
     where not exists (select 1 from messages m join sessions s on s.id = m.session_id where s.lineage_id = $1 and m.lineage_seq = g.seq)
       and not exists (select 1 from pruned_messages p where p.lineage_id = $1 and g.seq between p.from_seq and p.to_seq)`,
    [lineageId],
  );
  return rows[0].n;
}

/**
 * One lineage id erased and created again `cycles` times, each while a forced compaction's
 * summary is still streaming (until the cycle's erase, re-creation and stale calls are done) and old writers (a client that learnt
 * the incarnation) keep appending: the erase and re-creation go through raw SQL, as another
 * process would, so the workflow and its activity run on and the old job reaches its commit
 * against the new lineage. Then two retention batches at once over lineages whose rotations
 * left ended sessions, the first held open in its transaction while the second is sent.
 */
export async function lineageChurn(size: { cycles: number; writers: number; retentionLineages: number }): Promise<ChurnRow> {
  const stack = await startChaosStack('churn');
  const pool = stack.db.pool;
  const untyped: string[] = [];
  const cycles: ChurnRow['cycles'] = [];
  const callers = new Callers();
  try {
    await stack.startWorker();
    const id = 'ch-churn';
    // The first incarnation, created and filled by another process.
    await pool.query('select session_create($1)', [id]);
    await pool.query('select session_append($1, $2::jsonb)', [id, JSON.stringify(historyFor('openai-chat', 500))]);
    const started = Date.now();
    for (let c = 0; c < size.cycles; c++) {
      const cycle: ChurnRow['cycles'][number] = { staleWritesRefused: 0, oldWriterAppendsBefore: 0, leaks: [] };
      cycles.push(cycle);
      // The old writer learns this incarnation with a keyed append (acknowledged).
      const oldWriter = await SessionsClient.connect({ config: stack.config, database: stack.db });
      let releaseSummary: (() => void) | undefined;
      try {
        const keyed = stepTurn('openai-chat', `ch-old-${c}/keyed`, `call_old_${c}`, 0);
        await oldWriter.append(id, keyed, { appendKey: `ch-old-${c}-turn` });
        // The old job's summary streams on until this cycle's erase, re-creation and stale calls are done.
        const summaryHeld = new Promise<void>((resolve) => (releaseSummary = resolve));
        stack.llm.script({ streamUntil: summaryHeld, text: `OLD-JOB-${c}: the user asked for a deploy plan; the tests passed.` });
        const requestsBefore = stack.llm.requests.length;
        const job = callers.send(() => oldWriter.compactAnswer(id, { force: true }) as Promise<CompactResultWithTranscript>);
        await stack.llm.waitForRequests(requestsBefore + 1);
        // Old writers append on across the erase and re-creation.
        let writing = true;
        let recreated = false;
        const writers = Array.from({ length: size.writers }, async (_, w) => {
          for (let n = 0; writing; n++) {
            try {
              await oldWriter.append(id, stepTurn('openai-chat', `ch-old-${c}/w${w}/${n}`, `call_old_${c}_${w}`, n));
              if (!recreated) cycle.oldWriterAppendsBefore++;
            } catch (error) {
              if (error instanceof LineageErasedError) cycle.staleWritesRefused++;
              // Between the erase and the re-creation the id names no lineage (SessionNotFoundError): typed too.
              else if (!(error instanceof SessionCompactionError))
                untyped.push(`cycle ${c}, old writer ${w}: ${(error as Error).name}: ${(error as Error).message}`.slice(0, 300));
            }
            await sleep(50);
          }
        });
        await sleep(300);
        const { rows: learnt } = await pool.query<{ incarnation: string }>('select incarnation from lineages where id = $1', [id]);
        // Erased and created again by another process while the summary runs, then filled.
        await pool.query('select session_erase($1, true)', [id]);
        await pool.query('select session_create($1)', [id]);
        recreated = true;
        const fresh: Message[][] = [historyFor('openai-chat', 600 + c)];
        for (let n = 0; n < 3; n++) fresh.push(stepTurn('openai-chat', `ch-new-${c}/${n}`, `call_new_${c}`, n));
        for (const batch of fresh) await pool.query('select session_append($1, $2::jsonb)', [id, JSON.stringify(batch)]);
        await sleep(300);
        writing = false;
        await Promise.all(writers);
        // A raw SQL append naming the old incarnation (as any client in any language holds it): SC411.
        const rawStale = await pool
          .query('select session_append($1, $2::jsonb, p_incarnation => $3)', [
            id,
            JSON.stringify(stepTurn('openai-chat', `ch-old-${c}/sql`, `call_old_${c}_sql`, 1)),
            learnt[0].incarnation,
          ])
          .then(
            () => 'accepted',
            (error: Error & { code?: string }) => error.code ?? error.message,
          );
        if (rawStale === 'SC411') cycle.staleWritesRefused++;
        else untyped.push(`cycle ${c}: a raw SQL append naming the erased incarnation: ${rawStale}`);
        // The keyed resend of the batch acknowledged before the erase, a pop-and-replace, a compaction.
        for (const call of [
          () => oldWriter.append(id, keyed, { appendKey: `ch-old-${c}-turn` }),
          () => oldWriter.replaceTail(id, { count: 1, replacement: [{ role: 'user', content: `ch-old-${c}: redo {"retry":1}` }] }),
          () => oldWriter.compact(id, { force: true }),
        ]) {
          try {
            await call();
            untyped.push(`cycle ${c}: an old writer's call was accepted after the re-creation`);
          } catch (error) {
            if (error instanceof LineageErasedError) cycle.staleWritesRefused++;
            else untyped.push(`cycle ${c}: ${(error as Error).name}: ${(error as Error).message}`.slice(0, 300));
          }
        }
        releaseSummary?.();
        const answer = await job;
        cycle.oldJob = answer?.outcome;
        cycle.oldJobReason = answer?.reason;
        // Own SQL: the new lineage holds exactly what was appended to it, and no trace of the old job or writers.
        const expected = fresh.flat().map(canonical);
        const stored = await bodiesOf(pool, id);
        if (JSON.stringify(stored) !== JSON.stringify(expected))
          cycle.leaks.push(`the new lineage holds ${stored.length} rows, ${expected.length} were appended to it`);
        const old = stored.filter((b) => b.includes(`ch-old-${c}`) || b.includes(`OLD-JOB-${c}`));
        if (old.length) cycle.leaks.push(`${old.length} rows of the old incarnation: ${old[0].slice(0, 120)}`);
        const { rows } = await pool.query<{ compactions: number; sessions: number; keys: number; generation: number }>(
          `select (select count(*) from compactions where lineage_id = $1)::int as compactions,
                  (select count(*) from sessions where lineage_id = $1)::int as sessions,
                  (select count(*) from append_keys where lineage_id = $1)::int as keys,
                  (select generation from lineages where id = $1) as generation`,
          [id],
        );
        if (JSON.stringify(rows[0]) !== JSON.stringify({ compactions: 0, sessions: 1, keys: 0, generation: 0 }))
          cycle.leaks.push(`the new lineage's rows: ${JSON.stringify(rows[0])}`);
      } finally {
        releaseSummary?.();
        await oldWriter.close();
      }
    }
    const recovery = Date.now() - started;
    // The last incarnation compacts (a client that never wrote to an erased one).
    const newWriter = await SessionsClient.connect({ config: stack.config, database: stack.db });
    let afterChurn: string | undefined;
    try {
      stack.llm.setDefault({});
      const answer = await callers.send(() => newWriter.compact(id, { force: true }));
      afterChurn = answer?.outcome;
    } finally {
      await newWriter.close();
    }

    // Two retention batches at once, over lineages whose rotations left ended sessions.
    const grown = Array.from({ length: size.retentionLineages }, (_, i) => `ch-ret-${i}`);
    await Promise.all(
      grown.map(async (lineage, i) => {
        await stack.client.createSession({ sessionId: lineage });
        for (let r = 0; r < 3; r++) {
          const { sessionId: head } = await stack.client.append(lineage, historyFor('openai-chat', 700 + 10 * i + r).slice(r === 0 ? 0 : 1), {
            appendKey: `${lineage}-batch-${r}`,
          });
          const answer = await callers.send(() => stack.client.compact(head, { force: true }));
          if (answer?.outcome !== 'compacted') untyped.push(`${lineage}: compaction ${r}: ${answer?.outcome} ${answer?.reason ?? ''}`);
        }
      }),
    );
    const retention = await concurrentRetention(pool, grown);
    console.log(`lineage churn: ${JSON.stringify({ cycles, retention, afterChurn })}`);
    return {
      ...(await row(
        stack,
        {
          scenario: 'lineage churn',
          faults: `${size.cycles} erase-and-recreate cycles (raw SQL) under a streaming summary with ${size.writers} old writers; 2 retention batches at once over ${size.retentionLineages} lineages`,
          recoverySeconds: seconds(recovery),
          evidence: {
            staleJobs: cycles.filter((c) => c.oldJob === 'stale').length,
            staleWritesRefused: cycles.reduce((n, c) => n + c.staleWritesRefused, 0),
            secondBatchOverlapped: retention.secondOverlapped,
          },
        },
        callers,
      )),
      cycles,
      untyped,
      retention,
      afterChurn,
    };
  } finally {
    await stack.close();
  }
}

const ENDED_NOW = JSON.stringify({ endedSessionDays: 0 });

/**
 * Two retention batches at once: batch A deletes the ended sessions' rows up to the first copy
 * of a message copied into two ended sessions and holds its transaction open; batch B, sent
 * meanwhile, would take the rest (the other copy). One batch at a time, B waits on the
 * retention lock until A commits; without it, each sees the other's copy and neither records
 * the message as pruned. Gaps are counted with the test's own SQL.
 */
async function concurrentRetention(pool: Pool, lineages: string[]): Promise<ChurnRow['retention']> {
  const split = (
    await pool.query<{ first: string }>(
      `select min(m.id)::text as first from messages m join sessions s on s.id = m.session_id
       where s.lineage_id = any($1) and m.lineage_seq is not null
       group by s.lineage_id, m.lineage_seq having count(*) >= 2 and bool_and(s.ended_at is not null)
       order by min(m.id) limit 1`,
      [lineages],
    )
  ).rows[0];
  const result: ChurnRow['retention'] = { firstBatch: 0, secondBatch: 0, secondOverlapped: false, secondWaitedOnLock: false, gaps: {} };
  if (!split) return result;
  const { rows } = await pool.query<{ n: number }>(
    `select count(*)::int as n from messages m join sessions s on s.id = m.session_id where s.ended_at is not null and m.id <= $1`,
    [split.first],
  );
  const a = await pool.connect();
  const b = await pool.connect();
  try {
    await a.query('begin');
    const first = await a.query<{ r: { messages: number } }>('select retention_prune($1::jsonb, $2::integer) as r', [ENDED_NOW, rows[0].n]);
    result.firstBatch = first.rows[0].r.messages;
    const bPid = (await b.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    await b.query('begin');
    let bDone = false;
    const second = b
      .query<{ r: { messages: number } }>('select retention_prune($1::jsonb, $2::integer) as r', [ENDED_NOW, 100_000])
      .finally(() => (bDone = true));
    // B is sent while A's transaction is open; one batch at a time, it waits on the retention lock.
    result.secondOverlapped = !bDone;
    for (const deadline = Date.now() + 30_000; !bDone && Date.now() < deadline;) {
      const waits = await pool.query<{ n: number }>(`select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and pid = $1`, [bPid]);
      if (waits.rows[0].n > 0) {
        result.secondWaitedOnLock = true;
        break;
      }
      await sleep(20);
    }
    await a.query('commit');
    result.secondBatch = (await second).rows[0].r.messages;
    await b.query('commit');
  } finally {
    await a.query('rollback').catch(() => undefined);
    await b.query('rollback').catch(() => undefined);
    a.release();
    b.release();
  }
  for (const lineage of lineages) result.gaps[lineage] = await gapsOf(pool, lineage);
  return result;
}
