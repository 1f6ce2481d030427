/**
 * The README stays a front door and the pages it sends readers to stay true: the README is at
 * most 250 lines, every relative link of the README and of docs/*.md names a file that exists,
 * every repository path the pages name in backticks exists, and the patch table of
 * docs/development.md lists exactly the ids of src/workflows/patches.ts and, between them,
 * every history kept in test/replay/fixed/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
const pages = [
  'README.md',
  ...readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Relative link targets of a page, resolved from the repository root, without anchors. */
function linksOf(page: string): string[] {
  return [...read(page).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1].split('#')[0])
    .filter((target) => target !== '' && !/^[a-z]+:/.test(target))
    .map((target) => path.posix.normalize(path.posix.join(path.posix.dirname(page), target)));
}

/** Files a run writes, not committed (`.gitignore`), which a page names as outputs. */
const WRITTEN_BY_A_RUN = new Set(['bench/results/fidelity.json']);

/** Repository paths a page names in backticks: under a top-level folder of the project, no wildcard or placeholder. */
function pathsOf(page: string): string[] {
  const roots = 'src|test|scripts|bench|docs|clients|contract|examples|bin';
  return [...read(page).matchAll(new RegExp(`\`((?:${roots})/[\\w./-]*[\\w/])\``, 'g'))]
    .map((m) => m[1])
    .filter((p) => !/[*<>]/.test(p) && !WRITTEN_BY_A_RUN.has(p));
}

describe('README and docs pages', () => {
  it('the README is at most 250 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('every page a README or docs link names exists', () => {
    const broken = pages.flatMap((page) =>
      linksOf(page)
        .filter((target) => !existsSync(path.join(PROJECT_ROOT, target)))
        .map((t) => `${page} -> ${t}`),
    );
    expect(broken).toEqual([]);
  });

  it('every repository path the README and docs name exists', () => {
    const missing = pages.flatMap((page) =>
      pathsOf(page)
        .filter((p) => !existsSync(path.join(PROJECT_ROOT, p)))
        .map((p) => `${page}: ${p}`),
    );
    expect(missing).toEqual([]);
  });

  it('the patch table is src/workflows/patches.ts plus the histories in test/replay/fixed/', () => {
    const doc = read('docs/development.md');
    const rows = [...doc.matchAll(/^\| `([\w-]+)` \| [^|]+ \| ([^|]+) \|$/gm)];
    const ids = [...read('src/workflows/patches.ts').matchAll(/export const PATCH_\w+ = '([\w-]+)'/g)].map((m) => m[1]);
    expect(rows.map((m) => m[1]).sort()).toEqual([...ids].sort());
    const named = new Set(rows.flatMap((m) => [...m[2].matchAll(/`([\w.-]+\.json)`/g)].map((n) => n[1])));
    const fixed = readdirSync(path.join(PROJECT_ROOT, 'test/replay/fixed')).filter((f) => f.endsWith('.json'));
    expect(fixed.filter((f) => !named.has(f))).toEqual([]);
    expect([...named].filter((f) => !fixed.includes(f))).toEqual([]);
  });
});
