/**
 * examples/temporal-agent.ts works as written (docs/agents-on-temporal.md points at it): run as
 * its header says (`node --import tsx examples/temporal-agent.ts <session-id> <request>`), on the
 * test stack's Temporal and Postgres, with OPENAI_BASE_URL at the strict Responses fake and a
 * model the fake answers from its agent script (tool calls, then a final text). It starts its
 * own worker, appends the request, runs the workflow to its answer and prints it.
 *
 * Proven: the process exits 0 and prints the model's final text; the fake accepted every
 * request; the lineage holds the request, each reply's tool calls once and one result for each
 * (what the example's tools return), and the audit finds no problem.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isJsonObject } from '../../src/compaction/json';
import { PROJECT_ROOT } from '../../src/config';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

const MODEL = 'agent-model-temporal-example';
const REQUEST = 'The test of src/sum.ts fails. Find out why and tell me the fix.';
/** The example bundles its workflows and starts a worker before its first call: a few seconds; bounded here. */
const EXAMPLE_WAIT_MS = 100_000;

let responses: StrictResponsesProvider;

beforeAll(async () => {
  responses = await startStrictResponses({ seed: 3802, largeArgumentsChance: 0 });
});

afterAll(async () => {
  await responses?.close();
});

/** The parts of the messages of `type` (tool-call, tool-result). */
const partsOf = (messages: unknown[], type: string) =>
  messages.flatMap((m) => (isJsonObject(m) && Array.isArray(m.content) ? m.content : [])).filter((p) => isJsonObject(p) && p.type === type) as Record<
    string,
    unknown
  >[];

describe('examples/temporal-agent.ts', () => {
  it('runs a coding agent on Temporal to its answer: every request accepted, the conversation in the lineage, each message once', async () => {
    const lineageId = uniqueId('temporal-example');
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'examples/temporal-agent.ts'), lineageId, REQUEST], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...stack().env, OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: responses.url, AI_SDK_MODEL: MODEL },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // What it prints on stdout; the worker's log goes to stderr.
    let stdout = '';
    let output = '';
    child.stdout.on('data', (b: Buffer) => ((stdout += b.toString()), (output += b.toString())));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), EXAMPLE_WAIT_MS);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(timer);
    expect(code, output).toBe(0);

    // It printed the model's final text, then its figures.
    const printed = stdout.trim().split('\n');
    const figures = JSON.parse(printed.at(-1)!) as { lineageId: string; historyEvents: number; headMessages: number };
    const replies = responses.agentReplies;
    expect(replies.length).toBeGreaterThanOrEqual(2);
    expect(replies.slice(0, -1).every((r) => r.kind === 'calls') && replies.at(-1)!.kind === 'answer').toBe(true);
    const answer = replies.at(-1)!.output.flatMap((item) => (item.type === 'message' ? item.content.map((c) => (c.type === 'output_text' ? c.text : '')) : []));
    expect(printed.slice(0, -1).join('\n')).toBe(answer.join(''));
    expect(responses.rejections.map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    expect(responses.requests.filter((r) => r.caller === 'agent').length).toBe(replies.length);

    // The lineage: the request, each reply's tool calls once, one result for each, as the example's tools answer.
    const { messages } = await stack().client.transcript(lineageId);
    expect(figures).toMatchObject({ lineageId, headMessages: messages.length });
    expect(messages[0]).toEqual({ role: 'user', content: REQUEST });
    const calls = replies.flatMap((r) => r.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.call_id, name: item.name }] : [])));
    expect(partsOf(messages, 'tool-call').map((p) => p.toolCallId)).toEqual(calls.map((c) => c.id));
    const results = partsOf(messages, 'tool-result');
    expect(results.map((p) => p.toolCallId)).toEqual(calls.map((c) => c.id));
    for (const [i, result] of results.entries()) {
      const { name } = calls[i];
      const value = (result.output as { value: unknown }).value;
      // The script's calls name files the example's project does not have. A call to a tool the
      // example did not give the model is answered by the AI SDK itself (its error result, in the
      // model's own batch), and only that once: the workflow does not run it again.
      if (name === 'list_dir') expect(value).toEqual(['src/sum.ts', 'test/sum.test.ts']);
      else if (name === 'read_file') expect(value).toBe('no such file');
      else expect(result.output).toMatchObject({ type: 'error-text' });
    }
    const audit = await stack().client.operator.auditLineage(lineageId);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.duplicatedByKey, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0, 0]);

    expect(figures.historyEvents).toBeGreaterThan(0);
    console.log(
      `temporal-agent example: ${replies.length} model calls, ${calls.length} tool calls, ${figures.historyEvents} history events, ${messages.length} messages in the lineage`,
    );
  });
});
