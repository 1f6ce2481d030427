/**
 * Every function file names the schema's tables and functions with their schema (issue 40 §1;
 * docs/security.md, "Roles"): a data-plane function runs as the schema's owner, and a name that
 * depended on the search path is a name a caller's objects could one day answer to. Checked on
 * the files as they are (whole-line comments aside), and on a copy with one unqualified name of
 * each kind, which it must find.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FUNCTIONS_DIR } from '../../src/db/database';

const TABLES = [
  'lineages',
  'sessions',
  'messages',
  'compactions',
  'append_keys',
  'pruned_messages',
  'compaction_events',
  'dialects',
  'schema_level',
  'tenant_logins',
];

const files = readdirSync(FUNCTIONS_DIR).filter((file) => file.endsWith('.sql'));
const FUNCTIONS = files.map((file) => file.slice(0, -'.sql'.length));

/** The unqualified names in one file's SQL, as `line: name`. */
function unqualifiedNames(sql: string): string[] {
  const found: string[] = [];
  sql.split('\n').forEach((line, i) => {
    if (/^\s*--/.test(line)) return;
    const table = new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|USING)\\s+(${TABLES.join('|')})\\b(?!\\.)`, 'g');
    for (const match of line.matchAll(table)) found.push(`${i + 1}: table ${match[1]}`);
    if (/CREATE OR REPLACE FUNCTION/.test(line)) return;
    const call = new RegExp(`(?<![.\\w])(${FUNCTIONS.join('|')})\\s*\\(`, 'g');
    for (const match of line.matchAll(call)) found.push(`${i + 1}: function ${match[1]}`);
  });
  return found;
}

describe('the function files', () => {
  it('name every table and function of the schema with its schema', () => {
    const problems = Object.fromEntries(files.map((file) => [file, unqualifiedNames(readFileSync(path.join(FUNCTIONS_DIR, file), 'utf8'))]));
    expect(Object.entries(problems).filter(([, names]) => names.length > 0)).toEqual([]);
  });

  it('finds an unqualified table and an unqualified call', () => {
    const sql = readFileSync(path.join(FUNCTIONS_DIR, 'session_close.sql'), 'utf8');
    const unqualified = sql.replace('FROM public.sessions', 'FROM sessions').replace('public.sc_not_found(', 'sc_not_found(');
    expect(unqualifiedNames(unqualified).map((p) => p.replace(/^\d+: /, ''))).toEqual(['table sessions', 'function sc_not_found']);
  });
});
