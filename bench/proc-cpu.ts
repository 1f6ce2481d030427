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
  /** utime + stime, in clock ticks. */
  ticks: number;
}

/** One /proc/<pid>/stat line. The command name is in parentheses and may hold spaces or parentheses itself. */
export function parseProcStat(line: string): ProcStat {
  const close = line.lastIndexOf(')');
  const pid = Number(line.slice(0, line.indexOf(' ')));
  // After the name: state(3) ppid(4) ... utime(14) stime(15), numbered from 1 as in proc(5).
  const rest = line
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  return { pid, ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
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
 * Ticks per role over the processes that descend from `root`: a process named in `labels`
 * (by pid) and everything under it count for that label; otherwise the nearest ancestor with a
 * role (roleOf its command line) or a label; `root` itself and anything else under it count as `rootLabel`.
 */
export function ticksByRole(
  stats: ProcStat[],
  cmdlines: Map<number, string>,
  root: number,
  labels: Map<number, string>,
  rootLabel: string,
): Map<string, number> {
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const out = new Map<string, number>();
  for (const s of stats) {
    // Walk up to root: the nearest label or role on the way names the process; one that never reaches root is another job's.
    let role: string | undefined;
    for (let p: ProcStat | undefined = s, hops = 0; p && hops < 64; p = byPid.get(p.ppid), hops++) {
      if (p.pid === root) {
        role ??= rootLabel;
        out.set(role, (out.get(role) ?? 0) + s.ticks);
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
  byRole: Map<string, number>;
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
    byRole: ticksByRole(stats, cmdlines, root, labels, rootLabel),
  };
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicks;
}

/**
 * Cores each role used between two snapshots (CPU seconds over wall seconds), the machine's
 * busy cores, and `other`: what processes outside the benchmark took meanwhile. A process that
 * started or ended between the two counts from 0 or is left out (its ticks are lost).
 */
export function coresUsed(before: CpuSnapshot, after: CpuSnapshot, hz = ticksPerSecond()): Record<string, number> {
  const seconds = (after.at - before.at) / 1000;
  const cores = (ticks: number) => Number((ticks / hz / seconds).toFixed(2));
  const out: Record<string, number> = {};
  let ours = 0;
  for (const [role, ticks] of after.byRole) {
    const used = Math.max(0, ticks - (before.byRole.get(role) ?? 0));
    ours += used;
    out[role] = cores(used);
  }
  const machine = after.machineTicks - before.machineTicks;
  out['machine (all processes)'] = cores(machine);
  out['other jobs on the machine'] = cores(Math.max(0, machine - ours));
  return out;
}
