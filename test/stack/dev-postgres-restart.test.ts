/**
 * The dev stack's Postgres starts again after a forced stop (issue 32, point 5): a second
 * Ctrl-C SIGKILLs Postgres' process group, and the next start failed now and then with
 * "postgres exited before it accepted connections" ("lock file postmaster.pid already
 * exists"): the killed postmaster was still a zombie that init had not reaped yet, and its
 * postmaster.pid named it. The same refusal lasts when the PID is taken by another program.
 *
 * Real embedded Postgres, started as `npm run dev` starts it (tethered). The states a killed
 * run leaves are made exactly, not waited for: a postmaster.pid naming a zombie (a child of a
 * `sleep` that never reaps it) or a live program that is not Postgres. Proven: each start
 * succeeds, answers a query, and says what it removed; and a start right after SIGKILLing the
 * server's process group (the forced stop itself) succeeds.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../src/dev/postgres';
import { freePort } from '../../src/dev/temporal-server';
import { killTethered } from '../../src/dev/tether';

const root = mkdtempSync(path.join(os.tmpdir(), 'dev-postgres-restart-'));
const dataDir = path.join(root, 'postgres');
const pidFile = path.join(dataDir, 'postmaster.pid');
const children: ChildProcess[] = [];
const servers: EmbeddedPostgres[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

async function until<T>(what: string, timeoutMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const stateOf = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return 'gone';
  }
};

/**
 * The user Postgres runs as (as root, `postgres`): Postgres takes a PID it may not signal
 * (EPERM) for a dead one, so the PIDs a killed server leaves are its user's.
 */
function serverUser(): { uid?: number; gid?: number; cwd: string } {
  if (process.getuid?.() !== 0) return { cwd: '/' };
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g'), cwd: '/' };
}

/** A process that never reaps its child, and that child, a zombie: `sleep` exec'd over the shell that started it. */
async function zombie(): Promise<{ parent: ChildProcess; zombiePid: number }> {
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'], ...serverUser() });
  children.push(parent);
  let out = '';
  parent.stdout!.on('data', (chunk: Buffer) => void (out += chunk.toString()));
  const zombiePid = await until('the child pid', 10_000, () => (/^\d+\n/.test(out) ? Number(out.trim()) : undefined));
  await until(`PID ${zombiePid} to be a zombie`, 10_000, () => (stateOf(zombiePid) === 'Z' ? true : undefined));
  return { parent, zombiePid };
}

async function startAndQuery(port: number, log: string[]) {
  const pg = await startEmbeddedPostgres({ dataDir, port, database: 'restart', tethered: true, log: (line) => log.push(line) });
  servers.push(pg);
  const client = new Client({ connectionString: pg.url });
  await client.connect();
  const { rows } = await client.query<{ one: number }>('select 1 as one');
  await client.end();
  return { pg, answer: rows[0].one };
}

describe.skipIf(process.platform !== 'linux')('the dev Postgres after a forced stop', () => {
  let port: number;
  /** The postmaster.pid of a running server, to leave behind as a killed one would. */
  let leftBehind: string[];

  it('starts, and leaves a postmaster.pid while it runs', async () => {
    port = await freePort();
    await startAndQuery(port, []);
    leftBehind = readFileSync(pidFile, 'utf8').split('\n');
    await servers.pop()!.stop();
    expect(existsSync(pidFile)).toBe(false);
  }, 120_000);

  it('a postmaster.pid naming a killed postmaster not yet reaped (a zombie): removed, said, started', async () => {
    const { parent, zombiePid } = await zombie();
    writeFileSync(pidFile, [String(zombiePid), ...leftBehind.slice(1)].join('\n'));
    const log: string[] = [];
    const { answer } = await startAndQuery(port, log);
    expect(answer).toBe(1);
    expect(stateOf(zombiePid), 'the fault was in place: the PID is still a zombie').toBe('Z');
    expect(log.join('\n')).toContain(`removed what a stopped Postgres left behind (PID ${zombiePid} was killed and is not yet reaped): ${pidFile}`);
    parent.kill('SIGKILL');
  }, 120_000);

  it('a postmaster.pid naming a PID another program now has: removed, said, started', async () => {
    const other = spawn('sleep', ['600'], { stdio: 'ignore', ...serverUser() });
    children.push(other);
    await until('sleep to run', 10_000, () => (stateOf(other.pid!) === 'S' ? true : undefined));
    writeFileSync(pidFile, [String(other.pid), ...leftBehind.slice(1)].join('\n'));
    const log: string[] = [];
    const { answer } = await startAndQuery(port, log);
    expect(answer).toBe(1);
    expect(stateOf(other.pid!), 'the fault was in place: the PID is still another program').toBe('S');
    expect(log.join('\n')).toContain(`removed what a stopped Postgres left behind (PID ${other.pid} is now another program (sleep 600)): ${pidFile}`);
    other.kill('SIGKILL');
  }, 120_000);

  it('the forced stop itself: a start right after SIGKILLing the server’s process group', async () => {
    const { pg } = await startAndQuery(port, []);
    const killed = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    const client = new Client({ connectionString: pg.url });
    await client.connect();
    client.on('error', () => undefined);
    // What scripts/dev.ts does on a second Ctrl-C.
    killTethered();
    servers.splice(0);
    await until('the postmaster to be killed', 10_000, () => (['Z', 'gone'].includes(stateOf(killed)) ? true : undefined));
    const log: string[] = [];
    const again = await startAndQuery(port, log);
    expect(again.answer).toBe(1);
    console.log(`start after the forced stop: ${log.join(' | ') || '(nothing to recover)'}`);
    await client.end().catch(() => undefined);
  }, 120_000);
});
