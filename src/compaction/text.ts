/**
 * The one text rule for every string a caller controls (message values and keys, ids, focus,
 * source, model, append keys), and the one way the service cuts text. Pure: safe for
 * workflow code (the compact Update's validator uses it).
 *
 * The rule: no U+0000, and well-formed Unicode (no unpaired surrogate). Postgres text and
 * jsonb can hold neither: a NUL is refused by the database with a raw error, and the node
 * driver silently turns a lone surrogate into U+FFFD. Sizes are measured in Unicode code
 * points, in every client (Python's len(), JavaScript's [...s].length, Postgres' length()).
 */
import { InvalidInputError } from '../errors';

/** Why a string breaks the text rule, or undefined when it is fine. */
export function textRuleViolation(value: string): string | undefined {
  if (value.includes('\u0000')) return 'contains a NUL character (U+0000)';
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) return 'contains an unpaired surrogate (not well-formed Unicode)';
  return undefined;
}

/** Checks one string against the text rule; throws InvalidInputError naming the field. */
export function checkText(value: string, field: string): string {
  const violation = textRuleViolation(value);
  if (violation) throw new InvalidInputError(field, violation);
  return value;
}

/**
 * The first string (value or key) inside a JSON value that breaks the text rule, with its
 * path (`messages[2].content[0].text`, or `...["bad key"]` for a key), or undefined.
 */
export function findTextRuleViolation(value: unknown, path: string): { field: string; violation: string } | undefined {
  if (typeof value === 'string') {
    const violation = textRuleViolation(value);
    return violation ? { field: path, violation } : undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findTextRuleViolation(value[i], `${path}[${i}]`);
      if (found) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const keyViolation = textRuleViolation(key);
      if (keyViolation) return { field: `${path}[${JSON.stringify(key)}]`, violation: `has a key that ${keyViolation}` };
      const found = findTextRuleViolation(inner, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/** Length in Unicode code points: the one size measure of every client. */
export function codePointLength(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < value.length) {
      const d = value.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * The longest prefix of `text` of at most `maxUnits` UTF-16 units that does not end inside a
 * surrogate pair, or (where the runtime segments graphemes) inside a grapheme cluster such as
 * an emoji with modifiers. Never yields a lone surrogate.
 */
export function cutText(text: string, maxUnits: number): string {
  if (text.length <= maxUnits) return text;
  let end = Math.max(0, Math.floor(maxUnits));
  // Never split a surrogate pair.
  if (end > 0 && end < text.length) {
    const c = text.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--;
  }
  // Back off to a grapheme boundary when the runtime can tell (not in workflow code's sandbox).
  const Segmenter = (
    globalThis as { Intl?: { Segmenter?: new (l?: string, o?: { granularity: string }) => { segment(s: string): Iterable<{ index: number }> } } }
  ).Intl?.Segmenter;
  if (Segmenter && end > 0) {
    const windowStart = Math.max(0, end - 64);
    let boundary = windowStart;
    for (const { index } of new Segmenter(undefined, { granularity: 'grapheme' }).segment(text.slice(windowStart, Math.min(text.length, end + 64)))) {
      if (windowStart + index > end) break;
      boundary = windowStart + index;
    }
    if (boundary > windowStart || windowStart === 0) end = boundary;
  }
  return text.slice(0, end);
}

/**
 * Text as the summary-marker checks read it: leading white space and format characters
 * (NBSP, BOM, zero-width spaces and joiners, bidi marks, every Unicode \s) removed. The SQL
 * function sc_marker_text does the same, so no client can slip a forged marker past either.
 */
export function markerText(text: string): string {
  return text.replace(MARKER_SPACE, '');
}

/**
 * Unicode White_Space and the format characters a text can open with (soft hyphen, bidi
 * marks, zero-width spaces and joiners, word joiner, BOM, interlinear annotation): the same
 * list as sc_marker_text in SQL, character for character, so both read a marker alike.
 */
// eslint-disable-next-line no-control-regex -- tab, newline and the other C0 spaces are White_Space, as in sc_marker_text
const MARKER_SPACE = /^[\u0009-\u000D\u0020\u0085\u00A0\u00AD\u061C\u1680\u180E\u2000-\u200F\u2028-\u202F\u205F-\u2064\u2066-\u206F\u3000\uFEFF\uFFF9-\uFFFB]+/;
