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
import { commandOf, dataLine, factLine, hasHidden, identifiersIn, isCorrection, maskedOutcomeOf, outcomeOf, parsedInput, pathsIn, stringsIn } from './facts';
import { emptyInFlight, type InFlight, inFlightFacts, inFlightFrom, InFlightTracker, type LedgerError, nextStep } from './in-flight';
import { isJsonObject, type JsonValue } from './json';
import { LEDGER_END, LEDGER_HEADING, LEDGER_SECTIONS, withoutReservedText } from './summary-structure';
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

export type { LedgerError } from './in-flight';

export interface FoldCounts {
  requests: number;
  files: number;
  commands: number;
  errors: number;
  identifiers: number;
  /** In-flight entries beyond their kind's hard bound (in-flight.ts MAX_OPEN); never one while its kind is under it. */
  inFlight: number;
}

export interface Ledger {
  version: 1;
  requests: LedgerRequest[];
  files: LedgerFile[];
  commands: LedgerCommand[];
  errors: LedgerError[];
  identifiers: string[];
  /** In-flight work (in-flight.ts): the plan, background work, user turns not yet answered, standing instructions. Open errors are `errors`. */
  inFlight: InFlight;
  /** Entries folded into counts, over the lineage's life. */
  folded: FoldCounts;
}

export interface LedgerOptions {
  /** A request is kept verbatim up to this many UTF-16 units, the cut marked. */
  requestChars: number;
  /** The rendered ledger's bound in tokens; entries fold, in foldLedger's order, to fit (open in-flight entries never). */
  budgetTokens: number;
  /** The tools whose calls set the plan (in-flight.ts PLAN_TOOLS by default). */
  planTool?: RegExp;
}

export const emptyLedger = (): Ledger => ({
  version: 1,
  requests: [],
  files: [],
  commands: [],
  errors: [],
  identifiers: [],
  inFlight: emptyInFlight(),
  folded: { requests: 0, files: 0, commands: 0, errors: 0, identifiers: 0, inFlight: 0 },
});

/**
 * A ledger read back from an audit row: its shape checked, anything unknown ignored, so an old or
 * foreign row starts a fresh one. Paths and identifiers stored before the text rules refused
 * hidden characters in them are read through factLine, as they are rendered, so that the `facts`
 * gate demands what the ledger shows.
 */
export function ledgerFrom(value: unknown): Ledger {
  if (!isJsonObject(value) || value.version !== 1) return emptyLedger();
  const fresh = emptyLedger();
  const list = <T>(key: string): T[] => (Array.isArray(value[key]) ? (value[key] as unknown as T[]) : []);
  const folded = isJsonObject(value.folded) ? value.folded : {};
  return {
    version: 1,
    requests: list<LedgerRequest>('requests'),
    files: list<LedgerFile>('files')
      .filter((f) => isJsonObject(f as unknown as JsonValue))
      .map((f) => ({ ...f, path: factLine(String(f.path)) })),
    commands: list<LedgerCommand>('commands'),
    errors: list<LedgerError>('errors'),
    identifiers: list<string>('identifiers').map((id) => factLine(String(id))),
    inFlight: inFlightFrom(value.inFlight),
    folded: Object.fromEntries(Object.entries(fresh.folded).map(([k, v]) => [k, typeof folded[k] === 'number' ? folded[k] : v])) as unknown as FoldCounts,
  };
}

/** The facts the `facts` gate demands in a head: user requests (cut to the bound), file paths, identifiers, and the exact strings of open in-flight entries. */
export interface Facts {
  requests: string[];
  paths: string[];
  identifiers: string[];
  /** Open errors, plan steps, background work, user turns not yet answered, standing instructions (in-flight.ts inFlightFacts). */
  inFlight?: string[];
}

export const mergeFacts = (a: Facts, b: Facts): Facts => ({
  requests: [...a.requests, ...b.requests],
  paths: [...a.paths, ...b.paths],
  identifiers: [...a.identifiers, ...b.identifiers],
  inFlight: [...(a.inFlight ?? []), ...(b.inFlight ?? [])],
});

/** A message of the summarised range, with its lineage sequence number (null on rows a compaction wrote). */
export interface RangeMessage {
  message: Message;
  seq: number | null;
}

const MAX_PATH_CHARS = 300;
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
        for (const v of values) {
          const path = v.trim();
          // A path field's value is a path only if it looks like one: no longer than any path, on one line, nothing hidden in it.
          if (path && path.length <= MAX_PATH_CHARS && !hasHidden(path))
            out.push({ path, action: /^(?:cwd|workdir|dir|directory)$/i.test(key) ? 'mentioned' : action });
        }
    }
  }
  for (const text of stringsIn(input)) {
    for (const m of text.matchAll(PATCH_LINE)) {
      const kind = m[1];
      const path = (m[2] ?? m[3]).trim();
      if (!hasHidden(path)) out.push({ path, action: kind === 'Add' ? 'created' : kind === 'Delete' ? 'deleted' : 'edited' });
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

/** The facts a ledger still lists (what is folded is counted, not listed), its open in-flight entries included. */
export function ledgerFacts(ledger: Ledger): Facts {
  return {
    requests: ledger.requests.map((r) => r.text),
    paths: ledger.files.map((f) => f.path),
    identifiers: [...ledger.identifiers],
    inFlight: inFlightFacts(ledger.errors, ledger.inFlight),
  };
}

/**
 * What the `facts` gate demands of a head that replaces `range` with a new ledger built on
 * `previous`: the range's facts, the facts the previous ledger still lists, and the in-flight
 * entries still open after the range, found by running the in-flight rules over it from the
 * previous ledger's state (released ones may go; an entry the ledger folded or did not render
 * may not).
 */
export function demandedFacts(
  previous: Ledger,
  range: readonly RangeMessage[],
  dialect: Dialect,
  options: Pick<LedgerOptions, 'requestChars' | 'planTool'>,
): Facts {
  const own = factsOf(
    range.map((r) => r.message),
    dialect,
    options.requestChars,
  );
  const carried = ledgerFacts(previous);
  const tracker = trackRange(previous, range, dialect, options);
  return { ...mergeFacts(own, carried), inFlight: inFlightFacts(tracker.errors, tracker.state) };
}

/** The in-flight rules run over a range from a ledger's state: calls, results and texts in order, with the outcomes the ledger reads. */
function trackRange(
  previous: Ledger,
  range: readonly RangeMessage[],
  dialect: Dialect,
  options: Pick<LedgerOptions, 'requestChars' | 'planTool'>,
  onCall?: OnCall,
) {
  const tracker = new InFlightTracker(previous.errors, previous.inFlight ?? emptyInFlight(), targetOf, options);
  const calls = new Map<string, { command?: string }>();
  range.forEach(({ message, seq }, i) => {
    tracker.message(message, seq, dialect);
    onCall?.message(message, seq, i);
    for (const call of dialect.toolCalls(message)) {
      const files = filesOfCall(call);
      const command = commandOf(call.name, call.input);
      if (call.id) calls.set(call.id, { command });
      onCall?.call(call, files, command);
    }
    for (const result of dialect.toolResults(message)) {
      const call = result.id !== undefined ? calls.get(result.id) : undefined;
      // A placeholder is read as one only in a row a compaction wrote (seq null): a caller's tool output is read as the text it is.
      const outcome = (seq === null ? maskedOutcomeOf(result.text) : undefined) ?? outcomeOf(result.text, result.isError);
      onCall?.result(call?.command, outcome);
    }
  });
  tracker.finish();
  return tracker;
}

/** What a tool call that runs no command is a source of errors for: the tool and the file it acts on. */
function targetOf(call: ToolCall): string {
  return `${call.name} ${filesOfCall(call).find((f) => f.action !== 'mentioned')?.path ?? ''}`.trim();
}

/** What the ledger's own build does at each step of trackRange. */
interface OnCall {
  message(message: Message, seq: number | null, i: number): void;
  call(call: ToolCall, files: Array<{ path: string; action: FileAction }>, command: string | undefined): void;
  result(command: string | undefined, outcome: { summary: string; failed: boolean }): void;
}

const RANK: Record<FileAction, number> = { mentioned: 0, read: 1, edited: 2, created: 2, deleted: 2 };

/**
 * A ledger being built: its entries keyed, in order of last touch (a Map keeps insertion order;
 * an entry touched again moves to the end), so that merging and folding stay linear in the
 * number of entries however many a session holds.
 */
class LedgerDraft {
  readonly requests: LedgerRequest[];
  private readonly requestSeqs: Set<number>;
  readonly files = new Map<string, LedgerFile>();
  readonly commands = new Map<string, LedgerCommand>();
  readonly identifiers: Set<string>;
  readonly folded: FoldCounts;

  constructor(previous: Ledger) {
    const copy = JSON.parse(JSON.stringify(previous)) as Ledger;
    this.requests = copy.requests;
    this.requestSeqs = new Set(copy.requests.map((r) => r.seq));
    for (const f of copy.files) this.files.set(f.path, f);
    for (const c of copy.commands) this.commands.set(c.command, c);
    this.identifiers = new Set(copy.identifiers);
    this.folded = copy.folded;
  }

  hasRequest(seq: number): boolean {
    return this.requestSeqs.has(seq);
  }

  addRequest(request: LedgerRequest) {
    this.requests.push(request);
    this.requestSeqs.add(request.seq);
  }

  addFile(path: string, action: FileAction) {
    const known = this.files.get(path);
    if (!known) {
      this.files.set(path, { path, action, times: 1 });
      return;
    }
    known.times++;
    if (action === 'mentioned') return; // a mention never hides what was done to it
    if (action === 'created' && known.action !== 'mentioned' && known.action !== 'read' && known.action !== 'deleted') known.action = 'edited';
    else if (RANK[action] >= RANK[known.action] || known.action === 'deleted' || action === 'deleted') known.action = action;
    // Re-placed last: the entries stay ordered by last touch, so folding takes the oldest.
    this.files.delete(path);
    this.files.set(path, known);
  }

  upsertCommand(raw: string, outcome: { summary: string; failed: boolean }, isResult = false) {
    const command = dataLine(raw, 300);
    const summary = dataLine(outcome.summary, 300);
    const known = this.commands.get(command);
    if (!known) {
      this.commands.set(command, { command, outcome: summary, failed: outcome.failed, times: 1 });
      return;
    }
    if (!isResult) known.times++;
    known.outcome = summary;
    known.failed = outcome.failed;
    this.commands.delete(command);
    this.commands.set(command, known);
  }

  ledger(errors: LedgerError[], inFlight: InFlight): Ledger {
    return {
      version: 1,
      requests: this.requests,
      files: [...this.files.values()],
      commands: [...this.commands.values()],
      errors,
      identifiers: [...this.identifiers],
      inFlight,
      folded: this.folded,
    };
  }
}

/** A built ledger, and the facts its folds removed in this build (what the `facts` gate lets go missing). */
export interface LedgerBuild {
  ledger: Ledger;
  folded: Facts;
}

/**
 * The ledger after a compaction: the previous one, merged with what the summarised range
 * adds, folded to the budget. `keptRequest` is the position in `range` of a request the new
 * head keeps verbatim (the latest), which the ledger leaves to the head until it is summarised.
 */
export function buildLedger(previous: Ledger, range: readonly RangeMessage[], dialect: Dialect, options: LedgerOptions, keptRequest?: number): LedgerBuild {
  const draft = new LedgerDraft(previous);
  const tracker = trackRange(previous, range, dialect, options, {
    message(message, seq, i) {
      const text = dialect.textOf(message);
      if (dialect.isRealUserRequest(message)) {
        for (const id of identifiersIn(text)) draft.identifiers.add(id);
        for (const p of pathsIn(text)) draft.addFile(p, 'mentioned');
        const known = seq !== null && draft.hasRequest(seq);
        if (i !== keptRequest && !known && text.trim()) {
          const kept = cutText(text, options.requestChars);
          const correction = isCorrection(text);
          const number = seq ?? (draft.requests.at(-1)?.seq ?? 0) + 1;
          if (correction) {
            const corrected = correctedBy(draft.requests, text);
            if (corrected) corrected.supersededBy = number;
          }
          draft.addRequest({ seq: number, text: kept, cut: text.length - kept.length, correction });
        }
      } else if (dialect.roleOf(message) === 'assistant') {
        for (const p of pathsIn(text)) draft.addFile(p, 'mentioned');
      }
    },
    call(_call, files, command) {
      for (const f of files) draft.addFile(f.path, f.action);
      if (command) draft.upsertCommand(command, { summary: 'no result seen', failed: false });
    },
    result(command, outcome) {
      if (command) draft.upsertCommand(command, outcome, true);
    },
  });
  const ledger = draft.ledger(tracker.errors, tracker.state);
  const dropped = tracker.dropped.flatMap((d) => d.facts);
  ledger.folded.inFlight = (ledger.folded.inFlight ?? 0) + tracker.dropped.length;
  const build = foldLedger(ledger, options.budgetTokens);
  build.folded.inFlight = dropped;
  return build;
}

const STOP_WORDS = new Set(['the', 'and', 'for', 'with', 'instead', 'actually', 'use', 'not', 'but', 'this', 'that', 'please', 'keep', 'of', 'to', 'in', 'on']);
const wordsOf = (text: string) => new Set((text.toLowerCase().match(/[\p{L}\p{N}_./:-]{2,}/gu) ?? []).filter((w) => !STOP_WORDS.has(w)));

/**
 * The current request a correction replaces: the one sharing most words with it (numbers,
 * paths, names), the latest on a tie; none when it shares no word with any (then it is a new
 * request that happens to open like a correction, and nothing is superseded).
 */
function correctedBy(requests: LedgerRequest[], correction: string): LedgerRequest | undefined {
  const words = wordsOf(correction);
  let best: LedgerRequest | undefined;
  let bestScore = 0;
  for (const r of requests) {
    if (r.supersededBy !== undefined) continue;
    let shared = 0;
    for (const w of wordsOf(r.text)) if (words.has(w)) shared++;
    if (shared > 0 && shared >= bestScore) {
      best = r;
      bestScore = shared;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// rendering and folding

const requestLine = (r: LedgerRequest) => {
  const status = r.supersededBy !== undefined ? ` (superseded by R${r.supersededBy})` : r.correction ? ' (current; a correction)' : '';
  return `R${r.seq}${status}: ${r.text}${r.cut > 0 ? ` [... ${r.cut} more characters cut]` : ''}`;
};

/**
 * An outcome as the ledger renders it: its kind (`exit 1`, `error`, `ok`, `no result seen`) as
 * the ledger wrote it, and what the tool printed as a quoted string on the same line. Every
 * field that comes from a tool (outcomes, error lines, command lines, paths, identifiers) is
 * rendered on one line (dataLine) after the entry's own `- `, also when a ledger stored before
 * this rule held a break: no tool output can open a heading or a request line, or close the
 * ledger.
 */
const outcomeText = (outcome: string) => {
  const flat = dataLine(String(outcome), 300);
  if (flat === 'ok' || flat === 'no result seen') return flat;
  const m = /^(exit -?\d+|error)(?:: (.*))?$/su.exec(flat);
  return m ? `${m[1]}${m[2] ? `: ${JSON.stringify(m[2])}` : ''}` : JSON.stringify(flat);
};
const fileLine = (f: LedgerFile) => `- ${factLine(String(f.path))}: ${f.action}${f.times > 1 ? ` (${f.times} times)` : ''}`;
const commandLine = (c: LedgerCommand) => `- $ ${dataLine(String(c.command), 300)} -> ${outcomeText(c.outcome)}${c.times > 1 ? ` (run ${c.times} times)` : ''}`;
/** An open error: what failed and how, then each line that says why on its own line under it (one line of data each). */
const errorLine = (e: LedgerError) =>
  `- ${dataLine(String(e.source), 200)}: ${outcomeText(e.line)}${(e.lines ?? []).map((l) => `\n    | ${dataLine(String(l), 200)}`).join('')}`;
const planLines = (inFlight: InFlight) => {
  const next = nextStep(inFlight.plan);
  return (inFlight.plan?.steps ?? []).map((s) => `- [${s.status || 'step'}] ${dataLine(String(s.text), 300)}${s === next ? '  <- next' : ''}`);
};
const backgroundLine = (b: InFlight['background'][number]) =>
  `- ${dataLine(String(b.id), 80)} (${dataLine(String(b.tool), 60)}): ${dataLine(String(b.task), 240)}`;
const queuedLine = (q: InFlight['queued'][number]) => `- R${q.seq}: ${q.text}`;
const instructionLine = (i: InFlight['instructions'][number]) =>
  `- (${dataLine(String(i.source), 300)}) ${/^R\d+$/.test(i.source) ? i.text : dataLine(String(i.text), 1500)}`;

/** The ledger as the agent reads it, inside the summary message. */
export function renderLedger(ledger: Ledger): string {
  const sections = [LEDGER_HEADING];
  if (ledger.requests.length > 0) sections.push(`${LEDGER_SECTIONS.requests}\n${ledger.requests.map(requestLine).join('\n')}`);
  if (ledger.files.length > 0) sections.push(`${LEDGER_SECTIONS.files}\n${ledger.files.map(fileLine).join('\n')}`);
  if (ledger.commands.length > 0) sections.push(`${LEDGER_SECTIONS.commands}\n${ledger.commands.map(commandLine).join('\n')}`);
  const open = ledger.errors.filter((e) => !e.resolved);
  if (open.length > 0) sections.push(`${LEDGER_SECTIONS.errors}\n${open.map(errorLine).join('\n')}`);
  const inFlight = ledger.inFlight ?? emptyInFlight();
  if (inFlight.plan && inFlight.plan.steps.length > 0)
    sections.push(`${LEDGER_SECTIONS.plan} (${dataLine(String(inFlight.plan.tool), 60)}):\n${planLines(inFlight).join('\n')}`);
  if (inFlight.background.length > 0) sections.push(`${LEDGER_SECTIONS.background}\n${inFlight.background.map(backgroundLine).join('\n')}`);
  if (inFlight.queued.length > 0) sections.push(`${LEDGER_SECTIONS.queued}\n${inFlight.queued.map(queuedLine).join('\n')}`);
  if (inFlight.instructions.length > 0) sections.push(`${LEDGER_SECTIONS.instructions}\n${inFlight.instructions.map(instructionLine).join('\n')}`);
  if (ledger.identifiers.length > 0) sections.push(`${LEDGER_SECTIONS.identifiers} ${ledger.identifiers.map((id) => factLine(String(id))).join(', ')}`);
  const f = ledger.folded;
  const folded = Object.entries(f).filter(([, n]) => n > 0);
  if (folded.length > 0)
    sections.push(`${LEDGER_SECTIONS.folded} ${folded.map(([k, n]) => `${n} ${k === 'inFlight' ? 'in-flight entries over their bound' : k}`).join(', ')}`);
  // A closing line: a summary message is trimmed, which must never cut a request's own trailing white space.
  sections.push(LEDGER_END);
  return sections.join('\n\n');
}

/**
 * Folds entries into counts until the rendering fits the budget, in one pass over the entries.
 * What folds first, oldest first within each step: resolved errors (never rendered, folded at
 * once), commands that succeeded, files only read or mentioned, superseded requests,
 * identifiers, other files, failed commands, and last the current requests. Open errors and
 * the other in-flight entries never fold here (their own bound is in-flight.ts MAX_OPEN).
 */
function foldLedger(ledger: Ledger, budgetTokens: number): LedgerBuild {
  const folded: Facts = { requests: [], paths: [], identifiers: [], inFlight: [] };
  const resolved = ledger.errors.filter((e) => e.resolved).length;
  ledger.errors = ledger.errors.filter((e) => !e.resolved);
  ledger.folded.errors += resolved;
  let tokens = estimateTextTokens(renderLedger(ledger));
  if (tokens <= budgetTokens) return { ledger, folded };
  const line = (s: string) => estimateTextTokens(s) + 1;
  const dropped = new Set<unknown>();
  type Victim = { item: unknown; kind: keyof FoldCounts; tokens: number; fact?: () => void };
  const steps: Victim[][] = [
    ledger.commands.filter((c) => !c.failed).map((c) => ({ item: c, kind: 'commands', tokens: line(commandLine(c)) })),
    ledger.files
      .filter((f) => f.action === 'read' || f.action === 'mentioned')
      .map((f) => ({ item: f, kind: 'files', tokens: line(fileLine(f)), fact: () => folded.paths.push(f.path) })),
    ledger.requests
      .filter((r) => r.supersededBy !== undefined)
      .map((r) => ({ item: r, kind: 'requests', tokens: line(requestLine(r)), fact: () => folded.requests.push(r.text) })),
    ledger.identifiers.map((id) => ({ item: `id:${id}`, kind: 'identifiers', tokens: line(`${id}, `), fact: () => folded.identifiers.push(id) })),
    ledger.files
      .filter((f) => f.action !== 'read' && f.action !== 'mentioned')
      .map((f) => ({ item: f, kind: 'files', tokens: line(fileLine(f)), fact: () => folded.paths.push(f.path) })),
    ledger.commands.filter((c) => c.failed).map((c) => ({ item: c, kind: 'commands', tokens: line(commandLine(c)) })),
    ledger.requests
      .filter((r) => r.supersededBy === undefined)
      .map((r) => ({ item: r, kind: 'requests', tokens: line(requestLine(r)), fact: () => folded.requests.push(r.text) })),
  ];
  const keep = () => {
    ledger.requests = ledger.requests.filter((r) => !dropped.has(r));
    ledger.files = ledger.files.filter((f) => !dropped.has(f));
    ledger.commands = ledger.commands.filter((c) => !dropped.has(c));
    ledger.errors = ledger.errors.filter((e) => !dropped.has(e));
    ledger.identifiers = ledger.identifiers.filter((id) => !dropped.has(`id:${id}`));
  };
  for (const step of steps) {
    for (const victim of step) {
      if (tokens <= budgetTokens) break;
      dropped.add(victim.item);
      tokens -= victim.tokens;
      ledger.folded[victim.kind]++;
      victim.fact?.();
    }
    // Line estimates undercount headings: check the rendering itself before stopping.
    keep();
    tokens = estimateTextTokens(renderLedger(ledger));
    if (tokens <= budgetTokens) break;
  }
  return { ledger, folded };
}

/** The prose of a summary this service wrote: its text without the ledger section. */
export function proseOf(summaryText: string): string {
  const at = summaryText.indexOf(`\n${LEDGER_HEADING}`);
  return (at >= 0 ? summaryText.slice(0, at) : summaryText.startsWith(LEDGER_HEADING) ? '' : summaryText).trim();
}

/**
 * The summary text a compaction commits: the summariser's prose, then the ledger. What of a
 * summary's structure the prose holds (the marker, a ledger heading, the closing line) is
 * replaced by a notice, so that only the ledger reads as the ledger.
 */
export function summaryWithLedger(prose: string, ledger: Ledger): string {
  return `${withoutReservedText(prose).trim()}\n\n${renderLedger(ledger)}`;
}

/**
 * The ledger's token bound for a compaction: its share of the context window (when known), at
 * most `maxTokens`, and at most the previous ledger (already in the head) plus
 * LEDGER_SHARE_OF_MIDDLE of the tokens it summarises, so that a ledger never grows a head by
 * more than a share of the messages it replaces (a transcript of nothing but requests folds the
 * oldest into counts instead).
 */
export function ledgerBudget(
  contextWindow: number | null,
  bound: { percent: number; maxTokens: number },
  previousTokens: number,
  middleTokens: number,
): number {
  const share = contextWindow === null ? bound.maxTokens : Math.min(bound.maxTokens, Math.floor((contextWindow * bound.percent) / 100));
  return Math.min(share, previousTokens + Math.floor(middleTokens * LEDGER_SHARE_OF_MIDDLE));
}
const LEDGER_SHARE_OF_MIDDLE = 0.5;
