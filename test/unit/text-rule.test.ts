/**
 * The one text rule (src/compaction/text.ts), from the shared vectors both clients read
 * (contract/vectors/text-rule.json; clients/python runs the same file), and the cut that never
 * yields a lone surrogate: a property test over strings full of emoji, astral characters and
 * combining sequences, cut at every length.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/compaction/dialects';
import { clip } from '../../src/compaction/dialects/common';
import { parseMessages } from '../../src/compaction/message-schema';
import { codePointLength, cutText, markerText } from '../../src/compaction/text';
import { InvalidInputError } from '../../src/errors';

const vectors = JSON.parse(readFileSync(path.join(__dirname, '../../contract/vectors/text-rule.json'), 'utf8')) as {
  cases: Array<{ name: string; dialect?: string; messages: unknown[]; field: string; message: string }>;
};
const isWellFormed = (s: string) => (s as string & { isWellFormed(): boolean }).isWellFormed();

describe('the text rule (shared vectors)', () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const error = (() => {
      try {
        parseMessages(c.messages, undefined, dialectOf(c.dialect));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).field).toBe(c.field);
    expect((error as InvalidInputError).message).toBe(c.message);
  });
});

describe('cutting text', () => {
  const hostile = fc
    .array(fc.constantFrom('a', 'é', '😀', '👍🏽', '🧑‍💻', '🇯🇵', 'e\u0301', '𝒞', '日', ' ', '\u200d'), { maxLength: 80 })
    .map((parts) => parts.join(''));

  it('never yields a lone surrogate, at any cut length, and never grows the text', () => {
    fc.assert(
      fc.property(hostile, fc.nat(200), (text, n) => {
        const cut = cutText(text, n);
        expect(isWellFormed(cut)).toBe(true);
        expect(cut.length).toBeLessThanOrEqual(Math.max(0, n));
        expect(text.startsWith(cut)).toBe(true);
      }),
      { numRuns: 2000, seed: 20261201 },
    );
  });

  it('clips tool output for the summariser on a boundary, with a note of what was left out', () => {
    fc.assert(
      fc.property(hostile, fc.integer({ min: 1, max: 100 }), (text, cap) => {
        const clipped = clip(text, cap);
        expect(isWellFormed(clipped)).toBe(true);
        if (text.length > cap) expect(clipped).toMatch(/more characters of this tool result not shown\]$/);
      }),
      { numRuns: 1000, seed: 7 },
    );
  });

  it('cuts "158 a then an emoji" before the emoji, not inside it', () => {
    expect(cutText(`${'a'.repeat(158)}😀`, 159)).toBe('a'.repeat(158));
  });

  it('counts code points, as Python and Postgres do', () => {
    expect(codePointLength('😀a\ud800')).toBe(3);
  });

  it('reads the summary marker behind every kind of Unicode space and format character', () => {
    for (const ch of ['\u00a0', '\ufeff', '\u200b', '\u200e', '\u2060', '\u3000', '\u180e', '\u202f', '\u00ad']) expect(markerText(`${ch}[X`)).toBe('[X');
  });
});
