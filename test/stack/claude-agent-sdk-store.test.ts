/**
 * LineageSessionStore (src/adapters/claude-agent-sdk/session-store.ts): the Claude Agent SDK's
 * `SessionStore` over lineages, on the real stack.
 *
 * - The SDK's own conformance suite (test/vendor/claude-agent-sdk/conformance.ts, vendored
 *   unmodified), each test with a store of its own namespace.
 * - Claude Code transcript entries as the CLI writes them (user, assistant with thinking and
 *   tool calls, tool results, summaries, titles, compact boundaries) come back JSON-equal and
 *   in order; a batch the SDK sends again (same uuids) is stored once; a batch above the
 *   service's batch limits goes in parts.
 * - Any key (a long project path, a session id with characters a session id may not hold)
 *   names a valid lineage, and the listings name it back.
 * - The SDK's own functions over the store: a local Claude Code transcript imported
 *   (importSessionToStore; again, and stored once), read (getSessionMessages), listed
 *   (listSessions) and deleted (deleteSession).
 * - Two stores, each with a SessionsClient of its own, append to one session at once: no
 *   entry is lost or stored twice, each writer's order is kept, the audit counts 0 forks.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deleteSession, getSessionMessages, importSessionToStore, listSessions } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { LineageSessionStore } from '../../src/adapters/claude-agent-sdk';
import { checkSessionId } from '../../src/workflows/contract';
import { runSessionStoreConformance } from '../vendor/claude-agent-sdk/conformance';
import { uniqueId, useTestStack, withClient } from '../support/stack';

const stack = useTestStack();

type Entry = { type: string; uuid?: string; [k: string]: unknown };

const asJson = (entries: readonly Entry[]) => JSON.parse(JSON.stringify(entries)) as Entry[];

/** A Claude Code transcript as the CLI writes it (one JSONL line each), for session `sessionId`. */
function claudeCodeTranscript(sessionId: string): Entry[] {
  const common = { sessionId, cwd: '/repo', version: '2.1.3', gitBranch: 'main', userType: 'external', isSidechain: false };
  const [u1, a1, r1, a2] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  return [
    {
      type: 'user',
      uuid: u1,
      parentUuid: null,
      timestamp: '2026-12-05T08:00:00.000Z',
      ...common,
      message: { role: 'user', content: 'Fix the failing test in src/a.ts' },
    },
    {
      type: 'assistant',
      uuid: a1,
      parentUuid: u1,
      timestamp: '2026-12-05T08:00:02.000Z',
      requestId: 'req_011',
      ...common,
      message: {
        id: 'msg_01',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [
          { type: 'thinking', thinking: 'Read the file first.', signature: 'c2lnbmF0dXJl' },
          { type: 'tool_use', id: 'toolu_01', name: 'Read', input: { file_path: '/repo/src/a.ts', limit: null } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 0 },
      },
      undefinedField: undefined,
    },
    {
      type: 'user',
      uuid: r1,
      parentUuid: a1,
      timestamp: '2026-12-05T08:00:03.000Z',
      ...common,
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'export const a = () => 1;\n// ünïcödé ✓ 🚀', is_error: false }],
      },
      toolUseResult: { type: 'text', file: { filePath: '/repo/src/a.ts', numLines: 2, startLine: 1, totalLines: 2 } },
    },
    {
      type: 'assistant',
      uuid: a2,
      parentUuid: r1,
      timestamp: '2026-12-05T08:00:05.000Z',
      ...common,
      message: {
        id: 'msg_02',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'Fixed: `a` returns 1.' }],
        stop_reason: 'end_turn',
      },
    },
    {
      type: 'system',
      subtype: 'compact_boundary',
      uuid: randomUUID(),
      parentUuid: null,
      logicalParentUuid: a2,
      content: 'Conversation compacted',
      compactMetadata: { trigger: 'auto', preTokens: 167_000 },
      timestamp: '2026-12-05T08:00:06.000Z',
      ...common,
    },
    { type: 'summary', summary: 'Fixed the failing test', leafUuid: a2 },
    { type: 'custom-title', customTitle: 'fix a.ts', sessionId },
    { type: 'tag', tag: '', sessionId, numbers: [0, -1, 1.5, 1e21, 2 ** 53], nested: { deep: [[{ x: null }]] } },
  ];
}

describe('the SDK conformance suite (vendored, unmodified)', () => {
  runSessionStoreConformance(() => new LineageSessionStore(stack().client, { namespace: uniqueId('cc') }));
});

describe('LineageSessionStore', () => {
  it('returns Claude Code transcript entries exactly as appended, in order; a batch sent again is stored once', async () => {
    const store = new LineageSessionStore(stack().client, { namespace: uniqueId('cc') });
    const key = { projectKey: '-repo', sessionId: randomUUID() };
    const entries = claudeCodeTranscript(key.sessionId);
    await store.append(key, entries.slice(0, 2));
    // The SDK's retry of a batch whose answer was lost: the same entries, the same uuids.
    await store.append(key, entries.slice(0, 2));
    await store.append(key, entries.slice(2, 4));
    // Entries without a uuid (titles, tags) are appended without dedup, as the SDK asks.
    await store.append(key, entries.slice(4));
    expect(await store.load(key)).toEqual(asJson(entries));
    const lineageId = store.lineageIdOf(key);
    // Stored in the anthropic dialect, never compacted by the service on its own.
    const lineage = (await stack().client.operator.history(lineageId)).lineage;
    expect(lineage.dialect).toBe('anthropic');
    expect(lineage.compactAtTokens ?? null).toBeNull();
    const audit = await stack().client.operator.auditLineage(lineageId);
    expect(audit).toMatchObject({ forks: 0, lostMessages: 0, duplicatedMessages: 0, duplicatedByKey: 0 });
  });

  it("takes a batch above the service's batch limits in parts, in order, and a resend of it stored once", async () => {
    const store = new LineageSessionStore(stack().client, { namespace: uniqueId('cc') });
    const key = { projectKey: 'big', sessionId: randomUUID() };
    // 15 tool results of 150,000 characters: 2.25 million, above MAX_BATCH_CHARS (2,000,000) in one append.
    const entries = Array.from({ length: 15 }, (_, i) => ({
      type: 'user',
      uuid: randomUUID(),
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: String(i % 10).repeat(150_000) }] },
    }));
    await store.append(key, entries);
    await store.append(key, entries);
    expect(await store.load(key)).toEqual(entries);
    const audit = await stack().client.operator.auditLineage(store.lineageIdOf(key));
    expect(audit).toMatchObject({ forks: 0, lostMessages: 0, duplicatedByKey: 0 });
  });

  it('maps any key to a valid lineage id, deterministically, and names it back in the listings', async () => {
    const namespace = uniqueId('cc');
    const store = new LineageSessionStore(stack().client, { namespace });
    const projectKey = `/home/ünïcode user/${'deep/'.repeat(60)}project`;
    const key = { projectKey, sessionId: 'not a valid session id: spaces / slashes --g1' };
    const sub = { ...key, subpath: 'subagents/agent-a1b2' };
    for (const k of [key, sub]) {
      const id = store.lineageIdOf(k);
      expect(checkSessionId(id)).toBe(id);
      expect(new LineageSessionStore(stack().client, { namespace }).lineageIdOf(k)).toBe(id);
    }
    expect(store.lineageIdOf(key)).not.toBe(new LineageSessionStore(stack().client, { namespace: uniqueId('cc') }).lineageIdOf(key));
    await store.append(key, [{ type: 'user', uuid: randomUUID() }]);
    await store.append(sub, [{ type: 'user', uuid: randomUUID() }]);
    const sessions = await store.listSessions(projectKey);
    expect(sessions.map((s) => s.sessionId)).toEqual([key.sessionId]);
    expect(Math.abs(sessions[0].mtime - Date.now())).toBeLessThan(60_000);
    expect(await store.listSubkeys(key)).toEqual([sub.subpath]);
    expect(() => store.lineageIdOf({ ...key, subpath: '' })).toThrow(/subpath/);
    expect(() => new LineageSessionStore(stack().client, { namespace: 'a.b' })).toThrow(/namespace/);
  });

  it("serves the SDK's own session functions: import (twice, stored once), messages, listing, delete", async () => {
    // The SDK reads local transcripts under CLAUDE_CONFIG_DIR/projects/<the directory, sanitised>/<session>.jsonl.
    const home = mkdtempSync(path.join(os.tmpdir(), 'claude-config-'));
    vi.stubEnv('CLAUDE_CONFIG_DIR', home);
    onTestFinished(() => void vi.unstubAllEnvs());
    const dir = mkdtempSync(path.join(os.tmpdir(), 'claude-project-'));
    const sessionId = randomUUID();
    const entries = claudeCodeTranscript(sessionId).map((e) => ('cwd' in e ? { ...e, cwd: dir } : e));
    const projectDir = path.join(home, 'projects', dir.replace(/[^a-zA-Z0-9]/g, '-'));
    mkdirSync(projectDir, { recursive: true });
    writeFileSync(path.join(projectDir, `${sessionId}.jsonl`), entries.map((e) => JSON.stringify(e)).join('\n') + '\n');
    const store = new LineageSessionStore(stack().client, { namespace: uniqueId('cc') });
    await importSessionToStore(sessionId, store, { dir });
    await importSessionToStore(sessionId, store, { dir });
    const [listed] = await store.listSessions(dir.replace(/[^a-zA-Z0-9]/g, '-'));
    expect(listed.sessionId).toBe(sessionId);
    expect(await store.load({ projectKey: dir.replace(/[^a-zA-Z0-9]/g, '-'), sessionId })).toEqual(asJson(entries));
    const messages = await getSessionMessages(sessionId, { dir, sessionStore: store });
    expect(messages.map((m) => m.uuid)).toEqual(entries.filter((e) => e.type === 'user' || e.type === 'assistant').map((e) => e.uuid));
    expect((await listSessions({ dir, sessionStore: store })).map((s) => s.sessionId)).toEqual([sessionId]);
    await deleteSession(sessionId, { dir, sessionStore: store });
    expect(await getSessionMessages(sessionId, { dir, sessionStore: store })).toEqual([]);
    expect(await listSessions({ dir, sessionStore: store })).toEqual([]);
  });

  it('two stores, each with a client of its own, append to one session at once: nothing lost, each writer in order, 0 forks', async () => {
    const namespace = uniqueId('cc');
    const key = { projectKey: 'shared-project', sessionId: randomUUID() };
    const batches = 25;
    const write = (store: LineageSessionStore, writer: string) => async () => {
      for (let n = 0; n < batches; n++) {
        await store.append(key, [
          { type: 'user', uuid: randomUUID(), writer, n, part: 0 },
          { type: 'assistant', uuid: randomUUID(), writer, n, part: 1 },
        ]);
      }
    };
    await withClient(stack(), {}, async (other) => {
      const first = new LineageSessionStore(stack().client, { namespace });
      const second = new LineageSessionStore(other, { namespace });
      await Promise.all([write(first, 'A')(), write(second, 'B')()]);
      const loaded = (await second.load(key))!;
      expect(loaded).toHaveLength(2 * 2 * batches);
      for (const writer of ['A', 'B']) {
        const mine = loaded.filter((e) => e.writer === writer).map((e) => `${String(e.n)}.${String(e.part)}`);
        expect(mine).toEqual(Array.from({ length: batches }, (_, n) => [`${n}.0`, `${n}.1`]).flat());
      }
      // A batch is all or nothing: its two entries are never split by the other writer's.
      loaded.forEach((e, i) => {
        if (e.part === 0) expect(loaded[i + 1]).toMatchObject({ writer: e.writer, n: e.n, part: 1 });
      });
      expect(await first.load(key)).toEqual(loaded);
    });
    const audit = await stack().client.operator.auditLineage(new LineageSessionStore(stack().client, { namespace }).lineageIdOf(key));
    expect(audit).toMatchObject({ forks: 0, lostMessages: 0, duplicatedMessages: 0, sequenceGaps: 0, duplicatedByKey: 0 });
  });
});
