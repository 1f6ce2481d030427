/**
 * A dialect is one registry entry (src/compaction/dialects/registry.ts): for each entry, every
 * part it names exists in every language. The TypeScript module exports a Dialect of that name
 * (and dialectOf finds it), the database's `dialects` table holds the entry's row and its SQL
 * problem function exists, the Python client's RULES has its key, the contract vectors have
 * rows for it, and its strict fake provider exports what the entry names. A made-up entry
 * whose parts do not exist is reported missing in every one of them, so the check finds a
 * dialect added to the registry alone.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dialectOf, DIALECT_NAMES } from '../../src/compaction/dialects';
import { DIALECT_REGISTRY, type DialectEntry, dialectRows } from '../../src/compaction/dialects/registry';
import { useTestStack } from '../support/stack';

const stack = useTestStack({ noWorker: true });
const ROOT = path.resolve(__dirname, '../..');

/** The Python client's RULES keys, as the client itself reads them. */
function pythonRuleKeys(): string[] {
  const out = execFileSync(
    path.join(ROOT, '.venv/bin/python'),
    ['-c', 'import json; from session_compaction.dialects import RULES; print(json.dumps(list(RULES)))'],
    {
      cwd: path.join(ROOT, 'clients/python'),
      encoding: 'utf8',
    },
  );
  return JSON.parse(out) as string[];
}

/** The parts of the entry that are missing, one line each (empty when the dialect is whole). */
async function missingParts(entry: DialectEntry, python: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  const tsModule = path.join(ROOT, entry.module);
  const exported = existsSync(tsModule) ? ((await import(tsModule)) as Record<string, { name?: unknown } | undefined>)[entry.export] : undefined;
  if (exported?.name !== entry.name) missing.push(`TypeScript: ${entry.module} exports no Dialect ${entry.export} named ${entry.name}`);
  else if (!(DIALECT_NAMES as readonly string[]).includes(entry.name) || dialectOf(entry.name) !== exported)
    missing.push(`TypeScript: dialectOf(${entry.name}) is not ${entry.export}`);

  if (!existsSync(path.join(ROOT, 'src/db/functions', `${entry.sqlProblem}.sql`))) missing.push(`SQL: no src/db/functions/${entry.sqlProblem}.sql`);
  const fn = await stack().db.pool.query(
    `select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public' and p.proname = $1`,
    [entry.sqlProblem],
  );
  if (fn.rowCount === 0) missing.push(`SQL: no function ${entry.sqlProblem} in the database`);
  const row = await stack().db.pool.query(`select problem_function from dialects where name = $1`, [entry.name]);
  if (row.rows[0]?.problem_function !== entry.sqlProblem) missing.push(`SQL: the dialects table has no row ${entry.name} with ${entry.sqlProblem}`);

  if (!python.includes(entry.pythonRules)) missing.push(`Python: RULES has no ${entry.pythonRules}`);

  const vectors = path.join(ROOT, entry.vectors);
  const cases = existsSync(vectors) ? (JSON.parse(readFileSync(vectors, 'utf8')) as { cases: Array<{ dialect?: string }> }).cases : [];
  if (!cases.some((c) => c.dialect === entry.name)) missing.push(`Contract: ${entry.vectors} has no case for ${entry.name}`);

  const fakeModule = path.join(ROOT, entry.strictFake.module);
  const fake = existsSync(fakeModule) ? ((await import(fakeModule)) as Record<string, unknown>) : {};
  for (const name of entry.strictFake.exports) {
    if (typeof fake[name] !== 'function') missing.push(`Strict fake: ${entry.strictFake.module} exports no function ${name}`);
  }
  return missing;
}

describe('dialect registry', () => {
  it('names the dialects in one order: the TypeScript names and the dialects table follow it', async () => {
    expect(DIALECT_NAMES).toEqual(DIALECT_REGISTRY.map((entry) => entry.name));
    const { rows } = await stack().db.pool.query(
      `select name, position, problem_function as "problemFunction", summary_marker_field as "summaryMarkerField", reserved_name as "reservedName" from dialects order by position`,
    );
    expect(rows).toEqual(dialectRows());
    expect(pythonRuleKeys()).toEqual(DIALECT_NAMES);
    for (const entry of DIALECT_REGISTRY as readonly DialectEntry[]) {
      expect(dialectOf(entry.name).summaryMarkerField).toBe(entry.summaryMarkerField);
      expect(dialectOf(entry.name).reservedName).toBe(entry.reservedName);
    }
  });

  it.each(DIALECT_REGISTRY.map((entry) => [entry.name, entry as DialectEntry] as const))('%s has every part in every language', async (_name, entry) => {
    expect(await missingParts(entry, pythonRuleKeys())).toEqual([]);
  });

  it('reports every part of a dialect that is only in the registry', async () => {
    const made: DialectEntry = {
      name: 'made-up',
      module: 'src/compaction/dialects/made-up.ts',
      export: 'madeUp',
      sqlProblem: 'sc_made_up_problem',
      pythonRules: 'made-up',
      vectors: 'contract/vectors/dialect-rules.json',
      strictFake: { module: 'test/support/strict-made-up.ts', exports: ['validateMadeUpRequest'] },
      summaryMarkerField: 'content',
    };
    const missing = await missingParts(made, pythonRuleKeys());
    expect(missing.map((line) => line.split(':')[0])).toEqual(['TypeScript', 'SQL', 'SQL', 'SQL', 'Python', 'Contract', 'Strict fake']);
    // A real dialect with one part taken away is found too.
    const gemini = DIALECT_REGISTRY.find((entry) => entry.name === 'gemini') as DialectEntry;
    expect(await missingParts({ ...gemini, sqlProblem: 'sc_gemini_problem_gone' }, pythonRuleKeys())).toEqual([
      'SQL: no src/db/functions/sc_gemini_problem_gone.sql',
      'SQL: no function sc_gemini_problem_gone in the database',
      'SQL: the dialects table has no row gemini with sc_gemini_problem_gone',
    ]);
    expect(await missingParts(gemini, ['openai-chat'])).toEqual(['Python: RULES has no gemini']);
  });
});
