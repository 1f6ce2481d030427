/**
 * The framework snippets of docs/frameworks.md run as written: each TypeScript block of "Use
 * with the OpenAI Agents SDK", "Use with LangChain.js", "Use with the AI SDK" and "Use with the Anthropic SDK" is saved at the repository root
 * (where the page says to save it) and run with `node --import tsx`, against the test stack and the
 * strict fake provider of its SDK (the base URL and model from the environment, as a user's
 * key would be; the LangChain one scripts its model with LangChain's own `fakeModel`). Proven: it exits 0, the provider refused none of its requests, and the
 * history it printed or sent came from the service.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
import { useTestStack } from '../support/stack';
import { startStrictAnthropic, type StrictAnthropicProvider } from '../support/strict-anthropic';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';

const stack = useTestStack();
const page = readFileSync(path.join(PROJECT_ROOT, 'docs/frameworks.md'), 'utf8');

/** The first ```ts block after the heading. */
function snippetAfter(heading: string): string {
  const from = page.indexOf(`\n${heading}\n`);
  expect(from, heading).toBeGreaterThan(0);
  const match = /```ts\n([\s\S]*?)\n```/.exec(page.slice(from));
  expect(match, `a ts block after ${heading}`).not.toBeNull();
  return match![1];
}

async function runSnippet(code: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const file = path.join(PROJECT_ROOT, `.readme-snippet-${process.pid}-${Date.now()}.mts`);
  writeFileSync(file, code);
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, ...stack().env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const exit = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code: exit, output };
  } finally {
    rmSync(file, { force: true });
  }
}

describe('docs/frameworks.md snippets', () => {
  let responses: StrictResponsesProvider;
  let anthropic: StrictAnthropicProvider;
  beforeAll(async () => {
    [responses, anthropic] = await Promise.all([startStrictResponses({ seed: 5, answersOnly: true }), startStrictAnthropic({ seed: 5 })]);
  });
  afterAll(async () => {
    await Promise.all([responses.close(), anthropic.close()]);
  });

  it('Use with the OpenAI Agents SDK: two runs on one CompactingSession, the second with the first in its history', async () => {
    const run = await runSnippet(snippetAfter('## Use with the OpenAI Agents SDK (TypeScript, Python)'), {
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: responses.url,
      AGENT_MODEL: 'agent-model',
    });
    expect(run.code, run.output).toBe(0);
    const agent = responses.requests.filter((r) => r.caller === 'agent');
    expect(agent).toHaveLength(2);
    expect(responses.rejections).toEqual([]);
    // The second run's request held the first run's exchange read from the service (its
    // request, the reasoning item and the answer) before its own request; 6 items in the head after.
    expect(agent.map((r) => r.items)).toEqual([1, 4]);
    expect(run.output).toMatch(/\(6 items in the head\)/);
  });

  it('Use with LangChain.js: two invocations on one lineage, the second handed the first from the service', async () => {
    const run = await runSnippet(snippetAfter('## Use with LangChain.js'), {});
    expect(run.code, run.output).toBe(0);
    // The second invocation passed only its message; the model was sent the first exchange
    // (request, tool call, tool result, answer) read from the service before it.
    expect(run.output).toMatch(/Order 1234\. \(5 messages sent, 6 in the head\)/);
  });

  it('Use with the AI SDK: two generateText tool loops on one lineage, the second sent the first from the service', async () => {
    const model = 'agent-model-ai-sdk';
    const run = await runSnippet(snippetAfter('## Use with the AI SDK'), {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: `${anthropic.url}/v1`,
      AI_SDK_MODEL: model,
    });
    expect(run.code, run.output).toBe(0);
    const requests = anthropic.requests.filter((r) => r.caller === 'agent' && r.model === model);
    expect(anthropic.rejections.filter((r) => r.model === model)).toEqual([]);
    // Each turn called the tool (the fake calls the tools a request offers) and then answered.
    const lines = [...run.output.matchAll(/^(\d+) messages sent first, (\d+) steps: /gm)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(lines).toHaveLength(2);
    expect(requests).toHaveLength(lines[0][1] + lines[1][1]);
    expect(lines.every(([, steps]) => steps >= 2)).toBe(true);
    // A new lineage: the first turn was sent its input alone; the second was sent the first
    // turn from the service (its input, at least a message per step) and its own input.
    expect(lines[0][0]).toBe(1);
    expect(lines[1][0]).toBeGreaterThanOrEqual(1 + lines[0][1] + 1);
    const head = Number(/^(\d+) messages in the head$/m.exec(run.output)?.[1]);
    expect(head).toBeGreaterThanOrEqual(lines[1][0] + lines[1][1]);
  });

  it('Use with the Anthropic SDK: a tool loop with thinking on, every request accepted', async () => {
    const run = await runSnippet(snippetAfter('## Use with the Anthropic SDK'), {
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_MODEL: 'agent-model',
    });
    expect(run.code, run.output).toBe(0);
    expect(anthropic.requests.filter((r) => r.caller === 'agent').length).toBeGreaterThanOrEqual(2);
    expect(anthropic.rejections).toEqual([]);
  });
});
