/**
 * In-flight work: what an agent needs to continue and must never lose to a compaction while it
 * is open. Five kinds, found in any dialect through the dialect's own accessors (`toolCalls`,
 * `toolResults`, `textOf`, `roleOf`, `isRealUserRequest`), by one set of rules:
 *  - open errors: a failing command or tool, its exit status and the lines that say why (error
 *    codes, the failing test, the exception); released when a later run of the same command (or
 *    the same tool on the same target) succeeds, or when the agent's own text says it is
 *    resolved and names it;
 *  - the plan: the latest to-do or plan state an agent keeps through a tool (Claude Code's
 *    TodoWrite, Codex's `update_plan`, or any tool the `planTool` pattern names), verbatim;
 *    released when every step is completed;
 *  - background work: a subagent or job whose call's result says it is running (a Task or
 *    spawn call, a background shell and its id), with what it was asked to do; released when a
 *    later result that names it reports it finished (or killed);
 *  - user turns not yet answered: every real user request, in order (one that arrives while
 *    an earlier one is unanswered is queued behind it), until the agent ends a turn with an
 *    answer (an assistant message with text and no tool call after it before the next user
 *    turn), which answers every turn it has seen;
 *  - standing instructions: a user's constraints for every turn ("never edit X", "always ...",
 *    "from now on ..."), verbatim, and the project instruction files the agent read
 *    (CLAUDE.md, AGENTS.md, GEMINI.md), their text as read.
 * The ledger (./ledger.ts) carries these entries from one generation to the next as stored JSON,
 * never re-derived from a summary's prose; they are folded last and never while open (only a
 * hard bound per kind, MAX_OPEN, folds the oldest beyond it, counted). The `facts` gate demands
 * the exact strings `inFlightFacts` lists. Pure.
 */
import type { Dialect, Message, ToolCall } from './dialects/types';
import { commandOf, dataLine, maskedOutcomeOf, outcomeOf, parsedInput, stringsIn } from './facts';
import { isJsonObject, type JsonValue } from './json';
import { cutText } from './text';

export interface LedgerError {
  /** What failed: a command line, or a tool and its target. */
  source: string;
  /** The outcome: `exit 1: <first error line>`, `error: ...`. */
  line: string;
  /** The lines of the output that say why (error codes, the failing test, the exception), each one line of data. */
  lines?: string[];
  resolved: boolean;
}

export interface PlanStep {
  /** As the tool sent it (`pending`, `in_progress`, `completed`), or '' when the plan has none. */
  status: string;
  text: string;
}

export interface PlanState {
  /** The tool that set it (`TodoWrite`, `update_plan`). */
  tool: string;
  steps: PlanStep[];
}

interface BackgroundWork {
  /** The id the result gave it (`bash_2`, an agent id), or the call's id. */
  id: string;
  tool: string;
  /** What it was asked to do: its description, prompt or command. */
  task: string;
}

interface QueuedTurn {
  /** The request's lineage sequence number (`R12`). */
  seq: number;
  /** Verbatim, cut to the request bound. */
  text: string;
}

export interface Instruction {
  /** Where it came from: `R3` (a user request) or the instruction file's path. */
  source: string;
  text: string;
}

export interface InFlight {
  plan?: PlanState;
  background: BackgroundWork[];
  queued: QueuedTurn[];
  instructions: Instruction[];
  /** The highest request sequence number seen: a request the head kept verbatim and a later range holds again is not queued twice. */
  seenSeq: number;
  /** Whether the last assistant text seen may be the end of a turn (no tool call after it yet). */
  answering: boolean;
}

export interface InFlightOptions {
  requestChars: number;
  /** The tools whose calls set the plan; default PLAN_TOOLS. */
  planTool?: RegExp;
}

export const emptyInFlight = (): InFlight => ({ background: [], queued: [], instructions: [], seenSeq: 0, answering: false });

/** The most open entries of one kind a ledger lists; beyond it the oldest fold (counted). A bound, so that the head stays under its threshold. */
const MAX_OPEN = { errors: 20, background: 20, queued: 12, instructions: 20, planSteps: 40 } as const;
/** Bounds in UTF-16 units of a tool-given field. */
const ERROR_LINE_CHARS = 200;
const ERROR_LINES = 4;
const TASK_CHARS = 240;
const PLAN_STEP_CHARS = 300;
const INSTRUCTION_FILE_CHARS = 1500;

const PLAN_TOOLS = /^(?:TodoWrite|todo_?write|write_?todos|update_?plan|update_?todos?|set_?plan|plan)$/i;
const SUBAGENT_TOOLS = /^(?:Task|Agent|spawn_?agent|spawn|launch_?agent|start_?agent|sub_?agent|delegate|run_?agent)$/i;
const INSTRUCTION_FILE = /(?:^|\/)(?:CLAUDE|AGENTS|AGENT|GEMINI)\.md$|(?:^|\/)\.cursorrules$|(?:^|\/)copilot-instructions\.md$/i;
const RUNNING =
  /running in (?:the )?background|<status>running<\/status>|"status"\s*:\s*"running"|\b(?:launched|spawned|started in (?:the )?background|is (?:still )?running|still running)\b/i;
const FINISHED =
  /<status>(?:completed|failed|killed|exited|done)<\/status>|"status"\s*:\s*"(?:completed|failed|killed|exited|done)"|\b(?:finished|completed|killed|terminated|exited|has ended|stopped)\b/i;
const BACKGROUND_ID = /\b(?:with id|ID|agentId|agent_id|task_id|taskId|shell_id|shellId|bash_id|job_id|jobId|pid)\b["']?\s*[:=]?\s*["']?([\w.-]{2,64})/;
/** Error codes: `TS2345`, `E0308`, `ERR_MODULE_NOT_FOUND`, `ECONNREFUSED`, `SQLSTATE 23505`. */
const ERROR_CODE = /\b(?:[A-Z]{1,5}\d{3,6}|E[A-Z]{4,}|ERR_[A-Z0-9_]+|[A-Z][A-Z0-9]+_[A-Z0-9_]{3,})\b/;
const ERROR_LINE = /(?:error|exception|traceback|failed|failure|fatal|cannot|not found|denied|panic|assert)/i;
const FAILING_TEST = /^(?:FAIL(?:ED)?|not ok|✗|×|●|✕)\b|^\s*(?:FAIL(?:ED)?|not ok)\s/;
const RESOLVED_TEXT = /\b(?:fixed|resolved|passes now|passing now|now pass(?:es|ing)?|works now|now works|no longer fails?|green now)\b/i;
const NOT_RESOLVED = /\b(?:not|isn't|wasn't|still|yet to be|un)\s*(?:yet\s+)?(?:fixed|resolved)\b/i;
const STANDING = /^(?:please,?\s+)?(?:never|always|do not|don't|from now on|must not|you must|make sure (?:to|you)|under no circumstances)\b/i;

/** The lines of a failing output that say why: error codes, the failing test, the exception; at most ERROR_LINES, each one line of data. */
export function errorLinesOf(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (ERROR_CODE.test(line) || FAILING_TEST.test(line) || ERROR_LINE.test(line)) {
      const flat = dataLine(line, ERROR_LINE_CHARS);
      if (!out.includes(flat)) out.push(flat);
      if (out.length >= ERROR_LINES) break;
    }
  }
  return out;
}

/** The codes an error's lines name (what the agent's text names when it says it fixed it). */
const codesOf = (lines: readonly string[]) => lines.flatMap((l) => l.match(new RegExp(ERROR_CODE.source, 'g')) ?? []);

/** Whether an assistant text says this error is resolved: a resolution word, no negation, and it names the command, a code or the failing test's line. */
export function saysResolved(text: string, error: LedgerError): boolean {
  if (!RESOLVED_TEXT.test(text) || NOT_RESOLVED.test(text)) return false;
  const names = [error.source, ...codesOf(error.lines ?? [])];
  return names.some((n) => n.length >= 3 && text.includes(n));
}

/** The standing instructions in a user request: each sentence that sets one, verbatim. */
export function standingInstructionsIn(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0 && STANDING.test(s));
}

const firstString = (input: JsonValue, keys: readonly string[]): string | undefined => {
  if (!isJsonObject(input)) return undefined;
  for (const k of keys) if (typeof input[k] === 'string' && (input[k] as string).trim()) return input[k] as string;
  return undefined;
};

/** A plan tool's input as steps: TodoWrite's `todos` ({content, status}), update_plan's `plan` ({step, status}), or the input's strings verbatim. */
export function planStepsOf(input: JsonValue): PlanStep[] {
  const value = parsedInput(input);
  const list = isJsonObject(value) ? (value.todos ?? value.plan ?? value.steps ?? value.items) : Array.isArray(value) ? value : undefined;
  if (Array.isArray(list)) {
    return list.flatMap((item) => {
      if (typeof item === 'string') return [{ status: '', text: dataLine(item, PLAN_STEP_CHARS) }];
      if (!isJsonObject(item)) return [];
      const text = firstString(item, ['content', 'step', 'text', 'title', 'description', 'task']);
      return text ? [{ status: typeof item.status === 'string' ? dataLine(item.status, 40) : '', text: dataLine(text, PLAN_STEP_CHARS) }] : [];
    });
  }
  return stringsIn(value)
    .filter((s) => s.trim())
    .map((s) => ({ status: '', text: dataLine(s, PLAN_STEP_CHARS) }));
}

const planDone = (plan: PlanState) => plan.steps.length > 0 && plan.steps.every((s) => /^(?:completed|done|cancelled|canceled)$/i.test(s.status));

/** The plan's next step: the first in progress, else the first pending (not completed). */
export function nextStep(plan: PlanState | undefined): PlanStep | undefined {
  if (!plan) return undefined;
  return plan.steps.find((s) => /^in[_ -]?progress$/i.test(s.status)) ?? plan.steps.find((s) => !/^(?:completed|done|cancelled|canceled)$/i.test(s.status));
}

/** What counts in each kind, for a caller's fold counter. */
export type InFlightKind = 'errors' | 'background' | 'queued' | 'instructions' | 'plan';

/** How a tool call is known to the tracker: its command, the target it is a source of errors for, and what background work it may start. */
interface CallSeen {
  name: string;
  command?: string;
  target: string;
  input: JsonValue;
  background?: { tool: string; task: string };
  instructionFile?: string;
}

/**
 * Follows in-flight work through a range of messages, from the state a previous ledger stored.
 * The ledger's build and the `facts` gate's demand run the same tracker over the same range, so
 * what the gate demands is exactly what the rules keep open; the ledger's folding and rendering
 * are what the gate checks.
 */
export class InFlightTracker {
  readonly errors: LedgerError[];
  readonly state: InFlight;
  private readonly openErrors = new Map<string, LedgerError>();
  private readonly calls = new Map<string, CallSeen>();
  /** Entries dropped beyond MAX_OPEN, by kind (the exact facts they were). */
  readonly dropped: Array<{ kind: InFlightKind; facts: string[] }> = [];

  constructor(
    previousErrors: readonly LedgerError[],
    previous: InFlight,
    private readonly targetOf: (call: ToolCall) => string,
    private readonly options: InFlightOptions,
  ) {
    const copy = JSON.parse(JSON.stringify({ errors: previousErrors, previous })) as { errors: LedgerError[]; previous: InFlight };
    this.errors = copy.errors;
    this.state = copy.previous;
    for (const e of this.errors) if (!e.resolved) this.openErrors.set(e.source, e);
  }

  /** One message of the range, in order. `seq` is its lineage sequence number (null on rows a compaction wrote). */
  message(message: Message, seq: number | null, dialect: Dialect) {
    const text = dialect.textOf(message);
    if (dialect.isRealUserRequest(message)) {
      this.endOfTurn();
      const number = seq ?? this.state.seenSeq + 1;
      if (number > this.state.seenSeq && text.trim()) {
        this.state.seenSeq = number;
        this.state.queued.push({ seq: number, text: cutText(text, this.options.requestChars) });
        for (const s of standingInstructionsIn(text)) this.addInstruction({ source: `R${number}`, text: s });
        this.bound('queued', MAX_OPEN.queued, this.state.queued, (q) => [q.text]);
      }
    } else if (dialect.roleOf(message) === 'assistant') {
      const calls = dialect.toolCalls(message);
      if (text.trim()) {
        for (const e of [...this.openErrors.values()]) if (saysResolved(text, e)) this.resolve(e.source);
        this.state.answering = calls.length === 0;
      }
      if (calls.length > 0) this.state.answering = false;
    }
    for (const call of dialect.toolCalls(message)) this.call(call);
    for (const result of dialect.toolResults(message)) {
      const seen = result.id !== undefined ? this.calls.get(result.id) : undefined;
      this.result(seen, result.text, result.isError, result.id, seq);
      // A placeholder is read as one only in a row a compaction wrote (seq null): a caller's tool output is read as the text it is.
      const outcome = (seq === null ? maskedOutcomeOf(result.text) : undefined) ?? outcomeOf(result.text, result.isError);
      this.outcome(dataLine(seen?.target ?? result.name ?? 'a tool', 200), outcome.failed, dataLine(outcome.summary, 200), result.text);
    }
  }

  /** The end of the range: a last assistant text with no tool call after it answers a turn. */
  finish() {
    this.endOfTurn();
  }

  private endOfTurn() {
    if (this.state.answering) this.state.queued = [];
    this.state.answering = false;
  }

  private call(call: ToolCall) {
    const input = parsedInput(call.input);
    const planTool = this.options.planTool ?? PLAN_TOOLS;
    if (planTool.test(call.name)) {
      const steps = planStepsOf(input);
      if (steps.length > 0) {
        const plan = { tool: dataLine(call.name, 60), steps: steps.slice(0, MAX_OPEN.planSteps) };
        if (steps.length > MAX_OPEN.planSteps) this.dropped.push({ kind: 'plan', facts: steps.slice(MAX_OPEN.planSteps).map((s) => s.text) });
        this.state.plan = planDone(plan) ? undefined : plan;
      }
    }
    const command = commandOf(call.name, call.input);
    const seen: CallSeen = { name: call.name, command, target: command ?? this.targetOf(call), input };
    const runInBackground = isJsonObject(input) && (input.run_in_background === true || input.background === true || input.detach === true);
    if (runInBackground || SUBAGENT_TOOLS.test(call.name)) {
      const task = firstString(input, ['description', 'prompt', 'task', 'command', 'cmd', 'message', 'goal']) ?? seen.command ?? call.name;
      seen.background = { tool: dataLine(call.name, 60), task: dataLine(task, TASK_CHARS) };
    }
    const file = firstString(input, ['file_path', 'path', 'filePath', 'file', 'target_file', 'absolute_path']);
    if (file && INSTRUCTION_FILE.test(file.trim()) && seen.command === undefined) seen.instructionFile = dataLine(file.trim(), 300);
    if (call.id) this.calls.set(call.id, seen);
  }

  private result(seen: CallSeen | undefined, text: string, isError: boolean, id: string | undefined, seq: number | null) {
    // Background work a result reports on: finished (released) or still running.
    this.reportOnBackground(seen, text);
    const opening = text.slice(0, 400);
    if (seen?.background && RUNNING.test(opening) && !FINISHED.test(opening.replace(RUNNING, ''))) {
      const bgId = BACKGROUND_ID.exec(text)?.[1] ?? id ?? seen.target;
      const entry = { id: dataLine(bgId, 80), ...seen.background };
      this.state.background = this.state.background.filter((b) => b.id !== entry.id);
      this.state.background.push(entry);
      this.bound('background', MAX_OPEN.background, this.state.background, (b) => [b.id, b.task]);
    }
    if (seen?.instructionFile && !isError && seq !== null) {
      this.addInstruction({ source: seen.instructionFile, text: dataLine(text, INSTRUCTION_FILE_CHARS) });
    }
  }

  private reportOnBackground(seen: CallSeen | undefined, text: string) {
    if (this.state.background.length === 0) return;
    const finished = /<status>(?:completed|failed|killed|exited|done)<\/status>/i.test(text) || (FINISHED.test(text) && !RUNNING.test(text));
    if (!finished) return;
    const named = (b: BackgroundWork) => idIn(b.id, text) || (seen !== undefined && stringsIn(seen.input).some((s) => s === b.id));
    this.state.background = this.state.background.filter((b) => !named(b));
  }

  /** A command's (or a tool's on a target) outcome: a failure opens (or replaces) its error, a success resolves it. */
  private outcome(source: string, failed: boolean, line: string, output: string) {
    if (failed) {
      const previous = this.openErrors.get(source);
      if (previous) previous.resolved = true; // superseded by the latest run's failure
      const error: LedgerError = { source, line, lines: errorLinesOf(output), resolved: false };
      this.errors.push(error);
      this.openErrors.set(source, error);
      const open = this.errors.filter((e) => !e.resolved);
      if (open.length > MAX_OPEN.errors) {
        const oldest = open[0];
        oldest.resolved = true;
        this.openErrors.delete(oldest.source);
        this.dropped.push({ kind: 'errors', facts: errorFacts(oldest) });
      }
    } else this.resolve(source);
  }

  private resolve(source: string) {
    const e = this.openErrors.get(source);
    if (e) e.resolved = true;
    this.openErrors.delete(source);
  }

  private addInstruction(instruction: Instruction) {
    // A file read again replaces its text; a sentence said again is kept once.
    this.state.instructions = this.state.instructions.filter(
      (i) => !(i.source === instruction.source && (i.text === instruction.text || !/^R\d+$/.test(i.source))),
    );
    if (!this.state.instructions.some((i) => i.text === instruction.text)) this.state.instructions.push(instruction);
    this.bound('instructions', MAX_OPEN.instructions, this.state.instructions, (i) => [i.text]);
  }

  private bound<T>(kind: InFlightKind, max: number, list: T[], facts: (item: T) => string[]) {
    while (list.length > max) this.dropped.push({ kind, facts: facts(list.shift()!) });
  }
}

/** Whether a text names an id as a whole word (`agent_1` is not named by `agent_11`). */
const idIn = (id: string, text: string) => new RegExp(`(?<![\\w.-])${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`).test(text);

/** The exact strings of an open error the head must hold: what failed and the lines that say why. */
const errorFacts = (e: LedgerError): string[] => [dataLine(String(e.source), 200), ...(e.lines ?? [])];

/** The exact strings of every open in-flight entry: what the `facts` gate demands of a head. */
export function inFlightFacts(errors: readonly LedgerError[], inFlight: InFlight): string[] {
  return [
    ...errors.filter((e) => !e.resolved).flatMap(errorFacts),
    ...(inFlight.plan?.steps.map((s) => s.text) ?? []),
    ...inFlight.background.flatMap((b) => [b.id, b.task]),
    ...inFlight.queued.map((q) => q.text),
    ...inFlight.instructions.map((i) => i.text),
  ].filter((f) => f.length > 0);
}

/** An in-flight state read back from an audit row: its shape checked, anything unknown ignored. */
export function inFlightFrom(value: unknown): InFlight {
  const fresh = emptyInFlight();
  if (!isJsonObject(value as JsonValue)) return fresh;
  const v = value as Record<string, unknown>;
  const list = <T>(key: string): T[] => (Array.isArray(v[key]) ? (v[key] as T[]).filter((x) => isJsonObject(x as JsonValue)) : []);
  const plan = isJsonObject(v.plan as JsonValue) && Array.isArray((v.plan as Record<string, unknown>).steps) ? (v.plan as unknown as PlanState) : undefined;
  return {
    ...(plan ? { plan } : {}),
    background: list<BackgroundWork>('background'),
    queued: list<QueuedTurn>('queued'),
    instructions: list<Instruction>('instructions'),
    seenSeq: typeof v.seenSeq === 'number' ? v.seenSeq : 0,
    answering: v.answering === true,
  };
}
