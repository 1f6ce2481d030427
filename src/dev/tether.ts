/**
 * Runs a child process (the Temporal dev server, Postgres) so that it cannot outlive the
 * process that started it, however that process ends, SIGKILL included.
 *
 * The command runs under a tether: a tiny Node process (`node -e`, no file of its own) that
 * is the command's parent. The tether reads a pipe from its starter on stdin; the kernel
 * closes that pipe whenever the starter dies, so end-of-file on it means "your parent is
 * gone": the tether then sends the command its stop signal and, if it is still running
 * after `graceMs`, SIGKILLs it. Signals sent to the tether are passed on to the command, so
 * the starter stops it the usual way (SIGTERM, SIGINT) and sees it exit with its code.
 *
 * The tether is spawned detached: it leads a new session and process group, which the
 * command joins. So a terminal's Ctrl-C (SIGINT to the terminal's foreground process group)
 * reaches only the starter, which stops its children in its own order instead of having
 * them all stop at once, and killTethered() can SIGKILL a command with its whole group (its
 * own children too) in one call.
 *
 * Why not the alternatives: Linux's PR_SET_PDEATHSIG (`setpriv --pdeathsig`) is Linux-only,
 * SIGKILLs without a graceful stop, and fires when the spawning thread, not the process,
 * ends; a process group the starter kills on exit does nothing when the starter is
 * SIGKILLed. The pipe works on every platform Node runs on and cannot be missed.
 */
import { type ChildProcess, spawn } from 'node:child_process';

// Plain CommonJS run with `node -e`; argv[1] is the JSON spec. Must never crash while its
// command runs: an unhandled error would orphan the command.
const TETHER_SOURCE = `'use strict';
const { spawn } = require('node:child_process');
const { constants } = require('node:os');
const spec = JSON.parse(process.argv[1]);
const ignore = () => {};
process.stdout.on('error', ignore);
process.stderr.on('error', ignore);
let child;
const killGroup = () => {
  try { process.kill(process.platform === 'win32' ? child.pid : -process.pid, 'SIGKILL'); } catch {}
  process.exit(137);
};
process.on('uncaughtException', killGroup);
child = spawn(spec.command, spec.args, { stdio: ['ignore', 'inherit', 'inherit'] });
const running = () => child.exitCode === null && child.signalCode === null;
const send = (signal) => { if (running()) { try { child.kill(signal); } catch {} } };
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']) process.on(signal, () => send(signal));
child.on('error', (error) => {
  process.stderr.write('tether: cannot run ' + spec.command + ': ' + error.message + '\\n');
  process.exit(127);
});
child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
let orphaned = false;
const parentGone = () => {
  if (orphaned) return;
  orphaned = true;
  send(spec.stopSignal);
  setTimeout(killGroup, spec.graceMs);
};
process.stdin.on('end', parentGone);
process.stdin.on('close', parentGone);
process.stdin.on('error', parentGone);
process.stdin.resume();
`;

export interface TetherOptions {
  /** What the tether sends the command when its starter is gone (Postgres: SIGINT, its fast shutdown). */
  stopSignal: NodeJS.Signals;
  /** How long the command may take to stop after that before it is SIGKILLed. */
  graceMs: number;
  /** Run the tether, hence the command, as this user and group (Postgres refuses to run as root). */
  uid?: number;
  gid?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export interface Tethered {
  /** The tether process: its stdout and stderr are the command's; its exit is the command's. */
  process: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running(): boolean;
  /** Stops the command with `signal`; SIGKILLs its process group if it is still running after `timeoutMs`. */
  stop(signal: NodeJS.Signals, timeoutMs: number): Promise<void>;
  /** SIGKILLs the process group (the tether, the command and the command's children), now. */
  kill(): void;
}

const live = new Set<Tethered>();

/**
 * SIGKILLs the process group of a tethered command. Only while the tether is not yet reaped
 * (running() is still true): its pid, the group's id, cannot have been reused before that.
 */
function killGroup(tethered: Tethered): void {
  const pid = tethered.process.pid;
  if (pid === undefined || !tethered.running()) return;
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, 'SIGKILL');
  } catch {
    // Gone meanwhile.
  }
}

/** Starts `command` under a tether; see the top of this file. */
export function spawnTethered(command: string, args: string[], options: TetherOptions): Tethered {
  const env = { ...(options.env ?? process.env) };
  // The tether is plain JavaScript: no loader (tsx) or other preload for it or its command.
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, ['-e', TETHER_SOURCE, JSON.stringify({ command, args, stopSignal: options.stopSignal, graceMs: options.graceMs })], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    env,
    cwd: options.cwd,
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid } : {}),
  });
  // The write end stays open for as long as this process lives; nothing is ever written.
  child.stdin.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    // A failed spawn (no node binary, a uid that cannot run it) may end in 'error' alone.
    child.once('error', () => resolve({ code: child.exitCode ?? 127, signal: child.signalCode }));
  });
  const tethered: Tethered = {
    process: child,
    exited,
    running: () => child.exitCode === null && child.signalCode === null,
    async stop(signal, timeoutMs) {
      if (!tethered.running()) return;
      child.kill(signal);
      const timer = setTimeout(() => killGroup(tethered), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
    kill: () => killGroup(tethered),
  };
  live.add(tethered);
  void exited.then(() => live.delete(tethered));
  return tethered;
}

/** The force path: SIGKILLs every tethered command this process started that still runs. Synchronous. */
export function killTethered(): void {
  for (const tethered of live) tethered.kill();
}
