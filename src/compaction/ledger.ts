/**
 * The ledger: what a compaction keeps of the summarised messages deterministically, next to
 * the summariser's prose, so that the agent still knows it however lossy the prose is. It
 * holds the user's requests and corrections verbatim (each cut to a bound, the cut marked),
 * the files the agent touched with the last action, the commands it ran and how they ended,
 * the errors not yet resolved, and the identifiers the user named. Each compaction merges
 * the previous generation's ledger with what its own middle adds, and folds entries into
 * counts, in a stated order, when the ledger outgrows its share of the context window.
 * It is rendered into the summary message (`renderLedger`) and stored as JSON in the audit
 * row. Pure.
 */
import type { Dialect, Message, ToolCall } from './dialects/types';
import { commandOf, identifiersIn, isCorrection, outcomeOf, parsedInput, pathsIn, stringsIn } from './facts';
import { isJsonObject, type JsonValue } from './json';
import { cutText } from './text';
import { estimateTextTokens } from './tokens';

export type FileAction = 'read' | 'created' | 'edited' | 'deleted' | 'mentioned';

export interface LedgerRequest {
  /** The request's lineage sequence number: its stable name (`R12`) across generations. */
  seq: number;
  /** Verbatim, cut to the request bound. */
  text: string;
  /** Characters cut from the end (0: kept whole). */
  cut: number;
  correction: boolean;
  /** The later request (a correction) that replaces this one; absent while it is current. */
  supersededBy?: number;
}

export interface LedgerFile {
  path: string;
  action: FileAction;
  times: number;
}

export interface LedgerCommand {
  command: string;
  /** `exit 0`, `exit 1: <error line>`, `error: ...`, `ok`, or `no result seen`. */
  outcome: string;
  failed: boolean;
  times: number;
}

export interface LedgerError {
  /** What failed: a command line, or a tool and its target. */
  source: string;
  line: string;
  resolved: boolean;
}

export interface FoldCounts {
  requests: number;
  files: number;
  commands: number;
  errors: number;
  identifiers: number;
}

export interface Ledger {
  version: 1;
  requests: LedgerRequest[];
  files: LedgerFile[];
  commands: LedgerCommand[];
  errors: LedgerError[];
  identifiers: string[];
  /** Entries folded into counts, over the lineage's life. */
  folded: FoldCounts;
}

export interface LedgerOptions {
  /** A request is kept verbatim up to this many UTF-16 units, the cut marked. */
  requestChars: number;
  /** The rendered ledger's bound in tokens; entries fold, in foldLedger's order, to fit. */
  budgetTokens: number;
}

export const emptyLedger = (): Ledger => ({
  version: 1,
  requests: [],
  files: [],
  commands: [],
  errors: [],
  identifiers: [],
  folded: { requests: 0, files: 0, commands: 0, errors: 0, identifiers: 0 },
});

/** A ledger read back from an audit row: its shape checked, anything unknown ignored, so an old or foreign row starts a fresh one. */
export function ledgerFrom(value: unknown): Ledger {
  if (!isJsonObject(value) || value.version !== 1) return emptyLedger();
  const fresh = emptyLedger();
  const list = <T>(key: string): T[] => (Array.isArray(value[key]) ? (value[key] as unknown as T[]) : []);
  const folded = isJsonObject(value.folded) ? value.folded : {};
  return {
    version: 1,
    requests: list<LedgerRequest>('requests'),
    files: list<LedgerFile>('files'),
    commands: list<LedgerCommand>('commands'),
    errors: list<LedgerError>('errors'),
    identifiers: list<string>('identifiers'),
    folded: Object.fromEntries(Object.entries(fresh.folded).map(([k, v]) => [k, typeof folded[k] === 'number' ? folded[k] : v])) as unknown as FoldCounts,
  };
}

/** The facts the `facts` gate demands in a head: user requests (cut to the bound), file paths, identifiers. */
export interface Facts {
  requests: string[];
  paths: string[];
  identifiers: string[];
}

/** A message of the summarised range, with its lineage sequence number (null on rows a compaction wrote). */
export interface RangeMessage {
  message: Message;
  seq: number | null;
}

const FILE_KEYS = /^(?:file_?path|path|file_?name|file|notebook_path|target_file|target|source|destination|dir|directory|cwd|workdir)$/i;
const PATCH_LINE = /^\*\*\* (Add|Update|Delete) File: (.+)$|^\+\+\+ [ab]\/(.+)$/gm;

function actionOf(name: string, input: JsonValue): FileAction {
  const sub = isJsonObject(input) && typeof input.command === 'string' ? input.command.toLowerCase() : '';
  if (/editor/i.test(name) && sub) {
    if (sub === 'view') return 'read';
    if (sub === 'create') return 'created';
    return 'edited';
  }
  if (/delete|remove|unlink|^rm$/i.test(name)) return 'deleted';
  if (/write|create|new_?file|save/i.test(name)) return 'created';
  if (/edit|replace|patch|update|insert|modify|append/i.test(name)) return 'edited';
  if (/read|view|open|cat|show|get|glob|grep|search|list|^ls$|find|fetch/i.test(name)) return 'read';
  return 'mentioned';
}

/** The files a tool call touches, with the action its tool implies (patch text read for its files), and the other paths its input mentions. */
function filesOfCall(call: ToolCall): Array<{ path: string; action: FileAction }> {
  const input = parsedInput(call.input);
  const out: Array<{ path: string; action: FileAction }> = [];
  const action = actionOf(call.name, input);
  if (isJsonObject(input)) {
    for (const [key, value] of Object.entries(input)) {
      const values = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
      if (FILE_KEYS.test(key) || /^(?:paths|files)$/i.test(key))
        for (const v of values) if (v.trim()) out.push({ path: v.trim(), action: /^(?:cwd|workdir|dir|directory)$/i.test(key) ? 'mentioned' : action });
    }
  }
  for (const text of stringsIn(input)) {
    for (const m of text.matchAll(PATCH_LINE)) {
      const kind = m[1];
      out.push({ path: (m[2] ?? m[3]).trim(), action: kind === 'Add' ? 'created' : kind === 'Delete' ? 'deleted' : 'edited' });
    }
    for (const path of pathsIn(text)) out.push({ path, action: 'mentioned' });
  }
  return out;
}

/** The facts of a range of messages, as the gate demands them and the ledger records them. */
export function factsOf(range: readonly Message[], dialect: Dialect, requestChars: number): Facts {
  const requests: string[] = [];
  const paths = new Set<string>();
  const identifiers = new Set<string>();
  for (const message of range) {
    const text = dialect.textOf(message);
    if (dialect.isRealUserRequest(message)) {
      if (text.trim()) requests.push(cutText(text, requestChars));
      for (const id of identifiersIn(text)) identifiers.add(id);
    }
    if (dialect.isRealUserRequest(message) || dialect.roleOf(message) === 'assistant') for (const p of pathsIn(text)) paths.add(p);
    for (const call of dialect.toolCalls(message)) for (const f of filesOfCall(call)) paths.add(f.path);
  }
  return { requests, paths: [...paths], identifiers: [...identifiers] };
}

/** The facts a ledger still lists (what is folded is counted, not listed). */
export function ledgerFacts(ledger: Ledger): Facts {
  return { requests: ledger.requests.map((r) => r.text), paths: ledger.files.map((f) => f.path), identifiers: [...ledger.identifiers] };
}

const RANK: Record<FileAction, number> = { mentioned: 0, read: 1, edited: 2, created: 2, deleted: 2 };

function addFile(files: LedgerFile[], path: string, action: FileAction) {
  const known = files.find((f) => f.path === path);
  if (!known) {
    files.push({ path, action, times: 1 });
    return;
  }
  known.times++;
  if (action === 'mentioned') return; // a mention never hides what was done to it
  if (action === 'created' && known.action !== 'mentioned' && known.action !== 'read' && known.action !== 'deleted') known.action = 'edited';
  else if (RANK[action] >= RANK[known.action] || known.action === 'deleted' || action === 'deleted') known.action = action;
  // Re-place it last: the entries stay ordered by last touch, so folding takes the oldest.
  files.splice(files.indexOf(known), 1);
  files.push(known);
}

const oneLine = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${cutText(flat, max - 3)}...` : flat;
};

/**
 * The ledger after a compaction: the previous one, merged with what the summarised range
 * adds, folded to the budget. `keptRequest` is the position in `range` of a request the new
 * head keeps verbatim (the latest), which the ledger leaves to the head until it is summarised.
 */
export function buildLedger(previous: Ledger, range: readonly RangeMessage[], dialect: Dialect, options: LedgerOptions, keptRequest?: number): Ledger {
  const ledger: Ledger = structuredCloneLedger(previous);
  const calls = new Map<string, { name: string; command?: string; target?: string }>();
  range.forEach(({ message, seq }, i) => {
    const text = dialect.textOf(message);
    if (dialect.isRealUserRequest(message)) {
      for (const id of identifiersIn(text)) if (!ledger.identifiers.includes(id)) ledger.identifiers.push(id);
      for (const p of pathsIn(text)) addFile(ledger.files, p, 'mentioned');
      const known = seq !== null && ledger.requests.some((r) => r.seq === seq);
      if (i !== keptRequest && !known && text.trim()) {
        const full = text;
        const kept = cutText(full, options.requestChars);
        const correction = isCorrection(full);
        const number = seq ?? (ledger.requests.at(-1)?.seq ?? 0) + 1;
        if (correction) {
          const corrected = correctedBy(ledger.requests, full);
          if (corrected) corrected.supersededBy = number;
        }
        ledger.requests.push({ seq: number, text: kept, cut: full.length - kept.length, correction });
      }
    } else if (dialect.roleOf(message) === 'assistant') {
      for (const p of pathsIn(text)) addFile(ledger.files, p, 'mentioned');
    }
    for (const call of dialect.toolCalls(message)) {
      const files = filesOfCall(call);
      for (const f of files) addFile(ledger.files, f.path, f.action);
      const command = commandOf(call.name, call.input);
      const target = command ?? `${call.name} ${files.find((f) => f.action !== 'mentioned')?.path ?? ''}`.trim();
      if (call.id) calls.set(call.id, { name: call.name, command, target });
      if (command) upsertCommand(ledger, command, { summary: 'no result seen', failed: false });
    }
    for (const result of dialect.toolResults(message)) {
      const call = result.id !== undefined ? calls.get(result.id) : undefined;
      const outcome = outcomeOf(result.text, result.isError);
      if (call?.command) upsertCommand(ledger, call.command, outcome, true);
      const source = call?.target ?? result.name ?? 'a tool';
      if (outcome.failed) ledger.errors.push({ source: oneLine(source, 200), line: oneLine(outcome.summary, 200), resolved: false });
      else for (const e of ledger.errors) if (e.source === oneLine(source, 200)) e.resolved = true;
    }
  });
  return foldLedger(ledger, options.budgetTokens);
}

const STOP_WORDS = new Set(['the', 'and', 'for', 'with', 'instead', 'actually', 'use', 'not', 'but', 'this', 'that', 'please', 'keep', 'of', 'to', 'in', 'on']);
const wordsOf = (text: string) => new Set((text.toLowerCase().match(/[\p{L}\p{N}_./:-]{2,}/gu) ?? []).filter((w) => !STOP_WORDS.has(w)));

/** The current request a correction replaces: the one sharing most words with it (numbers, paths, names), the latest on a tie. */
function correctedBy(requests: LedgerRequest[], correction: string): LedgerRequest | undefined {
  const words = wordsOf(correction);
  let best: LedgerRequest | undefined;
  let bestScore = -1;
  for (const r of requests) {
    if (r.supersededBy !== undefined) continue;
    const shared = [...wordsOf(r.text)].filter((w) => words.has(w)).length;
    if (shared >= bestScore) {
      best = r;
      bestScore = shared;
    }
  }
  return best;
}

function structuredCloneLedger(ledger: Ledger): Ledger {
  return JSON.parse(JSON.stringify(ledger)) as Ledger;
}

function upsertCommand(ledger: Ledger, raw: string, outcome: { summary: string; failed: boolean }, isResult = false) {
  const command = oneLine(raw, 300);
  const known = ledger.commands.find((c) => c.command === command);
  if (!known) {
    ledger.commands.push({ command, outcome: outcome.summary, failed: outcome.failed, times: 1 });
    return;
  }
  if (!isResult) known.times++;
  known.outcome = outcome.summary;
  known.failed = outcome.failed;
  ledger.commands.splice(ledger.commands.indexOf(known), 1);
  ledger.commands.push(known);
}

// ---------------------------------------------------------------------------------------------
// rendering and folding

/** The line that opens the ledger in a summary: the planner splits a previous summary's prose from its ledger here. */
const LEDGER_HEADING = '## Ledger (kept by session-compaction from the summarised messages, verbatim where quoted)';

const LEDGER_END = '(end of ledger)';

const requestLine = (r: LedgerRequest) => {
  const status = r.supersededBy !== undefined ? ` (superseded by R${r.supersededBy})` : r.correction ? ' (current; a correction)' : '';
  return `R${r.seq}${status}: ${r.text}${r.cut > 0 ? ` [... ${r.cut} more characters cut]` : ''}`;
};
const fileLine = (f: LedgerFile) => `- ${f.path}: ${f.action}${f.times > 1 ? ` (${f.times} times)` : ''}`;
const commandLine = (c: LedgerCommand) => `- $ ${c.command} -> ${c.outcome}${c.times > 1 ? ` (run ${c.times} times)` : ''}`;
const errorLine = (e: LedgerError) => `- ${e.source}: ${e.line}`;

/** The ledger as the agent reads it, inside the summary message. */
export function renderLedger(ledger: Ledger): string {
  const sections = [LEDGER_HEADING];
  if (ledger.requests.length > 0)
    sections.push(`User requests, oldest first (R<n>: the message's place in the session):\n${ledger.requests.map(requestLine).join('\n')}`);
  if (ledger.files.length > 0) sections.push(`Files (last action):\n${ledger.files.map(fileLine).join('\n')}`);
  if (ledger.commands.length > 0) sections.push(`Commands (last outcome):\n${ledger.commands.map(commandLine).join('\n')}`);
  const open = ledger.errors.filter((e) => !e.resolved);
  if (open.length > 0) sections.push(`Errors not yet resolved:\n${open.map(errorLine).join('\n')}`);
  if (ledger.identifiers.length > 0) sections.push(`Identifiers the user named: ${ledger.identifiers.join(', ')}`);
  const f = ledger.folded;
  const folded = Object.entries(f).filter(([, n]) => n > 0);
  if (folded.length > 0) sections.push(`Folded into counts to fit (oldest and resolved first): ${folded.map(([k, n]) => `${n} ${k}`).join(', ')}`);
  // A closing line: a summary message is trimmed, which must never cut a request's own trailing white space.
  sections.push(LEDGER_END);
  return sections.join('\n\n');
}

/**
 * Folds entries into counts until the rendering fits the budget. What folds first, oldest
 * first within each step: resolved errors (never rendered, folded at once), commands that
 * succeeded, files only read or mentioned, superseded requests, identifiers, other files,
 * failed commands, open errors, and last the current requests.
 */
function foldLedger(ledger: Ledger, budgetTokens: number): Ledger {
  // Resolved errors are never rendered: they fold at once.
  const resolved = ledger.errors.filter((e) => e.resolved).length;
  ledger.errors = ledger.errors.filter((e) => !e.resolved);
  ledger.folded.errors += resolved;
  let tokens = estimateTextTokens(renderLedger(ledger));
  if (tokens <= budgetTokens) return ledger;
  type Victim = { kind: keyof FoldCounts; remove: () => number };
  const line = (s: string) => estimateTextTokens(s) + 1;
  const drop =
    <T>(list: T[], item: T, render: (t: T) => string) =>
    () => {
      const at = list.indexOf(item);
      if (at >= 0) list.splice(at, 1);
      return line(render(item));
    };
  const steps: Victim[][] = [
    [],
    ledger.commands.filter((c) => !c.failed).map((c) => ({ kind: 'commands', remove: drop(ledger.commands, c, commandLine) })),
    ledger.files.filter((f) => f.action === 'read' || f.action === 'mentioned').map((f) => ({ kind: 'files', remove: drop(ledger.files, f, fileLine) })),
    ledger.requests.filter((r) => r.supersededBy !== undefined).map((r) => ({ kind: 'requests', remove: drop(ledger.requests, r, requestLine) })),
    ledger.identifiers.map((id) => ({ kind: 'identifiers', remove: drop(ledger.identifiers, id, (s) => `${s}, `) })),
    ledger.files.filter((f) => f.action !== 'read' && f.action !== 'mentioned').map((f) => ({ kind: 'files', remove: drop(ledger.files, f, fileLine) })),
    ledger.commands.filter((c) => c.failed).map((c) => ({ kind: 'commands', remove: drop(ledger.commands, c, commandLine) })),
    ledger.errors.map((e) => ({ kind: 'errors', remove: drop(ledger.errors, e, errorLine) })),
    ledger.requests.filter((r) => r.supersededBy === undefined).map((r) => ({ kind: 'requests', remove: drop(ledger.requests, r, requestLine) })),
  ];
  for (const step of steps) {
    for (const victim of step) {
      if (tokens <= budgetTokens) break;
      tokens -= victim.remove();
      ledger.folded[victim.kind]++;
    }
    // Line estimates undercount headings: check the rendering itself before stopping.
    if (tokens <= budgetTokens) tokens = estimateTextTokens(renderLedger(ledger));
    if (tokens <= budgetTokens) break;
  }
  return ledger;
}

/** The prose of a summary this service wrote: its text without the ledger section. */
export function proseOf(summaryText: string): string {
  const at = summaryText.indexOf(`\n${LEDGER_HEADING}`);
  return (at >= 0 ? summaryText.slice(0, at) : summaryText.startsWith(LEDGER_HEADING) ? '' : summaryText).trim();
}

/** The summary text a compaction commits: the summariser's prose, then the ledger. */
export function summaryWithLedger(prose: string, ledger: Ledger): string {
  return `${prose.trim()}\n\n${renderLedger(ledger)}`;
}

/** Newly folded entries between two ledgers, by the gate's kinds. */
export function newlyFolded(before: Ledger, after: Ledger): { requests: number; paths: number; identifiers: number } {
  return {
    requests: after.folded.requests - before.folded.requests,
    paths: after.folded.files - before.folded.files,
    identifiers: after.folded.identifiers - before.folded.identifiers,
  };
}
