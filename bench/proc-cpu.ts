/**
 * CPU time per process of the benchmark's stack, from /proc (Linux): the benchmark process
 * (the callers), each worker process, Postgres (the postmaster and every backend), the Temporal
 * dev server, and the machine as a whole (so what other jobs on a shared machine took shows).
 * Read before and after a measure; the difference over the wall time is the cores each used.
 * Benchmark-only (issue 41 §4, the worker-count section).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcStat {
  pid: number;
  ppid: number;
  /**
   * utime + stime + cutime + cstime, in clock ticks: its own time and that of its children that
   * ended and were waited for (a Postgres backend that exits leaves its time in the postmaster's).
   */
  ticks: number;
}

/** One /proc/<pid>/stat line. The command name is in parentheses and may hold spaces or parentheses itself. */
export function parseProcStat(line: string): ProcStat {
  const close = line.lastIndexOf(')');
  const pid = Number(line.slice(0, line.indexOf(' ')));
  // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17), numbered from 1 as in proc(5).
  const rest = line
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  return { pid, ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]) };
}

/** The busy ticks of all cores together, from the first line of /proc/stat (everything but idle and iowait). */
export function parseMachineBusyTicks(procStat: string): number {
  const fields = procStat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest is counted in user already)
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return user + nice + system + irq + softirq + (steal ?? 0);
}

/** What a process of the stack is, from its command line; undefined for anything else. */
export function roleOf(cmdline: string): string | undefined {
  if (/(^|\/)postgres(\s|$)|postgres:/.test(cmdline)) return 'Postgres';
  if (/temporal\S*\s+server\s+start-dev/.test(cmdline)) return 'Temporal server';
  return undefined;
}

/**
 * The role of each process that descends from `root`: a process named in `labels` (by pid) and
 * everything under it count for that label; otherwise the nearest ancestor with a role (roleOf its
 * command line); `root` itself and anything else under it count as `rootLabel`. A process that
 * does not descend from `root` (another job's) is left out.
 */
export function rolesUnder(
  stats: ProcStat[],
  cmdlines: Map<number, string>,
  root: number,
  labels: Map<number, string>,
  rootLabel: string,
): Map<number, { role: string; ticks: number }> {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const out = new Map<number, { role: string; ticks: number }>();
  for (const s of stats) {
    let role: string | undefined;
    for (let p: ProcStat | undefined = s, hops = 0; p && hops < 64; p = byPid.get(p.ppid), hops++) {
      if (p.pid === root) {
        out.set(s.pid, { role: role ?? rootLabel, ticks: s.ticks });
        break;
      }
      role ??= labels.get(p.pid) ?? roleOf(cmdlines.get(p.pid) ?? '');
    }
  }
  return out;
}

export interface CpuSnapshot {
  at: number;
  machineTicks: number;
  byPid: Map<number, { role: string; ticks: number }>;
}

/** Reads /proc now: every process's ticks, grouped by role under `root` (this process by default). */
export function cpuSnapshot(labels: Map<number, string>, root = process.pid, rootLabel = 'benchmark process (callers, client)'): CpuSnapshot {
  const stats: ProcStat[] = [];
  const cmdlines = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      stats.push(parseProcStat(readFileSync(`/proc/${name}/stat`, 'utf8')));
      cmdlines.set(Number(name), readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim());
    } catch {
      // the process ended while we read
    }
  }
  return {
    at: performance.now(),
    machineTicks: parseMachineBusyTicks(readFileSync('/proc/stat', 'utf8')),
    byPid: rolesUnder(stats, cmdlines, root, labels, rootLabel),
  };
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicks;
}

/**
 * Cores each role used between two snapshots (CPU seconds over wall seconds), summed over its
 * processes' own differences: a process that started meanwhile counts from 0. A process that
 * ended meanwhile left all its time in its parent's children's time (the postmaster waits for
 * each backend): its time before the first snapshot is taken off again, so only the window counts.
 * Also the machine's busy cores, and `other`: what processes outside the benchmark took meanwhile.
 */
export function coresUsed(before: CpuSnapshot, after: CpuSnapshot, hz = ticksPerSecond()): Record<string, number> {
  const seconds = (after.at - before.at) / 1000;
  const cores = (ticks: number) => Number((ticks / hz / seconds).toFixed(2));
  const byRole = new Map<string, number>();
  const add = (role: string, ticks: number) => byRole.set(role, (byRole.get(role) ?? 0) + ticks);
  for (const [pid, { role, ticks }] of after.byPid) add(role, ticks - (before.byPid.get(pid)?.ticks ?? 0));
  for (const [pid, { role, ticks }] of before.byPid) if (!after.byPid.has(pid)) add(role, -ticks);
  let ours = 0;
  const out: Record<string, number> = {};
  for (const [role, ticks] of byRole) {
    ours += Math.max(0, ticks);
    out[role] = cores(Math.max(0, ticks));
  }
  const machine = after.machineTicks - before.machineTicks;
  out['machine (all processes)'] = cores(machine);
  out['other jobs on the machine'] = cores(Math.max(0, machine - ours));
  return out;
}
