/**
 * The facts of a transcript the ledger keeps and the `facts` gate checks: file paths,
 * identifiers the user named, whether a request corrects an earlier one, and what a shell
 * command was and how it ended. Deterministic text rules, the same on both sides: what the
 * ledger records and what the gate demands come from these functions. Pure.
 */
import { isJsonObject, type JsonValue } from './json';
import { cutText, textRuleViolation } from './text';

/** File extensions a bare name (`README.md`, `main.py`) must end with to count as a path. */
const EXTENSIONS =
  'ts|tsx|js|jsx|mjs|cjs|mts|cts|py|pyi|rb|go|rs|java|kt|kts|scala|swift|c|cc|cpp|cxx|h|hpp|cs|php|sh|bash|zsh|ps1|sql|md|mdx|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|xml|html|htm|css|scss|less|vue|svelte|graphql|proto|tf|ipynb|csv|tsv|log|dockerfile|gradle|mk|cmake';
/** A path-shaped token: segments of path characters joined by `/`, optionally rooted (`/`, `./`, `../`, `~/`). */
const PATH_TOKEN = /^(?:~|\.{1,2})?\/?[\w@+.-]+(?:\/[\w@+.-]+)*$/u;
const KNOWN_EXTENSION = new RegExp(String.raw`\.(?:${EXTENSIONS})$`, 'i');
// eslint-disable-next-line no-control-regex -- a URL holds no control or format character (see HIDDEN)
const URL = /\bhttps?:\/\/[^\s<>"'`)\]}\u0000-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]+/giu;
/** Ticket and issue ids (`PROJ-123`, `#4521`), UUIDs, and commit hashes (7 to 40 hex digits with a letter and a digit). */
const IDENTIFIERS = [
  /\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b/gu,
  /(?<![\w&])#\d{2,7}\b/gu,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/giu,
  /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/gu,
];

const trimTrailing = (s: string) => s.replace(/[.,;:!?'"`)\]}>]+$/u, '');

/**
 * The file paths a text mentions, in order of first mention, each once. A path is rooted
 * (`/etc/hosts`, `./run.sh`, `~/notes`), or has two separators (`src/db/schema`), or ends in
 * a known extension (`README.md`, `src/app.ts`); a line number after it (`app.ts:12`) is not
 * part of it. `and/or`, `1/2`, dates and URLs are not paths.
 */
export function pathsIn(text: string): string[] {
  const out = new Set<string>();
  for (const raw of text.replace(URL, ' ').split(/[\s"'`()[\]{}<>,;|=*]+/u)) {
    if (raw.length > 320) continue; // no path is that long; and the trims below would take quadratic time on it
    const candidate = trimTrailing(raw.replace(/(?::\d+){1,2}$/u, '')).replace(/\/+$/u, '');
    if (candidate.length < 3 || candidate.length > 300 || !PATH_TOKEN.test(candidate)) continue;
    if (/^[\d./-]+$/u.test(candidate) || /^\.+$/u.test(candidate.replace(/\//g, ''))) continue; // numbers, dates, versions, dots
    const separators = (candidate.match(/\//g) ?? []).length;
    const rooted = /^(?:~|\.{1,2})?\/[\w@+-]/u.test(candidate);
    if (rooted || separators >= 2 || KNOWN_EXTENSION.test(candidate)) out.add(candidate);
  }
  return [...out];
}

/** URLs, ticket and issue ids, UUIDs and commit hashes a text names, in order, each once. */
export function identifiersIn(text: string): string[] {
  const out = new Set<string>();
  let rest = text;
  for (const pattern of [URL, ...IDENTIFIERS]) {
    for (const match of rest.matchAll(pattern)) if (match[0].length <= 2048) out.add(pattern === URL ? trimTrailing(match[0]) : match[0]);
    rest = rest.replace(pattern, ' '); // a UUID's first group is not also a commit hash
  }
  return [...out];
}

/**
 * Whether a user request corrects the one before it: it opens with a correction ("actually",
 * "no,", "instead", "wait", "scratch that", "I meant", "change of plan", "correction", "rather",
 * "forget that", "never mind"). "Don't" and "stop" open new requests as often as corrections, so
 * they do not count.
 */
export function isCorrection(text: string): boolean {
  return /^\s*(?:actually\b|no[,.!:;]|nope\b|wait\b|instead\b|correction\b|scratch that\b|sorry,? i meant\b|i meant\b|rather\b|change of plans?\b|forget (?:that|what i said|it)\b|never ?mind\b|update:|not \S+,? but\b)/iu.test(
    text,
  );
}

/** How deep, and how many strings, the ledger reads of one tool input. */
const MAX_INPUT_DEPTH = 32;
const MAX_INPUT_STRINGS = 2000;

/**
 * Every string inside a value (object values, array items), in order, walked without recursion
 * and bounded (MAX_INPUT_DEPTH levels, MAX_INPUT_STRINGS strings): a tool input nested
 * thousands deep is read as far as the bound, never overflowing the stack. Undefined when the
 * value is deeper than the bound.
 */
function boundedStrings(value: JsonValue | undefined): string[] | undefined {
  const out: string[] = [];
  const stack: Array<{ value: JsonValue | undefined; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0 && out.length < MAX_INPUT_STRINGS) {
    const { value: v, depth } = stack.pop()!;
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v) || isJsonObject(v)) {
      if (depth >= MAX_INPUT_DEPTH) return undefined;
      const children = Array.isArray(v) ? v : Object.values(v);
      for (let i = children.length - 1; i >= 0; i--) stack.push({ value: children[i], depth: depth + 1 });
    }
  }
  return out;
}

/**
 * A tool input as an object: JSON text parsed, anything else as it came. A parse that is
 * deeper than the ledger reads, or that yields text the text rule refuses (a NUL or a lone
 * surrogate written as an escape, which the append check cannot see in the JSON text), is
 * read as the text it came as.
 */
export function parsedInput(input: JsonValue): JsonValue {
  if (typeof input !== 'string') return input;
  const trimmed = input.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return input;
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(trimmed) as JsonValue;
  } catch {
    return input;
  }
  const strings = boundedStrings(parsed);
  if (strings === undefined || strings.some((s) => textRuleViolation(s) !== undefined)) return input;
  return parsed;
}

/** Every string inside a value, in order, bounded as the ledger reads tool inputs (an input deeper than the bound gives none). */
export function stringsIn(value: JsonValue | undefined): string[] {
  return boundedStrings(value) ?? [];
}

const SHELL_TOOL = /^(?:bash|shell|sh|zsh|terminal|run|run_command|run_shell_command|execute|execute_command|exec|exec_command|local_shell|command|cmd)$/i;

/** The command line a tool call runs, when it is a shell call: a `command`/`cmd` string, or an argv (`["bash","-lc","npm test"]`: its script). */
export function commandOf(name: string, input: JsonValue): string | undefined {
  const value = parsedInput(input);
  const obj = isJsonObject(value) ? value : undefined;
  const raw = obj ? (obj.command ?? obj.cmd ?? obj.commands ?? obj.script) : undefined;
  if (!SHELL_TOOL.test(name) && !(raw !== undefined && /shell|bash|exec|command|terminal/i.test(name))) return undefined;
  if (typeof raw === 'string') return raw.trim() || undefined;
  if (Array.isArray(raw) && raw.every((p) => typeof p === 'string')) {
    const argv = raw as string[];
    if (argv.length >= 3 && /^(?:ba|z)?sh$/.test(argv[0].replace(/^.*\//, '')) && /^-\w*c$/.test(argv[1])) return argv.slice(2).join(' ').trim() || undefined;
    return argv.join(' ').trim() || undefined;
  }
  if (typeof value === 'string' && SHELL_TOOL.test(name)) return value.trim() || undefined;
  return undefined;
}

/** How a command ended, read from its result: an exit status, or an error line, or `ok`. */
export interface CommandOutcome {
  failed: boolean;
  /** `exit 0`, `exit 2: npm ERR! missing script`, `error: ...`, `ok`. */
  summary: string;
}

const ERROR_LINE = /(?:error|exception|traceback|failed|failure|fatal|cannot|not found|denied|panic)/i;

function firstMatchingLine(text: string): string | undefined {
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t && ERROR_LINE.test(t)) return dataLine(t, 160);
  }
  return undefined;
}

/** The outcome a result text reports: `exit N` (Codex metadata, `Exit code: N`, `exited with code N`), the provider's error mark, or ok. The error line is one line of data (dataLine). */
export function outcomeOf(text: string, isError: boolean): CommandOutcome {
  const exit =
    /"exit_code"\s*:\s*(-?\d+)/.exec(text) ??
    /\bexit(?:ed)?(?: with)?(?: status| code)?[: ]\s*(-?\d+)/i.exec(text) ??
    /\bProcess exited with code (-?\d+)/i.exec(text);
  if (exit) {
    const code = Number(exit[1]);
    const line = code !== 0 ? firstMatchingLine(text) : undefined;
    return { failed: code !== 0 || isError, summary: `exit ${code}${line ? `: ${line}` : ''}` };
  }
  if (isError) return { failed: true, summary: `error: ${firstMatchingLine(text) ?? dataLine(text.trim().split('\n')[0] ?? '', 160)}` };
  return { failed: false, summary: 'ok' };
}

/**
 * Line breaks of every kind (CR, LF, VT, FF, NEL, U+2028/9), other control characters, and the
 * invisible format characters a text can hide a break or a reordering behind.
 */
// eslint-disable-next-line no-control-regex -- control characters are what this removes
const BREAKS = /[\s\u0000-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]+/gu;

/** A character that can break a line or hide in one: a control character (C0, C1: tab, CR, LF, VT, FF, NEL), U+2028/9, a format character. */
// eslint-disable-next-line no-control-regex -- control characters are what this finds
const HIDDEN = /[\u0000-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]/gu;

/**
 * A fact (a path, an identifier) as the ledger holds and renders it: each hidden character one
 * space, nothing else changed. The text rules never find a fact with one (`pathsIn`,
 * `identifiersIn`, a path field that holds one is not a path), so for them this is the fact
 * itself; it only changes a ledger stored before that rule.
 */
export function factLine(text: string): string {
  return text.replace(HIDDEN, ' ');
}

/** Whether a text holds a character that can break a line or hide in one (factLine would change it). */
export const hasHidden = (text: string): boolean => factLine(text) !== text;

/**
 * Text from a tool as one line of data: every break and run of white space or control
 * characters one space, trimmed, cut to `max` UTF-16 units (the cut marked `...`). Whatever a
 * tool printed, it stays inside the line that quotes it: it cannot open a line of its own.
 */
export function dataLine(text: string, max: number): string {
  const flat = text.replace(BREAKS, ' ').trim();
  return flat.length > max ? `${cutText(flat, max - 3)}...` : flat;
}

// ---------------------------------------------------------------------------------------------
// the masking rung's placeholder (src/compaction/masking.ts writes it, the ledger reads it)

/** How every placeholder opens. Text is read as a placeholder only in a row a compaction wrote (masking.ts, isMaskedOutput). */
export const MASK_PREFIX = '[tool output masked by session-compaction:';
const MASK_SUFFIX = '; the original is archived with the session]';
/** A placeholder field's bound (the tool's name, the outcome). */
const MASK_FIELD_CHARS = 200;
/**
 * A placeholder whole, as placeholderText writes it: every field on one line, with no `"` or
 * `]` inside. A prefix followed by anything else, or a field across lines, is not one.
 */
const PLACEHOLDER =
  /^\[tool output masked by session-compaction: \d+ characters of output(?: from [^"\]\n\r]*)?, outcome "([^"\]\n\r]*)"; the original is archived with the session\]$/u;

/** A placeholder field: one line of data, its quotes and brackets turned into ones that cannot end the field or the placeholder. */
const placeholderField = (text: string) => dataLine(text.replace(/"/g, "'").replace(/]/g, ')'), MASK_FIELD_CHARS);

/** The placeholder for an output of `chars` characters: its size, its tool, its outcome, and where the original is. */
export function placeholderText(chars: number, tool: string | undefined, outcome: CommandOutcome): string {
  const from = tool ? placeholderField(tool) : '';
  return `${MASK_PREFIX} ${chars} characters of output${from ? ` from ${from}` : ''}, outcome "${placeholderField(outcome.summary)}"${MASK_SUFFIX}`;
}

/**
 * The outcome a placeholder recorded, or undefined when the text is not a whole placeholder.
 * Callers read it only from a row a compaction wrote (a caller's tool output that looks like
 * one is read with outcomeOf, as the text it is).
 */
export function maskedOutcomeOf(text: string): CommandOutcome | undefined {
  const m = PLACEHOLDER.exec(text);
  if (!m) return undefined;
  return { failed: !/^(?:ok|exit 0)$/.test(m[1]), summary: m[1] };
}
