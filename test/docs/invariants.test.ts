/**
 * Keeps docs/invariants.md (and the code names in docs/glossary.md) true to the code: every
 * path it names exists, every name it gives after a file occurs in that file, and every test
 * title it quotes after a test file is a test in that file. The format it parses:
 *
 *   - mechanism: `src/db/commit.ts` `commitCompaction`; `src/db/jobs.ts` `abortJob`: prose
 *   - second line: (the same)
 *   - carried by: (the same, in the glossary)
 *   - test: `test/stack/lease.test.ts` "a title"; "another title"; `test/other.test.ts` "..."
 *
 * On those items, a backticked path sets the current file, and each backticked name after it
 * must occur in that file's code (not only in a comment) as a whole word; each quoted title
 * must be the title of an `it` or `test` in the current test file, exactly as written there
 * (quotes escaped in the source are compared unescaped).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';

const PATH = /^(?:src|test|clients|contract|docs|bench|scripts|examples)\/[\w./-]*\w\.\w+$/;
const CODE_ITEM = /^\s*- (mechanism|second line|carried by):/;
const TEST_ITEM = /^\s*- test:/;
const TEST_CALL = /\b(?:it|test)(?:\.\w+(?:\(.*\))?)?\(/;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The file's code without its comments, so that a name survives a rename only if the code
 * still uses it (comments are not trusted): block comments and whole-line or trailing line
 * comments in TypeScript and JavaScript, whole-line comments in SQL.
 */
export function withoutComments(file: string, text: string): string {
  if (/\.sql$/.test(file)) return text.replace(/^\s*--.*$/gm, '');
  if (/\.(?:ts|js|mts)$/.test(file)) return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
  return text;
}

/** Whether `name` occurs in `text` as a whole word (not as part of a longer identifier). */
export function occursAsWord(text: string, name: string): boolean {
  return new RegExp(`(?<![A-Za-z0-9_$])${escapeRegExp(name)}(?![A-Za-z0-9_$])`).test(text);
}

/**
 * Whether `title` is the title of an `it`/`test` call in the test file's source: on the call's
 * line or, where the formatter broke the call (`it.each([...])(` then the title), the two after.
 */
export function isTestTitle(source: string, title: string): boolean {
  const lines = source.split('\n');
  return lines.some((raw, i) => {
    const call = TEST_CALL.exec(raw);
    if (!call) return false;
    // The first argument: what follows the call's opening parenthesis, on its line or the next.
    const argument = [raw.slice(call.index + call[0].length), ...lines.slice(i + 1, i + 3)]
      .join('\n')
      .trimStart()
      .replace(/\\(['"`])/g, '$1');
    return ["'", '"', '`'].some((q) => argument.startsWith(`${q}${title}${q}`));
  });
}

export interface DocReport {
  problems: string[];
  /** What was checked, so a parse that finds nothing fails instead of passing. */
  paths: number;
  names: number;
  titles: number;
  sections: Array<{ title: string; mechanisms: number; tests: number }>;
}

export interface Files {
  exists(file: string): boolean;
  read(file: string): string;
}

/** The project's own files. */
export const projectFiles: Files = {
  exists: (file) => existsSync(path.join(PROJECT_ROOT, file)),
  read: (file) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8'),
};

/** Checks a document in this format against `files`. */
export function checkDoc(doc: string, files: Files = projectFiles): DocReport {
  const report: DocReport = { problems: [], paths: 0, names: 0, titles: 0, sections: [] };
  const cache = new Map<string, string>();
  const source = (file: string) => {
    if (!cache.has(file)) cache.set(file, files.read(file));
    return cache.get(file)!;
  };
  for (const [index, line] of doc.split('\n').entries()) {
    const where = `line ${index + 1}`;
    const heading = /^## (.+)$/.exec(line);
    if (heading) report.sections.push({ title: heading[1], mechanisms: 0, tests: 0 });
    const section = report.sections[report.sections.length - 1];

    const missing = new Set<string>();
    for (const [, token] of line.matchAll(/`([^`]+)`/g)) {
      if (!PATH.test(token)) continue;
      report.paths++;
      if (!files.exists(token)) {
        report.problems.push(`${where}: ${token} does not exist`);
        missing.add(token);
      }
    }

    if (CODE_ITEM.test(line)) {
      if (section && /mechanism/.test(CODE_ITEM.exec(line)![1])) section.mechanisms++;
      let file: string | undefined;
      for (const [, token] of line.matchAll(/`([^`]+)`/g)) {
        if (PATH.test(token)) {
          file = token;
          continue;
        }
        if (!file) {
          report.problems.push(`${where}: \`${token}\` is not preceded by the file it is in`);
          continue;
        }
        if (missing.has(file)) continue;
        report.names++;
        if (!occursAsWord(withoutComments(file, source(file)), token)) report.problems.push(`${where}: \`${token}\` does not occur in ${file}`);
      }
    } else if (TEST_ITEM.test(line)) {
      if (section) section.tests++;
      let file: string | undefined;
      for (const [, token, title] of line.matchAll(/`([^`]+)`|"([^"]+)"/g)) {
        if (token !== undefined) {
          if (PATH.test(token)) file = token;
          continue;
        }
        if (!file) {
          report.problems.push(`${where}: "${title}" is not preceded by its test file`);
          continue;
        }
        if (missing.has(file)) continue;
        report.titles++;
        if (!isTestTitle(source(file), title)) report.problems.push(`${where}: "${title}" is not a test title in ${file}`);
      }
    }
  }
  return report;
}

const read = (file: string) => readFileSync(path.join(PROJECT_ROOT, file), 'utf8');

describe('docs/invariants.md', () => {
  const doc = read('docs/invariants.md');
  const report = checkDoc(doc);

  it('names only files that exist, names that occur in their files, and tests that exist', () => {
    expect(report.problems).toEqual([]);
  });

  it('gives each promise at least one mechanism and one test, and the checks really ran', () => {
    const promises = report.sections;
    expect(promises.length).toBeGreaterThanOrEqual(10);
    expect(promises.filter((p) => p.mechanisms === 0 || p.tests === 0)).toEqual([]);
    for (const promise of [
      'No fork',
      'Nothing lost',
      'No double run',
      'The lease',
      'Fencing',
      'Stale adoption',
      'The valid head',
      'Lasting answers',
      'Closed lineages stay closed',
      'Append keys',
    ]) {
      expect(
        promises.map((p) => p.title).some((t) => t.startsWith(promise)),
        promise,
      ).toBe(true);
    }
    expect(report.names).toBeGreaterThan(100);
    expect(report.titles).toBeGreaterThan(50);
  });

  it('is linked from the README, reliability.md and to the glossary', () => {
    const links = (file: string, target: string) => read(file).includes(`](${target})`);
    expect(links('README.md', 'docs/invariants.md'), 'README.md links docs/invariants.md').toBe(true);
    expect(links('README.md', 'docs/glossary.md'), 'README.md links docs/glossary.md').toBe(true);
    expect(links('docs/reliability.md', 'invariants.md'), 'reliability.md links invariants.md').toBe(true);
    expect(links('docs/invariants.md', 'glossary.md'), 'invariants.md links glossary.md').toBe(true);
  });
});

describe('docs/glossary.md', () => {
  it('names only files that exist and names that occur in their files', () => {
    const report = checkDoc(read('docs/glossary.md'));
    expect(report.problems).toEqual([]);
    expect(report.names).toBeGreaterThan(30);
  });
});

describe('the checker itself', () => {
  const files: Record<string, string> = {
    'src/a.ts': 'export function commitCompaction() {}\nconst admitted = 1; // see abortJob\n/** and recordedAnswer */\n',
    'test/a.test.ts': "it('keeps the lease', () => {});\nit('the retry\\'s commit', () => {});\nconst x = 'a string, not a test';\n",
  };
  const checkWith = (doc: string) => checkDoc(doc, { exists: (file) => file in files, read: (file) => files[file] });

  it('passes a true map', () => {
    expect(checkWith('## P\n- mechanism: `src/a.ts` `commitCompaction`\n- test: `test/a.test.ts` "keeps the lease"; "the retry\'s commit"').problems).toEqual(
      [],
    );
  });

  it('fails on a renamed function, a partial word, a name left only in a comment, a renamed test, a string that is not a test, a missing file', () => {
    expect(checkWith('- mechanism: `src/a.ts` `commitCompactions`').problems).toHaveLength(1);
    expect(checkWith('- mechanism: `src/a.ts` `admit`').problems).toHaveLength(1);
    expect(checkWith('- mechanism: `src/a.ts` `abortJob`, `recordedAnswer`').problems).toHaveLength(2); // only in comments
    expect(checkWith('- test: `test/a.test.ts` "keeps a lease"').problems).toHaveLength(1);
    expect(checkWith('- test: `test/a.test.ts` "a string, not a test"').problems).toHaveLength(1);
    expect(checkWith('- mechanism: `src/no-such-file.ts` `x`').problems).toEqual(['line 1: src/no-such-file.ts does not exist']);
    expect(checkWith('- mechanism: `commitCompaction` in no file').problems).toHaveLength(1);
  });
});
