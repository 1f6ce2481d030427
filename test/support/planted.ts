/**
 * Agent sessions with planted facts, per dialect, from a seed: what the ledger must keep and
 * the fidelity benchmark measures. Each turn the user names a file path and an identifier
 * (a ticket, an issue number, a URL, a commit); every fourth turn sets a constraint that a
 * later turn corrects ("Actually, ..."). The agent reads the file and a second one the user
 * never named, runs a command that fails and then passes, and its answer mentions a third
 * path of its own; its tool outputs are long JSON or log text (what makes masking pay). Two
 * of each turn's three paths appear in no user request, so keeping the requests alone does
 * not keep them.
 * With `inFlight`, the session also plants in-flight work (in-flight.ts), each fact with where it
 * opens and where it is released (`InFlightFact`): a standing instruction in the first request
 * and an instruction file (AGENTS.md) the agent reads, a plan it updates every turn (TodoWrite,
 * update_plan), a file it edits every turn, a lint run that fails with an error code every
 * third turn (half of them fixed by a later run, half left open), a subagent or background job
 * every fifth turn (half reported finished later, half still running), and every seventh turn
 * a user turn queued behind an unanswered one.
 * The facts are returned beside the messages, so a test counts them with its own list, never
 * with what the code under test extracted.
 */
import type { DialectName, Message } from '../../src/compaction/dialects';
import type { JsonObject } from '../../src/compaction/json';
import { toAgentsItems } from './agents-items';
import { seededRandom } from './strict-provider';

export interface PlantedFacts {
  /** Every user request, verbatim. */
  requests: string[];
  paths: string[];
  identifiers: string[];
  /** A constraint and the later request that corrects it. */
  corrections: Array<{ original: string; correction: string }>;
  /** In-flight facts (with `inFlight`): exact strings, open from message `openAt` until message `closeAt` (absent: still open at the end). */
  inFlight: InFlightFact[];
}

type InFlightKind = 'edited last' | 'open error' | 'plan next step' | 'running subagent' | 'queued turn' | 'instruction';

export interface InFlightFact {
  kind: InFlightKind;
  /** The exact string a head must hold while the fact is open. */
  fact: string;
  openAt: number;
  closeAt?: number;
}

/** Whether a planted in-flight fact is open once the first `appended` messages are appended. */
export const isOpen = (f: InFlightFact, appended: number) => f.openAt < appended && (f.closeAt === undefined || f.closeAt >= appended);

export interface PlantedSession {
  messages: Message[];
  facts: PlantedFacts;
}

interface Step {
  kind: 'read' | 'shell' | 'edit' | 'plan' | 'spawn' | 'check';
  id: string;
  args: Record<string, unknown>;
  output: string;
  isError: boolean;
}

function toolName(dialect: DialectName, kind: Step['kind']): string {
  const claude = dialect === 'anthropic';
  if (kind === 'edit') return claude ? 'Edit' : 'edit_file';
  if (kind === 'plan') return claude ? 'TodoWrite' : 'update_plan';
  if (kind === 'spawn') return claude ? 'Task' : 'spawn_agent';
  if (kind === 'check') return claude ? 'TaskOutput' : 'check_agent';
  if (claude) return kind === 'read' ? 'Read' : 'Bash';
  if (dialect === 'openai-responses' || dialect === 'openai-agents') return kind === 'read' ? 'read_file' : 'shell';
  return kind === 'read' ? 'read_file' : 'run_command';
}

function userMessage(dialect: DialectName, text: string, rand: () => number): Message {
  if (dialect === 'anthropic') return rand() < 0.5 ? { role: 'user', content: text } : { role: 'user', content: [{ type: 'text', text }] };
  if (dialect === 'gemini') return { role: 'user', parts: [{ text }] };
  if (dialect === 'openai-responses' || dialect === 'openai-agents') return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  return { role: 'user', content: text };
}

/** One assistant turn of calls and the results that answer them, in the dialect's shape. */
function toolTurn(dialect: DialectName, steps: Step[], thinking: boolean): Message[] {
  switch (dialect) {
    case 'openai-chat':
      return [
        {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: steps.map((s, index) => ({
            index,
            id: s.id,
            type: 'function',
            function: { name: toolName(dialect, s.kind), arguments: JSON.stringify(s.args) },
          })),
        },
        ...steps.map((s) => ({ role: 'tool', tool_call_id: s.id, content: s.output })),
      ];
    case 'anthropic':
      return [
        {
          role: 'assistant',
          content: [
            ...(thinking ? [{ type: 'thinking', thinking: 'Look at the file, then run the tests.', signature: `EqQB${steps[0].id}sig==` }] : []),
            ...steps.map((s) => ({ type: 'tool_use', id: s.id, name: toolName(dialect, s.kind), input: s.args as JsonObject })),
          ],
        },
        { role: 'user', content: steps.map((s) => ({ type: 'tool_result', tool_use_id: s.id, content: s.output, ...(s.isError ? { is_error: true } : {}) })) },
      ];
    case 'gemini':
      return [
        {
          role: 'model',
          parts: steps.map((s, k) => ({
            functionCall: { name: toolName(dialect, s.kind), args: s.args as JsonObject, id: s.id },
            ...(k === 0 ? { thoughtSignature: `CiQB${s.id}` } : {}),
          })),
        },
        {
          role: 'user',
          parts: steps.map((s) => ({
            functionResponse: { name: toolName(dialect, s.kind), id: s.id, response: (s.isError ? { error: s.output } : { output: s.output }) as JsonObject },
          })),
        },
      ];
    case 'ai-sdk':
      return [
        {
          role: 'assistant',
          content: [
            ...(thinking
              ? [{ type: 'reasoning', text: 'Look at the file, then run the tests.', providerOptions: { anthropic: { signature: `EqQB${steps[0].id}sig==` } } }]
              : []),
            ...steps.map((s) => ({ type: 'tool-call', toolCallId: s.id, toolName: toolName(dialect, s.kind), input: s.args as JsonObject })),
          ],
        },
        {
          role: 'tool',
          content: steps.map((s) => ({
            type: 'tool-result',
            toolCallId: s.id,
            toolName: toolName(dialect, s.kind),
            output: { type: s.isError ? 'error-text' : 'text', value: s.output },
          })),
        },
      ];
    default:
      return [
        { type: 'reasoning', summary: [], encrypted_content: `gAAAA${steps[0].id}opaque` },
        ...steps.map((s) => ({ type: 'function_call', call_id: s.id, name: toolName(dialect, s.kind), arguments: JSON.stringify(s.args) })),
        ...steps.map((s) => ({ type: 'function_call_output', call_id: s.id, output: s.output })),
      ];
  }
}

function assistantText(dialect: DialectName, text: string): Message {
  if (dialect === 'anthropic') return { role: 'assistant', content: [{ type: 'text', text }] };
  if (dialect === 'gemini') return { role: 'model', parts: [{ text }] };
  if (dialect === 'ai-sdk') return { role: 'assistant', content: [{ type: 'text', text }] };
  if (dialect === 'openai-responses' || dialect === 'openai-agents')
    return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
  return { role: 'assistant', content: text, refusal: null, annotations: [] };
}

const FILE_BODY = (path: string, n: number) =>
  JSON.stringify({ path, size: n * 97, lines: Array.from({ length: n }, (_, i) => `  ${i + 1}: export const value${i} = compute(${i}); // 🧮 ünïcode`) });

/**
 * A session of `turns` turns with facts planted in every user request. `thinking: false`
 * leaves Anthropic's thinking blocks out (a stateless strict check refuses every signature it
 * did not issue).
 */
export function plantedSession(
  dialect: DialectName,
  seed: number,
  turns = 16,
  options: {
    outputLines?: number;
    thinking?: boolean;
    /** A further shell call in turn t's tool turn, with the output it printed (test/support/forged.ts's hostile outputs). */
    extraShell?: (turn: number) => { command: string; output: string; isError: boolean } | undefined;
    /** Plant in-flight work too (see above). */
    inFlight?: boolean;
  } = {},
): PlantedSession {
  if (dialect === 'openai-agents') {
    const session = plantedSession('openai-responses', seed, turns, options);
    return { messages: toAgentsItems(session.messages), facts: session.facts };
  }
  const rand = seededRandom(seed);
  const lines = options.outputLines ?? 60;
  const facts: PlantedFacts = { requests: [], paths: [], identifiers: [], corrections: [], inFlight: [] };
  const inFlight = options.inFlight ?? false;
  const claude = dialect === 'anthropic';
  /** Open facts by key, closed when a later message releases them. */
  const open = new Map<string, InFlightFact>();
  const opens = (key: string, kind: InFlightKind, fact: string) => {
    const f: InFlightFact = { kind, fact, openAt: messages.length };
    facts.inFlight.push(f);
    open.set(key, f);
  };
  const closes = (key: string) => {
    const f = open.get(key);
    if (f) f.closeAt = messages.length;
    open.delete(key);
  };
  /** User turns not yet answered: the agent's answer closes them all. */
  let unanswered: string[] = [];
  const answered = () => {
    for (const key of unanswered) closes(key);
    unanswered = [];
  };
  const messages: Message[] = [];
  if (dialect === 'openai-chat' || dialect === 'ai-sdk') messages.push({ role: 'system', content: 'You are a careful coding agent.' });
  if (dialect === 'openai-responses') messages.push({ type: 'message', role: 'developer', content: 'You are a careful coding agent.' });
  let pendingConstraint: { port: number; text: string } | undefined;
  /** The in-flight work of turn t, after its reads and test run: each step its own tool turn, so every fact has a message of its own. */
  const plantInFlight = (t: number) => {
    const thinking = options.thinking ?? true;
    const id = (what: string) => `call_${what}${seed}_${t}`;
    const at = (p: string) => (claude ? { file_path: p } : { path: p });
    let note: string | undefined;
    const separateNote = dialect === 'openai-chat' || dialect === 'openai-responses';
    if (t === 0) {
      const rule = `Run make check-${seed} before every commit; keep migrations reversible.`;
      opens('agents.md', 'instruction', rule);
      messages.push(...toolTurn(dialect, [{ kind: 'read', id: id('i'), args: at('AGENTS.md'), output: `# Agent rules\n${rule}\n`, isError: false }], thinking));
    }
    // The plan: its next step is open until the next plan replaces it.
    const next = `Fix handler_${t} for seed ${seed}`;
    const steps = [
      { text: `Read the notes of turn ${t}`, status: 'completed' },
      { text: next, status: 'in_progress' },
      { text: `Ship turn ${t} of seed ${seed}`, status: 'pending' },
    ];
    const plan = claude
      ? { todos: steps.map((s) => ({ content: s.text, status: s.status, activeForm: s.text })) }
      : { plan: steps.map((s) => ({ step: s.text, status: s.status })) };
    closes('plan');
    opens('plan', 'plan next step', next);
    messages.push(...toolTurn(dialect, [{ kind: 'plan', id: id('p'), args: plan, output: 'Plan updated.', isError: false }], thinking));
    // A lint run that fails with a code every third turn; the one of every sixth is run again and passes three turns later.
    if (t % 3 === 2) {
      const command = `npm run lint -- services/s${seed}/feature${t}`;
      const code = `E9${seed}${t}`;
      opens(`lint${t}`, 'open error', command);
      facts.inFlight.push({ ...open.get(`lint${t}`)!, fact: code });
      const output = `services/s${seed}/feature${t}/handler_${t}.py:12:3 error ${code} shadowed name 'value'\n1 problem\nExit code: 1`;
      messages.push(...toolTurn(dialect, [{ kind: 'shell', id: id('l'), args: { command }, output, isError: claude || dialect === 'ai-sdk' }], thinking));
      note = `The lint run still reports ${code}; I will come back to it.`;
      // Where turns alternate (Gemini) or a thinking turn must open with its thinking (Anthropic, the AI SDK), the note goes into the next model turn instead.
      if (separateNote) messages.push(assistantText(dialect, note));
    }
    // An edit: the file edited last until the next edit.
    const edited = `src/s${seed}/edited_${t}.ts`;
    closes('edit');
    opens('edit', 'edited last', edited);
    const edit = claude ? { file_path: edited, old_string: 'a', new_string: 'b' } : { path: edited, patch: 'replace a with b' };
    const editTurn = toolTurn(dialect, [{ kind: 'edit', id: id('e'), args: edit, output: 'Edited.', isError: false }], thinking);
    if (note && !separateNote) {
      if (dialect === 'gemini') (editTurn[0].parts as JsonObject[]).unshift({ text: note });
      else {
        const blocks = editTurn[0].content as JsonObject[];
        const thought = blocks[0].type === 'thinking' || blocks[0].type === 'reasoning' ? 1 : 0;
        blocks.splice(thought, 0, { type: 'text', text: note });
      }
    }
    messages.push(...editTurn);
    if (t % 6 === 5) {
      const command = `npm run lint -- services/s${seed}/feature${t - 3}`;
      const key = `lint${t - 3}`;
      // Closes both facts of that error (its command and its code).
      for (const f of facts.inFlight) if (f.kind === 'open error' && f.closeAt === undefined && f.openAt === open.get(key)?.openAt) f.closeAt = messages.length;
      open.delete(key);
      messages.push(...toolTurn(dialect, [{ kind: 'shell', id: id('k'), args: { command }, output: 'no problems\nExit code: 0', isError: false }], thinking));
    }
    // A subagent every fifth turn; the one of every tenth is reported finished two turns later, the others keep running.
    if (t % 5 === 1) {
      const task = `Audit module m${t} of seed ${seed} for unused exports`;
      const agent = `agent_${seed}_${t}`;
      opens(agent, 'running subagent', task);
      facts.inFlight.push({ ...open.get(agent)!, fact: agent });
      const args = claude
        ? { description: task, prompt: `${task}.`, subagent_type: 'general-purpose', run_in_background: true }
        : { description: task, message: `${task}.` };
      messages.push(
        ...toolTurn(
          dialect,
          [{ kind: 'spawn', id: id('a'), args, output: `Async agent launched in the background with ID: ${agent}`, isError: false }],
          thinking,
        ),
      );
    }
    if (t % 10 === 3) {
      const agent = `agent_${seed}_${t - 2}`;
      for (const f of facts.inFlight)
        if (f.kind === 'running subagent' && f.closeAt === undefined && f.openAt === open.get(agent)?.openAt) f.closeAt = messages.length;
      open.delete(agent);
      const args = claude ? { task_id: agent } : { id: agent };
      messages.push(
        ...toolTurn(
          dialect,
          [{ kind: 'check', id: id('c'), args, output: `<status>completed</status> ${agent} finished: no unused exports.`, isError: false }],
          thinking,
        ),
      );
    }
    // Every seventh turn the user queues a turn behind this unanswered one (the turn ends without an answer).
    if (t % 7 === 3) {
      const queued = `Also, once that is done, add a changelog entry for turn ${t} of seed ${seed}.`;
      facts.requests.push(queued);
      opens(`queued${t}`, 'queued turn', queued);
      unanswered.push(`queued${t}`);
      messages.push(userMessage(dialect, queued, rand));
      messages.push(...toolTurn(dialect, [{ kind: 'read', id: id('q'), args: at('CHANGELOG.md'), output: '# Changelog\n', isError: false }], thinking));
    }
  };
  for (let t = 0; t < turns; t++) {
    const path = `services/s${seed}/feature${t}/handler_${t}.py`;
    const identifier = [`PROJ-${1000 + seed * 100 + t}`, `#${4000 + t}`, `https://tracker.example.com/issues/${seed}-${t}`, `c0ffee${seed}${t}a`][t % 4];
    let text = `Please update ${path} for ${identifier}; keep the public API stable.`;
    if (t % 4 === 1) {
      const port = 8000 + t;
      text = `Run the dev server of ${path} on port ${port} (${identifier}).`;
      pendingConstraint = { port, text };
    } else if (t % 4 === 3 && pendingConstraint) {
      text = `Actually, use port ${pendingConstraint.port + 1000} instead of ${pendingConstraint.port} for ${path} (${identifier}).`;
      facts.corrections.push({ original: pendingConstraint.text, correction: text });
      pendingConstraint = undefined;
    }
    const instruction = `Never edit config/s${seed}/prod.yaml without asking first.`;
    if (inFlight && t === 0) text = `${text} ${instruction}`;
    facts.requests.push(text);
    facts.paths.push(path);
    facts.identifiers.push(identifier);
    if (inFlight) {
      if (t === 0) opens('instruction', 'instruction', instruction);
      opens(`turn${t}`, 'queued turn', text);
      unanswered.push(`turn${t}`);
    }
    messages.push(userMessage(dialect, text, rand));
    const failing = rand() < 0.5;
    // Paths the user never names: one the agent reads on its own, one only its answer mentions.
    const notes = `docs/s${seed}/notes_${t}.md`;
    const helper = `lib/s${seed}/helper_${t}.py`;
    facts.paths.push(notes, helper);
    const pathArgs = (p: string) => (dialect === 'anthropic' ? { file_path: p } : { path: p });
    const steps: Step[] = [
      { kind: 'read', id: `call_r${seed}_${t}`, args: pathArgs(path), output: FILE_BODY(path, lines), isError: false },
      { kind: 'read', id: `call_n${seed}_${t}`, args: pathArgs(notes), output: FILE_BODY(notes, lines), isError: false },
      {
        kind: 'shell',
        id: `call_s${seed}_${t}`,
        args: { command: `pytest ${path} -q` },
        output: failing ? `FAILED ${path}::test_${t} - AssertionError\n${'trace line\n'.repeat(lines)}Exit code: 1` : `${lines} passed\nExit code: 0`,
        isError: failing && (dialect === 'anthropic' || dialect === 'ai-sdk'),
      },
    ];
    const extra = options.extraShell?.(t);
    if (extra) steps.push({ kind: 'shell', id: `call_x${seed}_${t}`, args: { command: extra.command }, output: extra.output, isError: extra.isError });
    messages.push(...toolTurn(dialect, steps, options.thinking ?? true));
    if (inFlight) plantInFlight(t);
    if (failing) {
      const retry: Step = {
        kind: 'shell',
        id: `call_f${seed}_${t}`,
        args: { command: `pytest ${path} -q` },
        output: `${lines} passed\nExit code: 0`,
        isError: false,
      };
      messages.push(...toolTurn(dialect, [retry], options.thinking ?? true));
    }
    // Every seventh turn the agent does not answer: its turn stays open, with the next one queued behind it.
    if (!(inFlight && t % 7 === 3)) {
      messages.push(assistantText(dialect, `Updated ${path}; the tests pass now. I also touched ${helper}.`));
      answered();
    }
  }
  const last = `Last request ${seed}: summarise what changed.`;
  facts.requests.push(last);
  if (inFlight) {
    opens('last', 'queued turn', last);
  }
  messages.push(userMessage(dialect, last, rand));
  return { messages, facts };
}
