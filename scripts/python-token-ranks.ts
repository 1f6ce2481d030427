/**
 * Writes the BPE ranks the Python client counts tokens with (o200k_base, cl100k_base) from
 * gpt-tokenizer's, the ones the TypeScript client counts with, into
 * clients/python/session_compaction/ranks/<name>.tiktoken (git-ignored). The file has
 * tiktoken's format (one `base64(token) rank` line per rank), so it is byte for byte the file
 * OpenAI publishes: the Python client checks its SHA-256 against OpenAI's before using it.
 * tiktoken would download that file at run time; this way nothing is downloaded and nothing
 * large is committed. Run by `npm run test:python` and `.ci/run`; by hand:
 *
 *   npm run python:ranks
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PROJECT_ROOT } from '../src/config';

const require = createRequire(import.meta.url);

/** OpenAI's SHA-256 of each published file (the `expected_hash` in tiktoken_ext/openai_public.py). */
export const RANK_FILE_SHA256 = {
  o200k_base: '446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d',
  cl100k_base: '223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7',
} as const;

export const RANKS_DIR = path.join(PROJECT_ROOT, 'clients/python/session_compaction/ranks');

/** gpt-tokenizer's ranks: index = rank, value = the token as a string (UTF-8) or as bytes; holes for unused ranks. */
function rankFile(name: keyof typeof RANK_FILE_SHA256): Buffer {
  const module = require(`gpt-tokenizer/bpeRanks/${name}`) as { default: ReadonlyArray<string | readonly number[]> };
  const lines: string[] = [];
  module.default.forEach((token, rank) => {
    const bytes = typeof token === 'string' ? Buffer.from(token, 'utf8') : Buffer.from(token);
    lines.push(`${bytes.toString('base64')} ${rank}\n`);
  });
  return Buffer.from(lines.join(''), 'utf8');
}

export function writeRankFiles(log: (line: string) => void = () => undefined): void {
  mkdirSync(RANKS_DIR, { recursive: true });
  for (const name of Object.keys(RANK_FILE_SHA256) as Array<keyof typeof RANK_FILE_SHA256>) {
    const target = path.join(RANKS_DIR, `${name}.tiktoken`);
    const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
    if (existsSync(target) && sha(readFileSync(target)) === RANK_FILE_SHA256[name]) continue;
    const data = rankFile(name);
    if (sha(data) !== RANK_FILE_SHA256[name]) {
      throw new Error(`the ${name} ranks from gpt-tokenizer do not match OpenAI's published file (SHA-256 ${sha(data)}, expected ${RANK_FILE_SHA256[name]})`);
    }
    writeFileSync(`${target}.tmp`, data);
    renameSync(`${target}.tmp`, target);
    log(`wrote ${path.relative(PROJECT_ROOT, target)}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  writeRankFiles(console.log);
}
