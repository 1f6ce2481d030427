/**
 * The trim rung on the real stack (Temporal dev server, Postgres, the real `openai` client
 * against the local LLM), in every dialect: a summariser that refuses its input as too long
 * (the local LLM answers `context_length_exceeded`, counted here) no longer leaves the session
 * over its limit (pi#8196): the job commits with rung 'trim', the head under the target, the
 * latest request verbatim, the open call kept, the ledger in the summary message, and the
 * dialect's strict provider takes it. Without the trim rung in RUNGS the same job is refused.
 * When the summary succeeds, it answers and the trim is never tried.
 */
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type DialectName, type Message } from '../../src/compaction/dialects';
import { jsonEqual } from '../../src/compaction/json';
import { LEDGER_HEADING } from '../../src/compaction/summary-structure';
import { estimateTranscriptTokens } from '../../src/compaction/tokens';
import { auditRows } from '../../src/db/session-store';
import { toAgentsItems } from '../support/agents-items';
import { plantedSession } from '../support/planted';
import { uniqueId, useTestStack } from '../support/stack';
import { strictProviderCheck } from '../support/strict-check';

/** A long answer of the agent's, in the dialect's shape (openai-agents: converted with the rest). */
function assistantText(name: DialectName, text: string): Message {
  if (name === 'anthropic') return { role: 'assistant', content: [{ type: 'text', text }] };
  if (name === 'gemini') return { role: 'model', parts: [{ text }] };
  if (name === 'openai-responses' || name === 'openai-agents')
    return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
  return { role: 'assistant', content: text };
}

function userText(name: DialectName, text: string): Message {
  if (name === 'gemini') return { role: 'user', parts: [{ text }] };
  if (name === 'openai-responses' || name === 'openai-agents') return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
  return { role: 'user', content: text };
}

/** A call the agent made after the latest request and has not answered yet, and the result it will append. */
function openCall(name: DialectName): { call: Message; result: Message } {
  switch (name) {
    case 'openai-chat':
      return {
        call: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_open', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/open.ts"}' } }],
        },
        result: { role: 'tool', tool_call_id: 'call_open', content: 'ok' },
      };
    case 'anthropic':
      return {
        call: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_open', name: 'Read', input: { file_path: 'src/open.ts' } }] },
        result: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_open', content: 'ok' }] },
      };
    case 'gemini':
      return {
        call: { role: 'model', parts: [{ functionCall: { name: 'read_file', args: { path: 'src/open.ts' }, id: 'call_open' } }] },
        result: { role: 'user', parts: [{ functionResponse: { name: 'read_file', id: 'call_open', response: { output: 'ok' } } }] },
      };
    case 'ai-sdk':
      return {
        call: {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'call_open', toolName: 'read_file', input: { path: 'src/open.ts' } }],
        },
        result: {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'call_open', toolName: 'read_file', output: { type: 'text', value: 'ok' } }],
        },
      };
    default:
      return {
        call: { type: 'function_call', call_id: 'call_open', name: 'read_file', arguments: '{"path":"src/open.ts"}' },
        result: { type: 'function_call_output', call_id: 'call_open', output: 'ok' },
      };
  }
}

/**
 * A session whose middle is huge: planted turns, then long explanations (no tool outputs, so
 * masking cannot shrink them), then the latest request and a call still open.
 */
function hugeSession(name: DialectName): { messages: Message[]; latest: Message; call: Message; result: Message } {
  const shape: DialectName = name === 'openai-agents' ? 'openai-responses' : name;
  const { messages } = plantedSession(shape, 5, 6, { outputLines: 4, thinking: false });
  const latest = messages.pop()!;
  for (let k = 0; k < 6; k++) {
    messages.push(userText(shape, `Explain part ${k} of the design in depth.`));
    messages.push(assistantText(shape, `Part ${k}: ${'the design keeps every module small and its interface stable; '.repeat(300)}`));
  }
  const { call, result } = openCall(shape);
  const all = [...messages, latest, call, result];
  const converted = name === 'openai-agents' ? toAgentsItems(all) : all;
  const [convertedResult] = converted.splice(converted.length - 1, 1);
  return { messages: converted, latest: converted.at(-2)!, call: converted.at(-1)!, result: convertedResult };
}

describe.each(DIALECT_NAMES)('the trim rung on the real stack (%s)', (name) => {
  const stack = useTestStack();
  const dialect = dialectOf(name);

  async function lineageWithHugeMiddle() {
    const id = uniqueId(`trim-${name}`);
    const session = hugeSession(name);
    const tokens = estimateTranscriptTokens(session.messages, dialect);
    // The head is over its window; the trim's target is half the window (the masking rung's share).
    const contextWindow = Math.floor(tokens * 0.8);
    await stack().client.createSession({ sessionId: id, dialect: name, contextWindow });
    await stack().client.append(id, session.messages);
    return { id, contextWindow, ...session };
  }

  it('a summariser that refuses its input as too long: the job commits with the trim rung, under target, nothing it must keep lost', async () => {
    const { id, contextWindow, latest, call, result } = await lineageWithHugeMiddle();
    let faults = 0;
    stack().llm.setDefault({
      status: 400,
      errorCode: 'context_length_exceeded',
      errorMessage: "This model's maximum context length is 8192 tokens.",
      until: async () => void faults++,
    });
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    // The fault landed: every summariser request was answered with the error (the first layout, then the smaller one).
    expect(faults).toBe(2);
    expect(stack().llm.requests).toHaveLength(2);
    expect(answer.outcome, answer.reason).toBe('compacted');
    expect(answer.tokensAfter).toBeLessThanOrEqual(Math.floor(contextWindow / 2));
    expect(answer.tokensAfter).toBeLessThan(answer.tokensBefore!);

    const head = (await stack().client.transcript(answer.sessionId)).messages;
    expect(head.some((m) => jsonEqual(m, latest))).toBe(true);
    expect(jsonEqual(head.at(-1)!, call)).toBe(true);
    const summaries = head.filter((m) => dialect.isSummary(m));
    expect(summaries.length).toBeGreaterThan(0);
    expect(summaries.map((m) => dialect.textOf(m)).join('\n')).toContain(LEDGER_HEADING);
    expect(await strictProviderCheck(name, dialect.forProvider([...head, result]))).toBeUndefined();

    const rows = await auditRows(stack().db.db, id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ outcome: 'compacted', rung: 'trim', gate: null });
    expect(rows[0].reason).toMatch(/^trim rung: the \d+ oldest message\(s\) dropped/);
    // Why each earlier rung passed, by rung; the operator's history shows the same.
    expect(rows[0].passedRungs).toEqual({
      masking: expect.stringMatching(/^masking old tool outputs does not bring the head to \d+ tokens$/),
      summary: 'the summariser refused its input as too long (bad request (HTTP 400, context_length_exceeded): the endpoint refused the request)',
    });
    const history = await stack().client.operator.history(answer.sessionId);
    expect(history.compactions.at(-1)?.passedRungs).toEqual(rows[0].passedRungs);
    expect(Object.values(rows[0].gateResults ?? {}).every((v) => v === 'pass')).toBe(true);
    expect((rows[0].ledger as { requests: unknown[] }).requests.length).toBeGreaterThan(0);
  });

  it.runIf(name === 'openai-chat')('a summary whose head is still over the context window passes to the trim, which commits', async () => {
    const { id, contextWindow, latest } = await lineageWithHugeMiddle();
    stack().llm.setDefault({ text: `A very long summary. ${'Every detail of every part, restated. '.repeat(Math.ceil((contextWindow * 5) / 38))}` });
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(stack().llm.requests.length).toBeGreaterThan(0);
    expect(answer.outcome, answer.reason).toBe('compacted');
    expect(answer.tokensAfter).toBeLessThanOrEqual(Math.floor(contextWindow / 2));
    const head = (await stack().client.transcript(answer.sessionId)).messages;
    expect(head.some((m) => jsonEqual(m, latest))).toBe(true);
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ outcome: 'compacted', rung: 'trim' });
    expect(row.passedRungs?.summary).toMatch(/^its head would hold \d+ tokens, over the context window of \d+$/);
    // What the summariser reported it used is in the row, though its summary was not committed.
    expect(row.summariserPromptTokens).toBeGreaterThan(0);
  });

  it.runIf(name === 'openai-chat')('a summary that fits answers with the summary rung: the trim is never tried', async () => {
    const { id, contextWindow } = await lineageWithHugeMiddle();
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    expect(answer.tokensAfter).toBeLessThanOrEqual(contextWindow);
    expect(stack().llm.requests.length).toBeGreaterThan(0);
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ outcome: 'compacted', rung: 'summary' });
    expect(row.passedRungs).toEqual({ masking: expect.any(String) });
  });
});
