/**
 * Each dialect's grouping, real user requests and open calls against the shared vectors
 * (contract/vectors/dialect-rules.json; clients/python checks its real-user rule against the
 * same file). A change to a rule shows here as a changed vector, on purpose.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';

const { cases } = JSON.parse(readFileSync(path.join(__dirname, '../../contract/vectors/dialect-rules.json'), 'utf8')) as {
  cases: Array<{
    name: string;
    dialect: string;
    messages: Message[];
    groups: number[][];
    realUserRequests: number[];
    openCalls: { index: number; ids: string[] } | null;
  }>;
};

describe('dialect rules (shared vectors)', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const d = dialectOf(c.dialect);
    expect(d.groups(c.messages).map((g) => g.indices)).toEqual(c.groups);
    expect(c.messages.flatMap((m, i) => (d.isRealUserRequest(m) ? [i] : []))).toEqual(c.realUserRequests);
    expect(d.openCalls(c.messages) ?? null).toEqual(c.openCalls);
    // Every group is contiguous and together they cover the transcript once, in order.
    expect(c.groups.flat()).toEqual(c.messages.map((_, i) => i));
  });

  it('covers every dialect, and an open call in the alternating ones', () => {
    expect(new Set(cases.map((c) => c.dialect))).toEqual(new Set(DIALECT_NAMES));
    expect(cases.filter((c) => c.openCalls).map((c) => c.dialect)).toEqual(expect.arrayContaining(['openai-chat', 'anthropic', 'gemini', 'ai-sdk']));
  });
});
