/** The configuration reference lists every variable the code reads, and nothing else. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

describe('docs/configuration.md', () => {
  const documented = new Set([...read('docs/configuration.md').matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]));
  const sources = ['src/config.ts', 'src/dev/temporal-cli.ts', 'src/worker.ts'].map(read).join('\n');
  const used = new Set([...sources.matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]).filter((name) => name !== 'PATH'));

  it('documents every environment variable the code reads', () => {
    expect([...used].filter((name) => !documented.has(name))).toEqual([]);
  });

  it('documents no variable the code does not read', () => {
    expect([...documented].filter((name) => !used.has(name))).toEqual([]);
  });
});
