/**
 * The lint rules this project relies on still fire: each snippet is linted in memory with the
 * project's own eslint.config.mjs (type information included) in place of an existing file of
 * the directory under test (typescript-eslint's project service only knows files in
 * tsconfig.json, and the snippet's text replaces the file's for the lint; nothing is written),
 * and must be reported by the named rule. A config change that silently drops a
 * rule (a typo, an override in the wrong order, a glob that no longer matches) fails here.
 */
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const eslint = new ESLint({ cwd: PROJECT_ROOT, overrideConfigFile: path.join(PROJECT_ROOT, 'eslint.config.mjs') });

async function ruleIds(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(PROJECT_ROOT, filePath) });
  // A parse error (no ruleId) would make every "fires" check meaningless: surface it.
  const fatal = result.messages.filter((m) => m.fatal || m.ruleId === null);
  if (fatal.length) throw new Error(`${filePath}: ${fatal.map((m) => m.message).join('; ')}`);
  return result.messages.map((m) => m.ruleId as string);
}

const WORKFLOW = 'src/workflows/settings.ts';
const IMPORTS = '@typescript-eslint/no-restricted-imports';

describe('workflow determinism rules (src/workflows/**)', () => {
  it.each([
    ["import { readFileSync } from 'node:fs';", 'a Node built-in with the node: prefix'],
    ["import { readFileSync } from 'fs';", 'a Node built-in without the prefix'],
    ["import { setTimeout } from 'timers/promises';", 'a Node built-in subpath'],
    ["import { Pool } from 'pg';", 'pg'],
    ["import { sql } from 'drizzle-orm';", 'drizzle-orm'],
    ["import { pgTable } from 'drizzle-orm/pg-core';", 'a drizzle-orm subpath'],
    ["import OpenAI from 'openai';", 'openai'],
    ["import { Client } from '@temporalio/client';", '@temporalio/client'],
    ["import { Worker } from '@temporalio/worker';", '@temporalio/worker'],
    ["import { Context } from '@temporalio/activity';", '@temporalio/activity'],
    ["import { openDatabase } from '../db/database';", 'src/db'],
    ["import { createCompactionActivities } from '../activities/compaction';", 'a value import from src/activities'],
    ["import { SessionsClient } from '../client/sessions-client';", 'src/client'],
    ["import { loadConfig } from '../config';", 'src/config (reads the environment)'],
  ])('refuses %s (%s)', async (code) => {
    expect(await ruleIds(code, WORKFLOW)).toContain(IMPORTS);
  });

  it.each([
    ['export const now = Date.now();', 'no-restricted-properties'],
    ['export const r = Math.random();', 'no-restricted-properties'],
    ['export const d = new Date();', 'no-restricted-syntax'],
    ['export const s = Date();', 'no-restricted-syntax'],
    ['setTimeout(() => undefined, 10);', 'no-restricted-globals'],
    ['setInterval(() => undefined, 10);', 'no-restricted-globals'],
    ['export const env = process.env.X;', 'no-restricted-globals'],
    ["export const m = import('./settings');", 'no-restricted-syntax'],
  ])('refuses %s (%s)', async (code, rule) => {
    expect(await ruleIds(code, WORKFLOW)).toContain(rule);
  });

  it('allows what workflow code does use: the workflow SDK, type-only imports from activities, sibling modules', async () => {
    const code = [
      "import { proxyActivities, sleep, uuid4 } from '@temporalio/workflow';",
      "import type { CompactionActivities } from '../activities/compaction';",
      "import { type CompactionActivities as Again } from '../activities/compaction';",
      "import { InvalidInputError } from '../errors';",
      "import { DEFAULT_LINEAGE_SETTINGS } from './settings';",
      'export const a = proxyActivities<CompactionActivities>({ startToCloseTimeout: 1000 });',
      'export type Same = Again;',
      'export const b = [sleep, uuid4, InvalidInputError, DEFAULT_LINEAGE_SETTINGS];',
    ].join('\n');
    expect(await ruleIds(code, WORKFLOW)).toEqual([]);
  });

  it('applies only to src/workflows: activities may use Node and the clock', async () => {
    expect(
      await ruleIds("import { readFileSync } from 'node:fs';\nexport const x = [readFileSync, Date.now(), new Date()];\n", 'src/activities/summariser.ts'),
    ).toEqual([]);
  });
});

describe('promise rules, everywhere', () => {
  const floating = 'async function work(): Promise<void> {}\nwork();\n';
  const misused = 'export function f(items: number[]): void {\n  items.forEach(async () => {});\n}\n';

  it.each(['src/activities/summariser.ts', WORKFLOW, 'test/docs/configuration.test.ts', 'test/support/ledger.ts', 'scripts/dev.ts', 'bench/faults.ts'])(
    'a floating promise and a promise passed where a void callback is expected are errors in %s',
    async (file) => {
      expect(await ruleIds(floating, file)).toContain('@typescript-eslint/no-floating-promises');
      expect(await ruleIds(misused, file)).toContain('@typescript-eslint/no-misused-promises');
    },
  );

  it('a handled or explicitly ignored promise is fine', async () => {
    expect(await ruleIds('async function work(): Promise<void> {}\nvoid work();\nwork().catch(() => undefined);\n', 'src/config.ts')).toEqual([]);
  });
});
