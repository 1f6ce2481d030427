/**
 * Agent sessions with planted facts, per dialect, from a seed: what the ledger must keep and
 * the fidelity benchmark measures. Each turn the user names a file path and an identifier
 * (a ticket, an issue number, a URL, a commit); every fourth turn sets a constraint that a
 * later turn corrects ("Actually, ..."). The agent reads the file and a second one the user
 * never named, runs a command that fails and then passes, and its answer mentions a third
 * path of its own; its tool outputs are long JSON or log text (what makes masking pay). Two
 * of each turn's three paths appear in no user request, so keeping the requests alone does
 * not keep them.
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
}

export interface PlantedSession {
  messages: Message[];
  facts: PlantedFacts;
}

interface Step {
  kind: 'read' | 'shell';
  id: string;
  args: Record<string, unknown>;
  output: string;
  isError: boolean;
}

function toolName(dialect: DialectName, kind: Step['kind']): string {
  if (dialect === 'anthropic') return kind === 'read' ? 'Read' : 'Bash';
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
  } = {},
): PlantedSession {
  if (dialect === 'openai-agents') {
    const session = plantedSession('openai-responses', seed, turns, options);
    return { messages: toAgentsItems(session.messages), facts: session.facts };
  }
  const rand = seededRandom(seed);
  const lines = options.outputLines ?? 60;
  const facts: PlantedFacts = { requests: [], paths: [], identifiers: [], corrections: [] };
  const messages: Message[] = [];
  if (dialect === 'openai-chat' || dialect === 'ai-sdk') messages.push({ role: 'system', content: 'You are a careful coding agent.' });
  if (dialect === 'openai-responses') messages.push({ type: 'message', role: 'developer', content: 'You are a careful coding agent.' });
  let pendingConstraint: { port: number; text: string } | undefined;
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
    facts.requests.push(text);
    facts.paths.push(path);
    facts.identifiers.push(identifier);
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
    messages.push(assistantText(dialect, `Updated ${path}; the tests pass now. I also touched ${helper}.`));
  }
  const last = `Last request ${seed}: summarise what changed.`;
  facts.requests.push(last);
  messages.push(userMessage(dialect, last, rand));
  return { messages, facts };
}
