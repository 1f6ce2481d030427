/**
 * docs/wire-contract.md's "Where is the twin" table answers, for each module of the Python
 * client, which TypeScript module does the same: every file it names exists and every Python
 * module has exactly one row.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const PYTHON_PACKAGE = 'clients/python/session_compaction';
const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/wire-contract.md'), 'utf8');

/** The rows of the twin table: the TypeScript path and the Python path (undefined for `none`). */
function twinRows(markdown: string): Array<{ typescript: string; python?: string }> {
  const section = markdown.split(/^## /m).find((part) => part.startsWith('Where is the twin'));
  if (!section) return [];
  return [...section.matchAll(/^\| `([^`]+)` \| (?:`([^`]+)`|none) \|/gm)].map((m) => ({ typescript: m[1], python: m[2] }));
}

describe('docs/wire-contract.md, where is the twin', () => {
  const rows = twinRows(doc);

  it('has the table', () => {
    expect(rows.length).toBeGreaterThan(10);
  });

  it('names only files that exist', () => {
    const named = rows.flatMap((row) => [row.typescript, ...(row.python ? [row.python] : [])]);
    expect(named.filter((file) => !existsSync(path.join(PROJECT_ROOT, file)))).toEqual([]);
  });

  it('pairs every Python module once', () => {
    const modules = readdirSync(path.join(PROJECT_ROOT, PYTHON_PACKAGE))
      .filter((file) => file.endsWith('.py'))
      .map((file) => `${PYTHON_PACKAGE}/${file}`)
      .sort();
    const paired = rows.flatMap((row) => (row.python ? [row.python] : [])).sort();
    expect(paired).toEqual(modules);
  });
});
