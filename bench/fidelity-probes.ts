/**
 * The fidelity benchmark's probes (issue 39 §3): questions an agent must answer to continue,
 * whose answers are exact strings of the transcript appended so far, answered by looking them
 * up in the head. For a generated session the answers are the generator's own list of planted
 * facts open at that point (test/support/planted.ts); for a corpus transcript they come from
 * simple rules over its tool calls and messages, written here apart from the ledger's own
 * (src/compaction/in-flight.ts), so a probe is not the code under test grading itself:
 *  - edited last: the path of the last edit or write call (a file path field, or a patch's
 *    `*** Update File:` line);
 *  - open error: the last failing command (by its exit status or error mark) that no later run
 *    of the same command passed, as one line (the ledger's data lines flatten a multi-line one),
 *    or verbatim (while the kept tail still holds it);
 *  - plan next step: the latest TodoWrite / update_plan call's step in progress, else its first
 *    pending one (none when every step is completed);
 *  - running subagent: a background id a result reported running and no later text reported
 *    finished or killed;
 *  - queued turn: (generated sessions) a user turn not yet answered; user asked last: the latest
 *    user request (cut to the ledger's request bound); user corrected: the latest correction;
 *  - instruction: (generated sessions) a standing instruction and an instruction file's rule.
 */
import type { Dialect, Message } from '../src/compaction/dialects';
import { commandOf, dataLine, isCorrection, outcomeOf, parsedInput, stringsIn } from '../src/compaction/facts';
import { isJsonObject } from '../src/compaction/json';
import { cutText } from '../src/compaction/text';
import { isOpen, type PlantedFacts } from '../test/support/planted';

export const PROBE_KINDS = [
  'edited last',
  'open error',
  'plan next step',
  'running subagent',
  'queued turn',
  'instruction',
  'user asked last',
  'user corrected',
] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

export interface Probe {
  kind: ProbeKind;
  /** The exact string the head must hold. */
  answer: string;
  /** The same answer as the transcript holds it (a multi-line command, still verbatim in the kept tail, as text or inside a tool input's JSON), also accepted. */
  verbatim?: string;
}

/** The question each probe asks, for the optional judge mode (a real model answers it from the head). */
export const QUESTIONS: Record<ProbeKind, string> = {
  'edited last': 'Which file did the agent edit last? Answer with its path only.',
  'open error': 'Which command or tool is failing and not yet fixed, and why? Quote the command and the error line.',
  'plan next step': "What is the next step of the agent's plan? Quote it.",
  'running subagent': 'Which subagents or background jobs are still running? Give their ids and tasks.',
  'queued turn': 'Which user messages has the agent not answered yet? Quote them.',
  instruction: 'Which standing instructions must the agent follow on every turn? Quote them.',
  'user asked last': 'What did the user ask last? Quote it verbatim.',
  'user corrected': 'What did the user correct most recently? Quote the correction verbatim.',
};

/** Whether a head's text answers a probe. */
export const answers = (text: string, probe: Probe) =>
  text.includes(probe.answer) ||
  (probe.verbatim !== undefined && (text.includes(probe.verbatim) || text.includes(JSON.stringify(probe.verbatim).slice(1, -1))));

/** The probes of a session once its first `appended` messages are appended. */
export function probesOf(messages: readonly Message[], appended: number, dialect: Dialect, requestChars: number, planted?: PlantedFacts): Probe[] {
  const seen = messages.slice(0, appended);
  const out: Probe[] = [];
  const requests = seen.filter((m) => dialect.isRealUserRequest(m)).map((m) => dialect.textOf(m));
  const last = requests.at(-1);
  if (last?.trim()) out.push({ kind: 'user asked last', answer: cutText(last, requestChars) });
  const correction = requests.filter(isCorrection).at(-1);
  if (correction) out.push({ kind: 'user corrected', answer: cutText(correction, requestChars) });
  if (planted) {
    for (const f of planted.inFlight.filter((x) => isOpen(x, appended))) out.push({ kind: f.kind, answer: f.fact });
    return out;
  }
  return [...out, ...transcriptProbes(seen, dialect)];
}

const PLAN_CALL = /^(?:TodoWrite|update_plan)$/;
const EDIT_CALL = /edit|write|replace|patch|create|apply/i;
const DONE = /^(?:completed|done|cancelled)$/i;

/** The corpus probes: the transcript's own answers by the rules above. */
function transcriptProbes(seen: readonly Message[], dialect: Dialect): Probe[] {
  let edited: string | undefined;
  let plan: string | undefined;
  const commands = new Map<string, string>();
  /** The failing command (one line) of each command still failing. */
  const failing = new Map<string, string>();
  const background = new Map<string, string>();
  let order = 0;
  const failedAt = new Map<string, number>();
  for (const m of seen) {
    for (const call of dialect.toolCalls(m)) {
      const input = parsedInput(call.input);
      const command = commandOf(call.name, call.input);
      if (call.id && command) commands.set(call.id, command);
      if (EDIT_CALL.test(call.name) && isJsonObject(input)) {
        const path = [input.file_path, input.path, input.filePath].find((p) => typeof p === 'string');
        if (typeof path === 'string') edited = path;
      }
      for (const s of stringsIn(input)) for (const match of s.matchAll(/^\*\*\* (?:Update|Add) File: (.+)$/gm)) edited = match[1].trim();
      if (PLAN_CALL.test(call.name) && isJsonObject(input)) {
        const list = input.todos ?? input.plan;
        if (Array.isArray(list)) {
          const steps = list.filter(isJsonObject).map((s) => ({ text: String(s.content ?? s.step ?? ''), status: String(s.status ?? '') }));
          const next = steps.find((s) => /in_progress/i.test(s.status)) ?? steps.find((s) => !DONE.test(s.status));
          plan = next ? dataLine(next.text, 300) : undefined;
        }
      }
    }
    for (const result of dialect.toolResults(m)) {
      for (const [id] of background) if (result.text.includes(id) && /killed|completed|finished|exited/i.test(result.text)) background.delete(id);
      const started = /running in background with ID: (\S+)/.exec(result.text);
      if (started) background.set(started[1], started[1]);
      const command = result.id !== undefined ? commands.get(result.id) : undefined;
      if (!command) continue;
      if (outcomeOf(result.text, result.isError).failed) {
        failing.set(command, dataLine(command, 200));
        failedAt.set(command, order++);
      } else failing.delete(command);
    }
  }
  const out: Probe[] = [];
  if (edited) out.push({ kind: 'edited last', answer: edited });
  const lastFailing = [...failing.keys()].sort((a, b) => failedAt.get(b)! - failedAt.get(a)!)[0];
  if (lastFailing) out.push({ kind: 'open error', answer: failing.get(lastFailing)!, verbatim: lastFailing });
  if (plan) out.push({ kind: 'plan next step', answer: plan });
  for (const id of background.keys()) out.push({ kind: 'running subagent', answer: id });
  return out;
}
