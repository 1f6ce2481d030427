/** The `sessions` command as a user runs it: a real process, against the real stack. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main';
import { databaseAddress, databaseErrorFrom, typedDatabaseError } from '../../src/db/postgres-errors';
import { PROJECT_ROOT } from '../../src/config';
import { freePort } from '../../src/dev/temporal-server';
import { DatabaseQueryError, DatabaseUnreachableError } from '../../src/errors';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const run = promisify(execFile);
const stack = useTestStack();

async function sessions(
  args: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  const child = run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], {
    // Under the application login (sc_app alone): every command here needs the data plane only.
    env: { ...process.env, ...stack().env, DATABASE_URL: stack().appDatabaseUrl, ...env },
    cwd: PROJECT_ROOT,
  });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr, json: args.includes('--json') ? JSON.parse(stdout) : undefined };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, json: args.includes('--json') && e.stdout ? JSON.parse(e.stdout) : undefined };
  }
}

describe('sessions command', () => {
  it('creates, appends, compacts and shows transcript, lineage and audit as JSON', async () => {
    const id = uniqueId('cli');
    expect((await sessions(['create', id, '--source', 'slack', '--json'])).json).toEqual({
      sessionId: id,
      lineageId: id,
      mode: 'rotate',
      dialect: 'openai-chat',
      tokenizer: 'estimate',
      source: 'slack',
    });
    const appended = await sessions(['append', id, '--json'], JSON.stringify(conversation(12)));
    expect(appended.json).toEqual({
      sessionId: id,
      lineageId: id,
      firstSeq: 1,
      lastSeq: 49,
      count: 49,
      firstLineageSeq: 1,
      lastLineageSeq: 49,
      headTokens: expect.any(Number),
      replayed: false,
    });

    const compacted = await sessions(['compact', id, '--focus', 'tests', '--request-id', 'cli-1', '--json']);
    expect(compacted.code).toBe(0);
    expect(compacted.json).toMatchObject({ outcome: 'compacted', sessionId: `${id}--g1`, previousSessionId: id });
    expect(Object.keys(compacted.json).sort()).toEqual([
      'messages',
      'messagesAfter',
      'messagesBefore',
      'outcome',
      'previousSessionId',
      'sessionId',
      'tokensAfter',
      'tokensBefore',
    ]);

    const transcript = await sessions(['transcript', id, '--json']);
    expect(transcript.json).toEqual({ sessionId: `${id}--g1`, dialect: 'openai-chat', messages: compacted.json.messages });

    const lineage = await sessions(['lineage', `${id}--g1`, '--json']);
    expect(lineage.json.sessions).toEqual([
      { sessionId: id, parentSessionId: null, endedAt: expect.any(String), endReason: 'compression', messageCount: 49 },
      { sessionId: `${id}--g1`, parentSessionId: id, endedAt: null, endReason: null, messageCount: compacted.json.messages.length },
    ]);

    const all = await sessions(['transcript', id, '--all', '--json']);
    expect(all.json).toMatchObject({ sessionId: `${id}--g1`, messages: compacted.json.messages, archived: [] });

    const stale = await sessions(['compact', id, '--json']);
    expect(stale.json).toMatchObject({ outcome: 'stale', sessionId: `${id}--g1` });

    const audit = await sessions(['audit', '--json']);
    expect(audit.json).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0 });
    expect(audit.json.sessions).toBeGreaterThanOrEqual(2);
  });

  it('reports bad input with a typed error, exit code 2, and writes nothing', async () => {
    const id = uniqueId('cli');
    await sessions(['create', id]);
    const bad = await sessions(
      ['append', id, '--json'],
      JSON.stringify([
        { role: 'user', content: 'ok' },
        { role: 'robot', content: 'x' },
      ]),
    );
    expect(bad.code).toBe(2);
    expect(bad.json.error).toMatchObject({ type: 'InvalidInputError', field: 'messages[1].role' });
    expect((await sessions(['transcript', id, '--json'])).json.messages).toEqual([]);

    const notJson = await sessions(['append', id], '{oops');
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/not valid JSON/);

    const missing = await sessions(['compact', 'nobody-here', '--json']);
    expect(missing.code).toBe(2);
    expect(missing.json.error.type).toBe('SessionNotFoundError');

    const background = await sessions(['compact', id, '--background', '--json']);
    expect(background.code).toBe(2);
    expect(background.json.error.type).toBe('BackgroundCompactionRejectedError');

    const usage = await sessions(['frobnicate']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/usage: sessions/);
  });
});

/** The command in this process (no connection is made before a flag is refused). */
async function inProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    args,
    (t) => out.push(t),
    (t) => err.push(t),
    undefined,
  );
  return { code, stdout: out.map((t) => `${t}\n`).join(''), stderr: err.map((t) => `${t}\n`).join('') };
}

describe('sessions --help', () => {
  it('prints the usage on stdout and exits 0: --help, -h, help, help <command>, <command> --help', async () => {
    const asProcess = await sessions(['--help']);
    expect(asProcess).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: sessions <command>/), stderr: '' });
    for (const args of [
      ['-h'],
      ['help'],
      ['help', 'append'],
      ['create', '--help'],
      ['append', 'some-id', '-h'],
      ['doctor', '--help'],
      ['list', '--json', '--help'],
    ]) {
      expect(await inProcess(args), args.join(' ')).toEqual({ code: 0, stdout: asProcess.stdout, stderr: '' });
    }
  });

  it('still refuses no command, and an unknown one even with --help (exit 2, usage on stderr)', async () => {
    const none = await sessions([]);
    expect(none).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/usage: sessions/) });
    for (const args of [
      ['frobnicate', '--help'],
      ['help', 'frobnicate'],
      ['--bogus-flag', '--help'],
    ]) {
      const result = await inProcess(args);
      expect(result, args.join(' ')).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/usage: sessions/) });
    }
  });
});

describe('sessions append: the input', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sessions-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string | Buffer) => {
    const at = path.join(dir, name);
    writeFileSync(at, content);
    return at;
  };

  it('a file that is missing, a directory, not UTF-8 or not JSON, or empty stdin: exit 2 naming it, nothing written', async () => {
    const id = uniqueId('cli-in');
    await stack().client.createSession({ sessionId: id });
    const missing = path.join(dir, 'no-such-file.json');
    const cases: Array<{ args: string[]; input?: string; message: RegExp; field: string }> = [
      { args: ['--file', missing], message: new RegExp(`cannot read file "${missing}": no such file \\(ENOENT\\)`), field: '--file' },
      { args: ['--file', dir], message: new RegExp(`cannot read file "${dir}": it is a directory \\(EISDIR\\)`), field: '--file' },
      {
        args: ['--file', file('latin1.json', Buffer.from('[{"role":"user","content":"caf\xe9"}]', 'latin1'))],
        message: /latin1\.json" is not valid UTF-8/,
        field: '--file',
      },
      { args: ['--file', file('broken.json', '[{"role":')], message: /broken\.json" is not valid JSON/, field: '--file' },
      { args: ['--file', ''], message: /invalid --file: needs a file name/, field: '--file' },
      { args: [], input: '', message: /invalid stdin: stdin is not valid JSON/, field: 'stdin' },
    ];
    for (const { args, input, message, field } of cases) {
      const result = await sessions(['append', id, ...args, '--json'], input);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.json.error, args.join(' ')).toMatchObject({ type: 'InvalidInputError', field, message: expect.stringMatching(message) });
      expect(result.stderr.trim().split('\n'), args.join(' ')).toEqual([expect.stringMatching(message)]);
    }
    expect((await stack().client.transcript(id)).messages).toEqual([]);
  });

  it('a file with a byte order mark is read', async () => {
    const id = uniqueId('cli-bom');
    await stack().client.createSession({ sessionId: id });
    const bom = file('bom.json', `\ufeff${JSON.stringify([{ role: 'user', content: 'hello' }])}`);
    const result = await sessions(['append', id, '--file', bom, '--json']);
    expect(result.code).toBe(0);
    expect(result.json).toMatchObject({ count: 1 });
  });
});

describe('sessions: numbers from the command line', () => {
  it('refuses anything but a plain decimal whole number in range, naming the flag (exit 2), and creates nothing', async () => {
    const id = uniqueId('cli-num');
    const cases: Array<[string[], string]> = [
      [['create', id, '--compact-at', '99999999999'], '--compact-at'],
      [['create', id, '--compact-at', '0x10'], '--compact-at'],
      [['create', id, '--compact-at', '1e3'], '--compact-at'],
      [['create', id, '--compact-at', '1.5'], '--compact-at'],
      [['create', id, '--compact-at', ''], '--compact-at'],
      [['create', id, '--compact-at', '0%'], '--compact-at'],
      [['create', id, '--compact-at', '150%'], '--compact-at'],
      [['create', id, '--context-window', '99999999999'], '--context-window'],
      [['create', id, '--context-window', '0x10'], '--context-window'],
      [['list', '--limit', '1e3'], '--limit'],
      [['list', '--limit', '0x10'], '--limit'],
      [['compact', id, '--timeout', '1.5'], '--timeout'],
    ];
    // Four as processes (exit code and all), every one in this process.
    const processes = await Promise.all([0, 7, 9, 11].map((i) => sessions([...cases[i][0], '--json'])));
    const results = [...processes, ...(await Promise.all(cases.map(([args]) => inProcess([...args, '--json']))))];
    const flags = [...[0, 7, 9, 11].map((i) => cases[i]), ...cases];
    for (const [i, result] of results.entries()) {
      const [args, flag] = flags[i];
      expect(result.code, args.join(' ')).toBe(2);
      expect(JSON.parse(result.stdout).error, args.join(' ')).toMatchObject({
        type: 'InvalidInputError',
        field: flag,
        message: expect.stringContaining(`invalid ${flag}: `),
      });
      expect(result.stderr.trim().split('\n'), args.join(' ')).toEqual([expect.stringMatching(new RegExp(`^error: invalid ${flag}: `))]);
    }
    expect((await stack().client.operator.listLineages({ search: id })).lineages).toEqual([]);
  });

  it('takes plain whole numbers and percentages', async () => {
    const id = uniqueId('cli-num');
    const created = await sessions(['create', id, '--compact-at', '50%', '--context-window', '2000', '--json']);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ sessionId: id, compactAtTokens: 1000 });
    const listed = await sessions(['list', '--limit', '2', '--json']);
    expect(listed.code).toBe(0);
    expect(listed.json.lineages.length).toBeLessThanOrEqual(2);
  });
});

describe('sessions: the database unreachable', () => {
  it('one line with host:port and the cause, never the password nor a query; exit 1', async () => {
    const port = await freePort(); // nothing listens there
    const env = { DATABASE_URL: `postgres://postgres:hunter2-secret@127.0.0.1:${port}/nowhere` };
    const batch = JSON.stringify([{ role: 'user', content: 'BATCH-MARKER-1' }]);
    // transcript retries its read for 30 s before it gives up: in parallel with the rest.
    const commands: Array<[string[], string?]> = [[['audit']], [['create', uniqueId('down')]], [['append', 'some-id'], batch], [['transcript', 'some-id']]];
    const results = await Promise.all(commands.map(([args, input]) => sessions(args, input, env)));
    const line = `error: the database is unreachable at 127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`;
    for (const [i, result] of results.entries()) {
      const what = commands[i][0].join(' ');
      expect(result.code, what).toBe(1);
      expect(result.stderr, what).toBe(`${line}\n`);
      expect(result.stdout + result.stderr, what).not.toMatch(/hunter2|Failed query|params|BATCH-MARKER/);
    }
    const json = await sessions(['audit', '--json'], undefined, env);
    expect(json.code).toBe(1);
    expect(json.json).toEqual({
      error: { type: 'DatabaseUnreachableError', message: line.replace(/^error: /, ''), address: `127.0.0.1:${port}`, code: 'ECONNREFUSED' },
    });
  });

  it('a host that does not resolve is unreachable too', async () => {
    const result = await sessions(['audit', '--json'], undefined, { DATABASE_URL: 'postgres://postgres:hunter2-secret@no-such-host.invalid:5433/db' });
    expect(result.code).toBe(1);
    expect(result.json.error).toMatchObject({
      type: 'DatabaseUnreachableError',
      address: 'no-such-host.invalid:5433',
      code: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN)$/),
    });
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: the database is unreachable at no-such-host\.invalid:5433: /)]);
    expect(result.stderr).not.toMatch(/hunter2/);
  });

  it('any other failed query prints without its parameters (the whole batch, for an append)', async () => {
    // A database that is up but has no schema: every query fails, with drizzle's "params: ..." message.
    const bare = new URL(stack().appDatabaseUrl);
    bare.pathname = '/postgres';
    const id = uniqueId('bare');
    const batch = JSON.stringify([{ role: 'user', content: 'BATCH-MARKER-2 with private words' }]);
    const result = await sessions(['append', id, '--json'], batch, { DATABASE_URL: bare.toString() });
    expect(result.code).toBe(1);
    // The append reads its lineage first, through the data plane (session_lineage_state): named by its function.
    expect(result.json.error).toMatchObject({ type: 'DatabaseQueryError', operation: 'session_lineage_state', code: '42883' });
    expect(result.json.error.message).toMatch(
      /^the database failed session_lineage_state: function session_lineage_state\(.*\) does not exist \(SQLSTATE 42883\)$/,
    );
    expect(result.stderr.trim().split('\n')).toEqual([`error: ${result.json.error.message}`]);
    expect(result.stdout + result.stderr).not.toMatch(/params|BATCH-MARKER/);
  });
});

describe('databaseErrorFrom and typedDatabaseError', () => {
  const url = 'postgres://app:s3cr3t-pw@db.internal:6543/sessions';
  const socketError = (code: string, message: string, extra: object = {}) => Object.assign(new Error(message), { code, syscall: 'connect', ...extra });
  const wrapped = (cause: unknown) => Object.assign(new Error('Failed query: select 1\nparams: a,b,c'), { query: 'select 1', params: ['a', 'b', 'c'], cause });

  it('maps not reaching the server, through drizzle wrappers and AggregateErrors', () => {
    const refused = databaseErrorFrom(wrapped(socketError('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:6543')), url);
    expect(refused).toBeInstanceOf(DatabaseUnreachableError);
    expect(refused).toMatchObject({ name: 'DatabaseUnreachableError', address: 'db.internal:6543', code: 'ECONNREFUSED' });
    expect((refused as Error).message).toBe('the database is unreachable at db.internal:6543: connect ECONNREFUSED 10.0.0.5:6543');
    // The cause kept is the socket error, not drizzle's wrapper with the parameters.
    expect((refused as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });

    const both = new AggregateError([new Error('connect ECONNREFUSED ::1:6543'), new Error('connect ECONNREFUSED 127.0.0.1:6543')], '');
    expect((databaseErrorFrom(wrapped(Object.assign(both, { code: 'ECONNREFUSED' })), url) as Error).message).toBe(
      'the database is unreachable at db.internal:6543: connect ECONNREFUSED ::1:6543; connect ECONNREFUSED 127.0.0.1:6543',
    );
    for (const [cause, reason] of [
      [socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND db.internal'), 'getaddrinfo ENOTFOUND db.internal'],
      [socketError('ETIMEDOUT', 'connect ETIMEDOUT 10.0.0.5:6543'), 'connect ETIMEDOUT 10.0.0.5:6543'],
      [new Error('Connection terminated unexpectedly'), 'Connection terminated unexpectedly'],
      [new Error('timeout expired'), 'timeout expired'],
      [Object.assign(new Error('the database system is starting up'), { code: '57P03' }), 'the database system is starting up (57P03)'],
      [Object.assign(new Error('database "sessions" does not exist'), { code: '3D000' }), 'database "sessions" does not exist (3D000)'],
      [Object.assign(new Error('password authentication failed for user "app"'), { code: '28P01' }), 'password authentication failed for user "app" (28P01)'],
      [socketError('ENOENT', 'connect ENOENT /run/postgresql/.s.PGSQL.5432'), 'connect ENOENT /run/postgresql/.s.PGSQL.5432'],
    ] as const) {
      const mapped = databaseErrorFrom(wrapped(cause), url);
      expect(mapped, reason).toBeInstanceOf(DatabaseUnreachableError);
      expect((mapped as DatabaseUnreachableError).reason).toBe(reason);
    }
  });

  it('leaves every other error alone: SQL errors, a Temporal connection failure, a missing file', () => {
    const unique = wrapped(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }));
    expect(databaseErrorFrom(unique, url)).toBe(unique);
    const temporal = Object.assign(new Error('Failed to describe workflow'), {
      cause: Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233'), {
        code: 14,
        details: '',
        metadata: {},
      }),
    });
    expect(databaseErrorFrom(temporal, url)).toBe(temporal);
    const noFile = Object.assign(new Error("ENOENT: no such file or directory, open 'x.json'"), { code: 'ENOENT', syscall: 'open' });
    expect(databaseErrorFrom(noFile, url)).toBe(noFile);
    const already = new DatabaseUnreachableError('h:1', 'down');
    expect(databaseErrorFrom(already, url)).toBe(already);
    expect(databaseErrorFrom('a string', url)).toBe('a string');
  });

  it('names host:port, never the user or password', () => {
    expect(databaseAddress(url)).toBe('db.internal:6543');
    expect(databaseAddress('postgres://u:p@localhost/db')).toBe('localhost:5432');
    expect(databaseAddress('postgresql://u:p@[::1]:5433/db')).toBe('[::1]:5433');
    expect(databaseAddress('postgres:///db?host=/run/postgresql')).toBe('/run/postgresql/.s.PGSQL.5432');
    expect(databaseAddress('postgres://u:p@%2Frun%2Fpostgresql:5444/db')).toBe('/run/postgresql/.s.PGSQL.5444');
    expect(databaseAddress('not a url with a s3cr3t')).toBe('DATABASE_URL (not a valid URL)');
    expect(databaseAddress(undefined)).toBe('DATABASE_URL (not set)');
    // A cause that quotes the password (it should not, but) has it blanked.
    const quoted = databaseErrorFrom(socketError('ENOTFOUND', 'getaddrinfo ENOTFOUND s3cr3t-pw'), url) as Error;
    expect(quoted.message).toBe('the database is unreachable at db.internal:6543: getaddrinfo ENOTFOUND ***');
  });

  it('a failed query: what it did, its SQLSTATE and the server message with quoted values blanked, never the parameters', async () => {
    // A real drizzle error from the stack's database.
    const error = await stack()
      .db.db.execute(sql`select ${'PARAM-MARKER'}::integer as n`)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(String((error as Error).message)).toContain('PARAM-MARKER'); // the driver's message carries the parameters, so the CLI must not print it as is
    const typed = typedDatabaseError(error, url);
    expect(typed).toBeInstanceOf(DatabaseQueryError);
    // The server's own message quotes the value too: blanked.
    expect((typed as Error).message).toBe('the database failed select $1::integer as n: invalid input syntax for type integer: "…" (SQLSTATE 22P02)');
    expect((typed as Error).cause).toBeUndefined();
    expect((typedDatabaseError(wrapped(new Error('boom')), url) as Error).message).toBe('the database failed select 1: boom');
    expect((typedDatabaseError(new Error('Failed query: select 2\nparams: secret'), url) as Error).message).toBe(
      'the database failed select 2: the statement failed',
    );
    const unique = wrapped(
      Object.assign(new Error('duplicate key value violates unique constraint "sessions_pkey"'), { code: '23505', detail: 'Key (id)=(x) exists' }),
    );
    expect((typedDatabaseError(unique, url) as Error).message).toBe(
      'the database failed select 1: duplicate key value violates unique constraint "sessions_pkey" (SQLSTATE 23505)',
    );
    const plain = new Error('plain\nmultiline');
    expect(typedDatabaseError(plain, url)).toBe(plain);
  });
});

describe('sessions create on a closed lineage', () => {
  // session_create (SQL) refuses a closed lineage with LineageClosedError; the CLI maps it to exit 2.
  it('is refused with exit 2 and a message saying the lineage is closed', async () => {
    const id = uniqueId('closed');
    expect((await sessions(['create', id])).code).toBe(0);
    expect((await sessions(['close', id])).code).toBe(0);
    const again = await sessions(['create', id, '--json']);
    expect(again.code).toBe(2);
    expect(again.json.error.message).toMatch(/closed/);
    expect(again.stderr).toMatch(/closed/);
  });
});
