import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readWithRetry } from '../../src/db/database';
import { classifyPostgresError } from '../../src/db/postgres-errors';

interface Layer {
  message: string;
  code?: string | number;
  syscall?: string;
  query?: string;
  params?: unknown[];
  detail?: string;
  metadata?: object;
}
interface Case {
  name: string;
  chain: Layer[];
  expect: { kind: string; code: string | null; transient: boolean; refusedForGood: boolean };
}

const vector = JSON.parse(readFileSync(path.join(__dirname, '../../contract/vectors/postgres-errors.json'), 'utf8')) as { cases: Case[] };

/** The chain as pg, Node and drizzle raise it: each layer an Error whose cause is the next. */
function errorOf(chain: Layer[]): Error {
  let cause: Error | undefined;
  for (const layer of [...chain].reverse()) {
    const { message, ...fields } = layer;
    const error = Object.assign(new Error(message, cause ? { cause } : undefined), fields);
    cause = error;
  }
  return cause!;
}

describe('classifyPostgresError (contract/vectors/postgres-errors.json)', () => {
  it('holds cases of every kind', () => {
    const kinds = new Set(vector.cases.map((c) => c.expect.kind));
    expect([...kinds].sort()).toEqual(['data-plane', 'other', 'query', 'unreachable']);
  });
  it.each(vector.cases)('$name', ({ chain, expect: expected }) => {
    const got = classifyPostgresError(errorOf(chain));
    expect({ ...got, code: got.code ?? null }).toEqual(expected);
  });
});

describe('readWithRetry retries exactly the transient cases', () => {
  const attempts = async (error: Error) => {
    let calls = 0;
    const result = await readWithRetry(async () => {
      calls += 1;
      if (calls === 1) throw error;
      return 'read';
    }, 5_000).catch(() => 'thrown');
    return { calls, result };
  };
  it.each(vector.cases)('$name', async ({ chain, expect: expected }) => {
    expect(await attempts(errorOf(chain))).toEqual(expected.transient ? { calls: 2, result: 'read' } : { calls: 1, result: 'thrown' });
  });
});
