/**
 * The snippet of docs/frameworks.md's "Follow compactions (what a UI shows)" runs as written:
 * saved at the repository root (where the page says to save it) and run with `node --import
 * tsx` against the test stack. Proven: it exits 0, the UI printed "compacting…" and then the
 * completed compaction's summary, and a read after its last cursor found nothing new.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { useTestStack } from '../support/stack';

const stack = useTestStack();
const page = readFileSync(path.join(PROJECT_ROOT, 'docs/frameworks.md'), 'utf8');

/** The first ```ts block after the heading. */
function snippetAfter(heading: string): string {
  const from = page.indexOf(`\n${heading}\n`);
  expect(from, heading).toBeGreaterThan(0);
  const match = /```ts\n([\s\S]*?)\n```/.exec(page.slice(from));
  expect(match, `a ts block after ${heading}`).not.toBeNull();
  return match![1];
}

async function runSnippet(code: string): Promise<{ code: number | null; output: string }> {
  const file = path.join(PROJECT_ROOT, `.events-snippet-${process.pid}-${Date.now()}.mts`);
  writeFileSync(file, code);
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...stack().env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const exit = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code: exit, output };
  } finally {
    rmSync(file, { force: true });
  }
}

describe('docs/frameworks.md, Follow compactions', () => {
  it('the snippet shows compacting…, then the summary, and nothing new after its cursor', async () => {
    stack().llm.script({ text: 'Goal: refactor the modules. Completed: 12 modules.', delayMs: 300 });
    const run = await runSnippet(snippetAfter('## Follow compactions (what a UI shows)'));
    expect(run.code, run.output).toBe(0);
    const lines = run.output.trim().split('\n');
    expect(lines.slice(-3)).toEqual(['compacting…', expect.stringMatching(/^completed: \S/), '0 new since']);
  });
});
