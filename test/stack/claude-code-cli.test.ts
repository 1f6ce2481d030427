/**
 * The real Claude Code CLI (the Claude Agent SDK's native binary) against the strict Anthropic
 * fake, its transcript mirrored into lineages by LineageSessionStore: several turns with tool
 * calls (Glob on a temp directory), the CLI's own `/compact` mid-conversation, then a second
 * CLI process with another config directory (another host) resuming the session from the store
 * and continuing. Every request the fake received is accepted, every prompt is in the lineage,
 * the audit counts 0 forks, and the resumed process's first request carries the earlier
 * conversation (which only the store could have given it).
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { query, type SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineageSessionStore } from '../../src/adapters/claude-agent-sdk';
import { startStrictAnthropic, type StrictAnthropicProvider, validateAnthropicRequest } from '../support/strict-anthropic';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();
const CLI = path.resolve('node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude');
const present = process.platform === 'linux' && process.arch === 'x64' && existsSync(CLI);

let fake: StrictAnthropicProvider;
beforeAll(async () => {
  fake = await startStrictAnthropic({ seed: 5, largeArgumentsChance: 0 });
});
afterAll(() => fake?.close());

/** One host: a config directory (HOME, CLAUDE_CONFIG_DIR) of its own, offline, pointed at the fake. */
function host(url: string): Record<string, string> {
  const home = mkdtempSync(path.join(os.tmpdir(), 'cc-host-'));
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'sk-ant-test-offline',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}

/** One turn: the CLI spawned by the SDK (asynchronously), its messages collected, its session id returned. */
async function turn(prompt: string, options: { env: Record<string, string>; cwd: string; store: LineageSessionStore; resume?: string }) {
  const messages: SDKMessage[] = [];
  for await (const message of query({
    prompt,
    options: {
      cwd: options.cwd,
      env: options.env,
      model: 'agent-model',
      thinking: { type: 'disabled' },
      tools: ['Glob'],
      allowedTools: ['Glob'],
      maxTurns: 100,
      settingSources: [],
      pathToClaudeCodeExecutable: CLI,
      sessionStore: options.store,
      sessionStoreFlush: 'eager',
      ...(options.resume ? { resume: options.resume } : {}),
    },
  }))
    messages.push(message);
  const result = messages.find((m) => m.type === 'result');
  expect(result, JSON.stringify(messages.slice(-3))).toMatchObject({ subtype: 'success' });
  return { sessionId: result!.session_id, messages };
}

describe.skipIf(!present)('the real Claude Code CLI, its transcript in a lineage', () => {
  it('runs turns with tools, compacts with /compact, and a second host resumes from the store', { timeout: 55_000 }, async () => {
    const cwd = mkdtempSync(path.join(os.tmpdir(), 'cc-project-'));
    mkdirSync(path.join(cwd, 'src'));
    for (let i = 1; i <= 40; i++) writeFileSync(path.join(cwd, 'src', `module-${i}.ts`), `export const m${i} = ${i};\n`);
    const store = new LineageSessionStore(stack().client, { namespace: uniqueId('cc') });
    const first = host(fake.url);
    const prompts = ['Find the modules of src', 'Now look for module 7 again', 'And the tests of module 3'];

    const { sessionId } = await turn(prompts[0], { env: first, cwd, store });
    await turn(prompts[1], { env: first, cwd, store, resume: sessionId });
    await turn('/compact', { env: first, cwd, store, resume: sessionId });
    const beforeResume = fake.requests.length;

    // Another host: an empty config directory; only the store knows the session.
    await turn(prompts[2], { env: host(fake.url), cwd, store, resume: sessionId });

    const projectKey = cwd.replace(/[^a-zA-Z0-9]/g, '-');
    const entries = (await store.load({ projectKey, sessionId }))!;
    expect(entries).not.toBeNull();
    const stored = JSON.stringify(entries);
    for (const prompt of prompts) expect(stored).toContain(prompt);
    const compactions = entries.filter((e) => e.type === 'system' && e.subtype === 'compact_boundary').length;
    expect(compactions).toBeGreaterThanOrEqual(1);

    const resumedFirst = fake.requests.slice(beforeResume).find((r) => r.caller === 'agent');
    // A fresh session's first request holds the prompt and the environment note (2 messages);
    // the resumed one holds the compacted conversation before the new prompt.
    const freshFirst = fake.requests.find((r) => r.caller === 'agent')!;
    expect(resumedFirst!.items).toBeGreaterThan(freshFirst.items);
    const audit = await stack().client.operator.auditLineage(store.lineageIdOf({ projectKey, sessionId }));
    expect(audit).toMatchObject({ forks: 0, lostMessages: 0 });
    expect(fake.rejections.map((r) => `${r.rule}: ${r.reason}`)).toEqual([]);
    const turns = entries.filter((e) => e.type === 'user' && typeof (e.message as { content?: unknown })?.content === 'string').length;
    console.log(
      `claude-code-cli: turns ${turns}, compactions ${compactions}, requests ${fake.requests.length}, rejected ${fake.rejections.length}, forks ${audit.forks}`,
    );
  });
});

describe('the strict Anthropic fake and what Claude Code sends', () => {
  const request = (messages: unknown[]) => ({ model: 'agent-model', max_tokens: 100, messages });
  const user = { role: 'user', content: 'Find the modules' };
  const call = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Glob', input: { pattern: '*' } }] };
  const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.ts' }] };
  const system = { role: 'system', content: '# Environment' };

  it('takes a mid-conversation system message (text), and still refuses one first, empty, not text, or inside a tool call', () => {
    expect(validateAnthropicRequest(request([user, system, call, result]))).toBeNull();
    expect(validateAnthropicRequest(request([user, { role: 'system', content: [{ type: 'text', text: 'note' }] }]))).toBeNull();
    expect(validateAnthropicRequest(request([system, user]))?.rule).toBe('AN-5');
    expect(validateAnthropicRequest(request([user, { role: 'system', content: '' }]))?.rule).toBe('AN-4');
    expect(validateAnthropicRequest(request([user, { role: 'system', content: [{ type: 'image', source: {} }] }]))?.rule).toBe('shape');
    expect(validateAnthropicRequest(request([user, call, system, result]))?.rule).toBe('AN-2');
    expect(validateAnthropicRequest(request([user, { role: 'developer', content: 'x' }]))?.rule).toBe('shape');
  });
});
