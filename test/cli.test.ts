/** The `sessions` command as a user runs it: a real process, against the real stack. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/config';
import { conversation, uniqueId, useTestStack } from './support/stack';

const run = promisify(execFile);
const stack = useTestStack();

async function sessions(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  const child = run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], { env: { ...process.env, ...stack().env }, cwd: PROJECT_ROOT });
  if (input !== undefined) {
    child.child.stdin!.end(input);
  }
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr, json: args.includes('--json') ? JSON.parse(stdout) : undefined };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr, json: args.includes('--json') && e.stdout ? JSON.parse(e.stdout) : undefined };
  }
}

describe('sessions command', () => {
  it('creates, appends, compacts and shows transcript, lineage and audit as JSON', async () => {
    const id = uniqueId('cli');
    expect((await sessions(['create', id, '--source', 'slack', '--json'])).json).toEqual({ sessionId: id, lineageId: id, mode: 'rotate', source: 'slack' });
    const appended = await sessions(['append', id, '--json'], JSON.stringify(conversation(12)));
    expect(appended.json).toEqual({
      sessionId: id,
      lineageId: id,
      firstSeq: 1,
      lastSeq: 49,
      count: 49,
      firstLineageSeq: 1,
      lastLineageSeq: 49,
      headTokens: expect.any(Number),
      replayed: false,
    });

    const compacted = await sessions(['compact', id, '--focus', 'tests', '--request-id', 'cli-1', '--json']);
    expect(compacted.code).toBe(0);
    expect(compacted.json).toMatchObject({ outcome: 'compacted', sessionId: `${id}--g1`, previousSessionId: id });
    expect(Object.keys(compacted.json).sort()).toEqual([
      'messages',
      'messagesAfter',
      'messagesBefore',
      'outcome',
      'previousSessionId',
      'sessionId',
      'tokensAfter',
      'tokensBefore',
    ]);

    const transcript = await sessions(['transcript', id, '--json']);
    expect(transcript.json).toEqual({ sessionId: `${id}--g1`, messages: compacted.json.messages });

    const lineage = await sessions(['lineage', `${id}--g1`, '--json']);
    expect(lineage.json.sessions).toEqual([
      { sessionId: id, parentSessionId: null, endedAt: expect.any(String), endReason: 'compression', messageCount: 49 },
      { sessionId: `${id}--g1`, parentSessionId: id, endedAt: null, endReason: null, messageCount: compacted.json.messages.length },
    ]);

    const all = await sessions(['transcript', id, '--all', '--json']);
    expect(all.json).toMatchObject({ sessionId: `${id}--g1`, messages: compacted.json.messages, archived: [] });

    const stale = await sessions(['compact', id, '--json']);
    expect(stale.json).toMatchObject({ outcome: 'stale', sessionId: `${id}--g1` });

    const audit = await sessions(['audit', '--json']);
    expect(audit.json).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0 });
    expect(audit.json.sessions).toBeGreaterThanOrEqual(2);
  });

  it('reports bad input with a typed error, exit code 2, and writes nothing', async () => {
    const id = uniqueId('cli');
    await sessions(['create', id]);
    const bad = await sessions(
      ['append', id, '--json'],
      JSON.stringify([
        { role: 'user', content: 'ok' },
        { role: 'robot', content: 'x' },
      ]),
    );
    expect(bad.code).toBe(2);
    expect(bad.json.error).toMatchObject({ type: 'InvalidInputError', field: 'messages[1].role' });
    expect((await sessions(['transcript', id, '--json'])).json.messages).toEqual([]);

    const notJson = await sessions(['append', id], '{oops');
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/not valid JSON/);

    const missing = await sessions(['compact', 'nobody-here', '--json']);
    expect(missing.code).toBe(2);
    expect(missing.json.error.type).toBe('SessionNotFoundError');

    const background = await sessions(['compact', id, '--background', '--json']);
    expect(background.code).toBe(2);
    expect(background.json.error.type).toBe('BackgroundCompactionRejectedError');

    const usage = await sessions(['frobnicate']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/usage: sessions/);
  });
});
