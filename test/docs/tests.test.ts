/**
 * docs/tests.md stays the map of the suite: every test file is in the table of its folder's
 * section, every file the page names exists, and the unit folder holds what its rule says
 * (no test stack, no child process), so a test placed by guess shows here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/tests.md'), 'utf8');
const testFiles = readdirSync(path.join(PROJECT_ROOT, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) => `test/${file.split(path.sep).join('/')}`)
  .sort();

/** The first cell of each table row, per `## test/<folder>/` section. */
function rowsBySection(markdown: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  for (const section of markdown.split(/^## /m).slice(1)) {
    const heading = /^(test\/[\w-]+\/)\s*$/m.exec(section.split('\n')[0]);
    if (!heading) continue;
    sections.set(
      heading[1],
      [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]),
    );
  }
  return sections;
}

const matches = (row: string, file: string) => (row.endsWith('/*.test.ts') ? path.posix.dirname(file) === path.posix.dirname(row) : row === file);

describe('docs/tests.md', () => {
  const sections = rowsBySection(doc);

  it('has a row for every test file, in the section of its folder', () => {
    const missing = testFiles.filter((file) => {
      const folder = /^test\/[\w-]+\//.exec(file)?.[0] ?? 'test/';
      return !(sections.get(folder) ?? []).some((row) => matches(row, file));
    });
    expect(missing).toEqual([]);
  });

  it('names only files that exist', () => {
    const rows = [...sections.values()].flat();
    expect(rows.filter((row) => !testFiles.some((file) => matches(row, file)))).toEqual([]);
    const named = [...doc.matchAll(/`((?:test|scripts|clients)\/[\w./-]*\w)`/g)].map((m) => m[1]).filter((p) => !p.includes('*'));
    expect(named.filter((p) => !existsSync(path.join(PROJECT_ROOT, p)))).toEqual([]);
  });

  it('test/unit holds no test that starts the test stack or a child process', () => {
    const stackBound = testFiles
      .filter((file) => file.startsWith('test/unit/'))
      .filter((file) => /support\/(?:stack|scratch-stack|worker-process)'|child_process/.test(readFileSync(path.join(PROJECT_ROOT, file), 'utf8')));
    expect(stackBound).toEqual([]);
  });
});
