/**
 * The operator's command-line and endpoints: progress of a running compaction (state query,
 * the compact command's progress line), per-lineage commands that work while Temporal is
 * down, and the refusals of the codec endpoint and the key parser.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec, parseEncryptionKeys } from '../../src/codec/aes-gcm-codec';
import { createCodecServer } from '../../src/codec/codec-server';
import { main } from '../../src/cli/main';
import type { LineageStateWithProgress } from '../../src/client/operator-client';
import { formatProgress, progressFromPendingActivity } from '../../src/client/progress';
import { bindAddress, loadConfig, PROJECT_ROOT } from '../../src/config';
import { freePort } from '../../src/dev/temporal-server';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const run = promisify(execFile);
const stack = useTestStack();

/** The `sessions` command as an operator: under the reader login (sc_reader alone), or the application login (sc_app) for `compact`, which writes. */
async function sessions(args: string[], env: Record<string, string> = {}) {
  const login = args[0] === 'compact' ? stack().appDatabaseUrl : stack().readerDatabaseUrl;
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], {
      env: { ...process.env, ...stack().env, DATABASE_URL: login, ...env },
      cwd: PROJECT_ROOT,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('progress of a running compaction', () => {
  it('the state query carries the heartbeat progress; after the commit there is none', async () => {
    const id = uniqueId('prog');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    stack().llm.script({ chunks: 40, chunkDelayMs: 150 });
    const pending = stack().client.compact(id);
    let seen: LineageStateWithProgress;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const state = await stack().client.operator.state(id);
      if (state.progress?.phase === 'summarising' && (state.progress.streamedChars ?? 0) > 0) {
        seen = state;
        break;
      }
      if (Date.now() > deadline) throw new Error(`no summarising progress seen; last state ${JSON.stringify(state)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(seen.inFlight).toBeDefined();
    expect(seen.progress).toMatchObject({ phase: 'summarising', chunk: 1, chunks: 1, attempt: 1, elapsedMs: expect.any(Number) });
    expect((await pending).outcome).toBe('compacted');
    expect((await stack().client.operator.state(id)).progress).toBeUndefined();
  });

  it('sessions compact draws a progress line on a terminal, and nothing without one or with --json', async () => {
    const id = uniqueId('tty');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(12));
    stack().llm.script({ chunks: 30, chunkDelayMs: 150 });
    // In process, with a terminal sink: the same code path a TTY takes.
    const lines: string[] = [];
    let cleared = 0;
    const out: string[] = [];
    const saved = { ...process.env };
    Object.assign(process.env, stack().env);
    let code: number;
    try {
      code = await main(
        ['compact', id],
        (t) => out.push(t),
        () => undefined,
        { write: (l) => lines.push(l), clear: () => cleared++ },
      );
    } finally {
      for (const key of Object.keys(stack().env)) if (saved[key] === undefined) delete process.env[key];
      Object.assign(process.env, saved);
    }
    expect(code).toBe(0);
    expect(out.join('\n')).toMatch(/^compacted: head is/);
    expect(lines.some((l) => /compacting .*: summarising/.test(l))).toBe(true);
    expect(cleared).toBe(1);

    // As a process without a terminal: stdout is the answer alone, stderr is empty.
    const again = uniqueId('notty');
    await stack().client.createSession({ sessionId: again });
    await stack().client.append(again, conversation(12));
    stack().llm.script({ chunks: 10, chunkDelayMs: 100 });
    const plain = await sessions(['compact', again, '--json']);
    expect(plain.code).toBe(0);
    expect(JSON.parse(plain.stdout)).toMatchObject({ outcome: 'compacted' });
    expect(plain.stderr).toBe('');
  });

  it('reads both heartbeat shapes, and formats them', () => {
    const now = Date.parse('2026-01-01T00:00:10Z');
    const started = new Date('2026-01-01T00:00:00Z');
    const old = progressFromPendingActivity(
      { activityType: 'compactSession', details: { phase: 'summarising', messages: 30, chunks: 12 }, attempt: 2, maximumAttempts: 5, lastStartedTime: started },
      now,
    );
    expect(old).toMatchObject({ phase: 'summarising', messages: 30, streamedChars: 12, elapsedMs: 10_000, attempt: 2 });
    expect(formatProgress(old)).toBe('summarising, 30 message(s), 12 streamed, 10.0 s (attempt 2/5)');
    const rich = progressFromPendingActivity(
      { activityType: 'compactSession', details: { phase: 'summarising', chunk: 2, chunks: 5, streamedChars: 900, elapsedMs: 4200 }, attempt: 1 },
      now,
    );
    expect(formatProgress(rich)).toBe('summarising chunk 2/5, 900 streamed, 4.2 s');
    const committing = progressFromPendingActivity(
      { activityType: 'compactSession', details: { phase: 'committing', chunks: 3, elapsedMs: 5000 }, attempt: 1 },
      now,
    );
    expect(committing).toMatchObject({ phase: 'committing', chunks: 3, elapsedMs: 5000 });
    expect(committing!.streamedChars).toBeUndefined();
    expect(formatProgress(committing)).toBe('committing, 5.0 s');
    expect(progressFromPendingActivity({ activityType: 'compactSession', details: 'garbage', attempt: 1 }, now)).toMatchObject({ phase: 'scheduled' });
    expect(progressFromPendingActivity({ activityType: 'markLineageClosed', attempt: 1 }, now)).toBeUndefined();
  });
});

describe('per-lineage commands', () => {
  it('list, history and audit <id> work while Temporal is down', async () => {
    const id = uniqueId('pg');
    await stack().client.createSession({ sessionId: id, source: 'teams' });
    await stack().client.append(id, conversation(12));
    expect((await stack().client.compact(id)).outcome).toBe('compacted');
    await stack().client.append(id, [{ role: 'user', content: 'short' }]);
    const down = { TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` };

    // The reference: with nothing listening, a command that needs Temporal fails.
    const state = await sessions(['state', id, '--json'], down);
    expect(state.code).toBe(1);

    const audit = await sessions(['audit', id, '--json'], down);
    expect(audit.code).toBe(0);
    expect(JSON.parse(audit.stdout)).toMatchObject({
      lineageId: id,
      sessions: 2,
      lineages: 1,
      compactions: 1,
      forks: 0,
      orphans: 0,
      lostMessages: 0,
      duplicatedMessages: 0,
      sequenceGaps: 0,
    });
    const whole = await sessions(['audit', '--json'], down);
    expect(whole.code).toBe(0);
    expect(JSON.parse(whole.stdout).sessions).toBeGreaterThanOrEqual(2);

    const list = await sessions(['list', '--source', 'teams', '--json'], down);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).lineages).toEqual([
      expect.objectContaining({ lineageId: id, headSessionId: `${id}--g1`, source: 'teams', lastOutcome: 'compacted', closed: false }),
    ]);

    const history = await sessions(['history', `${id}--g1`, '--json'], down);
    expect(history.code).toBe(0);
    const [row] = JSON.parse(history.stdout).compactions;
    expect(row).toMatchObject({
      outcome: 'compacted',
      parentSessionId: id,
      childSessionId: `${id}--g1`,
      attempts: 1,
      trigger: 'update',
      tokensBefore: expect.any(Number),
      tokensAfter: expect.any(Number),
      durationMs: expect.any(Number),
    });
    expect(row.tokensAfter).toBeLessThan(row.tokensBefore);
    const human = await sessions(['history', id], down);
    expect(human.stdout).toMatch(/compacted .* -> .*--g1 .* attempts 1/);

    for (const args of [
      ['transcript', id, '--json'],
      ['lineage', id, '--json'],
    ])
      expect((await sessions(args, down)).code, args[0]).toBe(0);
    expect((await sessions(['history', 'nobody-here', '--json'], down)).code).toBe(2);
  });

  it('a compaction in place shows what it summarised, kept and wrote, from the archived rows', async () => {
    const id = uniqueId('inplace');
    await stack().client.createSession({ sessionId: id, mode: 'in_place' });
    const lastRequest = 'Last: write the release notes.';
    await stack().client.append(id, [...conversation(12), { role: 'user', content: lastRequest }]);
    stack().llm.setDefault({ text: 'IN-PLACE-SUMMARY-5521' });
    expect((await stack().client.compact(id)).outcome).toBe('compacted');
    const [job] = (await stack().client.operator.history(id)).compactions;
    const detail = await stack().client.operator.compaction(job.id);
    expect(detail.summary).toContain('IN-PLACE-SUMMARY-5521');
    expect(detail.parent).toHaveLength(job.messagesBefore!);
    expect(detail.result).toHaveLength(job.messagesAfter!);
    expect(detail.dialect).toBe('openai-chat');
    expect(detail.parent.filter((r) => r.fate === 'kept').map((r) => r.message)).toContainEqual({ role: 'user', content: lastRequest });
    expect(detail.result.filter((r) => r.kind === 'summary')).toHaveLength(1);
    // Every parent row is either summarised or kept; the summarised range is a real span of the lineage.
    expect(detail.parent.every((r) => r.fate === 'summarised' || r.fate === 'kept')).toBe(true);
    expect(detail.summarised.inferred).toBe(false);
    // The recorded range is exactly the lineage seqs of the rows marked summarised.
    const summarisedSeqs = detail.parent.filter((r) => r.fate === 'summarised').map((r) => r.lineageSeq!);
    expect([Math.min(...summarisedSeqs), Math.max(...summarisedSeqs)]).toEqual([detail.summarised.fromSeq, detail.summarised.toSeq]);
    expect(detail.summarised.fromSeq).toBeGreaterThan(1);
    expect(detail.summarised.toSeq).toBeLessThan(job.messagesBefore!);
    await expect(stack().client.operator.compaction('no-such-job')).rejects.toThrow(/compaction "no-such-job" does not exist/);
  });

  it('the per-lineage audit catches a duplicated row in that lineage only', async () => {
    const a = uniqueId('auda');
    const b = uniqueId('audb');
    for (const id of [a, b]) {
      await stack().client.createSession({ sessionId: id });
      await stack().client.append(id, conversation(3));
    }
    // Fault: duplicate one appended row of lineage a, bypassing the store.
    const { sql } = await import('drizzle-orm');
    const inserted = await stack().db.db.execute(sql`
      insert into messages (session_id, seq, role, body, token_estimate, lineage_seq)
      select session_id, 1000, role, body, token_estimate, lineage_seq from messages where session_id = ${a} and seq = 2 returning id`);
    expect(inserted.rows).toHaveLength(1);
    expect(await stack().client.operator.auditLineage(a)).toMatchObject({ duplicatedMessages: 1 });
    expect(await stack().client.operator.auditLineage(b)).toMatchObject({ duplicatedMessages: 0, lostMessages: 0, sequenceGaps: 0 });
  });
  it('the per-lineage audit catches a lost copy of a message a compaction kept verbatim, as the whole-database one does', async () => {
    const id = uniqueId('audkept');
    await stack().client.createSession({ sessionId: id });
    await stack().client.append(id, conversation(8));
    const { sessionId: child, outcome } = await stack().client.compact(id, { force: true });
    expect(outcome).toBe('compacted');
    const { sql } = await import('drizzle-orm');
    // Fault: the child's copy of a kept message (one the summary did not cover) vanishes.
    const removed = await stack().db.db.execute(sql`
      delete from messages where id = (
        select m.id from messages m join compactions c on c.child_session_id = m.session_id and c.outcome = 'compacted'
        where m.session_id = ${child} and m.lineage_seq is not null and m.lineage_seq not between c.summarised_from_seq and c.summarised_to_seq
        order by m.seq desc limit 1)
      returning id`);
    expect(removed.rows).toHaveLength(1);
    // The parent still holds the original, at or below the watermark: covered by the watermark, not by the summarised range.
    expect((await stack().client.operator.auditLineage(id)).lostMessages).toBe(1);
    expect((await stack().client.operator.audit()).details.lostMessageIds).toHaveLength(1);
  });
});

describe('operator surfaces are safe by default', () => {
  const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

  it('the codec endpoint refuses a wrong origin, a missing or wrong token, an oversized body, and /encode unless enabled', async () => {
    const codec = new AesGcmPayloadCodec(parseEncryptionKeys(key('k1')));
    const [encoded] = await codec.encode([{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"hello"') }]);
    const payload = {
      metadata: Object.fromEntries(Object.entries(encoded.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
      data: Buffer.from(encoded.data!).toString('base64'),
    };
    const body = JSON.stringify({ payloads: [payload] });
    const origin = 'http://127.0.0.1:8233';
    const server = createCodecServer(codec, { corsOrigins: [origin], authToken: 'secret-token-of-20-chars', maxBodyBytes: 4096 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = (route: string, headers: Record<string, string>, payloadBody = body) =>
      fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payloadBody });
    try {
      const ok = await post('/decode', { origin, authorization: 'Bearer secret-token-of-20-chars' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('access-control-allow-origin')).toBe(origin);
      expect(Buffer.from(((await ok.json()) as { payloads: Array<{ data: string }> }).payloads[0].data, 'base64').toString()).toBe('"hello"');

      const wrongOrigin = await post('/decode', { origin: 'http://evil.example', authorization: 'Bearer secret-token-of-20-chars' });
      expect(wrongOrigin.status).toBe(403);
      expect(wrongOrigin.headers.get('access-control-allow-origin')).toBeNull();
      expect(await wrongOrigin.text()).not.toContain('hello');
      expect((await fetch(`${url}/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } })).status).toBe(403);

      expect((await post('/decode', { origin })).status).toBe(401);
      expect((await post('/decode', { origin, authorization: 'Bearer wrong-token!' })).status).toBe(401);

      const big = JSON.stringify({ payloads: [payload], padding: 'x'.repeat(8192) });
      expect((await post('/decode', { origin, authorization: 'Bearer secret-token-of-20-chars' }, big)).status).toBe(413);

      expect((await post('/encode', { origin, authorization: 'Bearer secret-token-of-20-chars' })).status).toBe(404);
    } finally {
      server.close();
    }
    const withEncode = createCodecServer(codec, { corsOrigins: [origin], enableEncode: true, insecureNoAuth: true });
    await new Promise<void>((r) => withEncode.listen(0, '127.0.0.1', r));
    try {
      const response = await fetch(`http://127.0.0.1:${(withEncode.address() as AddressInfo).port}/encode`, { method: 'POST', headers: { origin }, body });
      expect(response.status).toBe(200);
    } finally {
      withEncode.close();
    }
  });

  it('refuses codec keys with a duplicate id at start', () => {
    expect(() => parseEncryptionKeys(`${key('k1')},${key('k1')}`)).toThrow(/key id "k1" twice/);
    expect(
      () =>
        new AesGcmPayloadCodec([
          { id: 'x', key: randomBytes(32) },
          { id: 'x', key: randomBytes(32) },
        ]),
    ).toThrow(/own id/);
  });

  it('binds the inspector and the metrics endpoint to 127.0.0.1 unless told otherwise', () => {
    const defaults = loadConfig({});
    expect(defaults.inspectorBindAddress).toBe('127.0.0.1:8234');
    expect(defaults.metricsBindAddress).toBeUndefined();
    expect(loadConfig({ METRICS_BIND_ADDRESS: '9464' }).metricsBindAddress).toBe('127.0.0.1:9464');
    expect(loadConfig({ INSPECTOR_BIND_ADDRESS: '9000' }).inspectorBindAddress).toBe('127.0.0.1:9000');
    expect(loadConfig({ INSPECTOR_BIND_ADDRESS: '0.0.0.0:9000' }).inspectorBindAddress).toBe('0.0.0.0:9000');
    expect(() => bindAddress('not an address')).toThrow(/host:port/);
    expect(defaults.codecEnableEncode).toBe(false);
  });
});
