/**
 * Operating the service: the doctor, Prometheus metrics, graceful shutdown on SIGTERM and
 * payload encryption, against the real stack.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { AesGcmPayloadCodec, ENCRYPTED_ENCODING, parseEncryptionKeys } from '../../src/codec/aes-gcm-codec';
import { createCodecServer } from '../../src/codec/codec-server';
import { runDoctor } from '../../src/cli/doctor';
import { loadConfig } from '../../src/config';
import { auditRows } from '../../src/db/session-store';
import { freePort } from '../../src/dev/temporal-server';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { conversation, startTestStack, type TestStack, uniqueId } from '../support/stack';

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

describe('sessions doctor', () => {
  it('reports a healthy stack', async () => {
    stack = await startTestStack();
    const checks = await runDoctor(stack.config);
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ['temporal', true],
      ['namespace', true],
      ['search attributes', true],
      ['worker', true],
      ['postgres', true],
      ['migrations', true],
      ['summariser', true],
    ]);
  });

  it('says in plain words what is wrong', async () => {
    stack = await startTestStack({ noWorker: true });
    stack.llm.script({ status: 401 });
    const closedPort = await freePort();
    const checks = await runDoctor(
      loadConfig({ ...stack.env, DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${closedPort}/nothing`, TEMPORAL_TASK_QUEUE: 'nobody-polls-this' }),
    );
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(byName.postgres).toMatchObject({ ok: false, detail: expect.stringMatching(/cannot connect to Postgres at 127\.0\.0\.1:\d+\/nothing/) });
    expect(byName.worker).toMatchObject({ ok: false, detail: expect.stringMatching(/no worker polls task queue nobody-polls-this/) });
    expect(byName.summariser).toMatchObject({ ok: false, detail: expect.stringMatching(/rejected the API key \(401\)/) });
    const unreachable = await runDoctor(loadConfig({ ...stack.env, TEMPORAL_ADDRESS: `127.0.0.1:${closedPort}`, OPENAI_API_KEY: '' }));
    expect(unreachable[0]).toMatchObject({ name: 'temporal', ok: false, detail: expect.stringMatching(/cannot reach Temporal/) });
    expect(unreachable.find((c) => c.name === 'summariser')).toMatchObject({ ok: true, detail: expect.stringMatching(/built-in deterministic/) });
  });
});

describe('the worker process', () => {
  it('serves Temporal and compaction metrics on its Prometheus endpoint', async () => {
    const port = await freePort();
    stack = await startTestStack({ noWorker: true, env: { METRICS_BIND_ADDRESS: `127.0.0.1:${port}` } });
    await stack.spawnWorkerProcess();
    const id = uniqueId('m');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, conversation(12));
    expect((await stack.client.compact(id)).outcome).toBe('compacted');
    // A compaction the `smaller` gate refuses: its head would exceed a tiny context window.
    const tight = uniqueId('m');
    await stack.client.createSession({ sessionId: tight, contextWindow: 60 });
    await stack.client.append(tight, conversation(12));
    expect(await stack.client.compact(tight)).toMatchObject({ outcome: 'refused', gate: 'smaller' });
    let metrics = '';
    const ready = () => metrics.includes('session_compaction_carried_messages') && metrics.includes('session_compaction_gate_refusals');
    for (let i = 0; i < 50 && !ready(); i++) {
      metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      if (!ready()) await new Promise((r) => setTimeout(r, 200));
    }
    expect(metrics).toMatch(/session_compaction_gate_refusals\{[^}]*gate="smaller"[^}]*\} 1/);
    expect(metrics).toMatch(/session_compactions\{[^}]*outcome="compacted"[^}]*\} 1/);
    expect(metrics).toMatch(/session_summariser_latency_bucket\{/);
    // Both jobs summarised (the gate refused the second after): the counter sums what the local LLM reported.
    const reported = stack.llm.requests.reduce((sum, r) => sum + r.usage.prompt_tokens, 0);
    expect(reported).toBeGreaterThan(0);
    expect(metrics).toMatch(new RegExp(`session_summariser_prompt_tokens\\{[^}]*\\} ${reported}\\b`));
    expect(metrics).toMatch(/session_compaction_queue_depth_bucket\{/);
    expect(metrics).toMatch(/temporal_workflow_task_schedule_to_start_latency/);
  });

  it('drains on SIGTERM: an in-flight compaction completes and the process exits cleanly', async () => {
    stack = await startTestStack({ noWorker: true });
    const worker = await stack.spawnWorkerProcess();
    const id = uniqueId('term');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, conversation(12));
    stack.llm.script({ delayMs: 1500 });
    const pending = stack.client.compact(id);
    await stack.llm.waitForRequests(1);
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    worker.kill('SIGTERM');
    // The stopping worker polls no new tasks: the workflow task that answers the caller is
    // picked up by another worker, as in any deployment with more than one.
    await stack.startWorker();
    expect(await pending).toMatchObject({ outcome: 'compacted' });
    expect(await exited).toBe(0);
    const [row] = await auditRows(stack.db.db, id);
    expect(row).toMatchObject({ outcome: 'compacted', attempts: 1 });
  });
});

describe('payload encryption', () => {
  const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;

  it('keeps message text and request fields out of raw history, and decodes with old keys after rotation', async () => {
    const oldKey = key('k1');
    stack = await startTestStack({ env: { PAYLOAD_ENCRYPTION_KEYS: oldKey } });
    const id = uniqueId('enc');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, [...conversation(12), { role: 'user', content: 'PLAINTEXT-MESSAGE-7731' }]);
    const result = await stack.client.compact(id, { focusTopic: 'PLAINTEXT-FOCUS-4410' });
    expect(result.outcome).toBe('compacted');

    // Read history as an operator without the key would: no codec.
    const connection = await Connection.connect({ address: inject('stack').temporalAddress });
    try {
      const raw = new Client({ connection });
      const history = await raw.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
      const json = historyToJSON(history);
      expect(json).not.toContain('PLAINTEXT-FOCUS-4410');
      expect(json).not.toContain(Buffer.from('PLAINTEXT-FOCUS-4410').toString('base64').slice(0, 16));
      expect(json).not.toContain('PLAINTEXT-MESSAGE-7731');
      const accepted = history.events!.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes)!;
      const payload = accepted.workflowExecutionUpdateAcceptedEventAttributes!.acceptedRequest!.input!.args!.payloads![0] as Payload;
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);

      // Rotation: the new key encrypts, the old one still decrypts; without it, decoding fails.
      const rotated = new AesGcmPayloadCodec(parseEncryptionKeys(`${key('k2')},${oldKey}`));
      const [decoded] = await rotated.decode([payload]);
      expect(Buffer.from(decoded.data!).toString()).toContain('PLAINTEXT-FOCUS-4410');
      const [reencrypted] = await rotated.encode([decoded]);
      expect(Buffer.from(reencrypted.metadata!['encryption-key-id']!).toString()).toBe('k2');
      await expect(new AesGcmPayloadCodec(parseEncryptionKeys(key('k2'))).decode([payload])).rejects.toThrow(/key "k1"/);

      // Failures too: an LLM error body and the abort reason are encrypted, not plain text.
      const failing = uniqueId('enc');
      await stack!.client.createSession({ sessionId: failing });
      await stack!.client.append(failing, conversation(12));
      stack!.llm.script({ status: 400, errorMessage: 'PLAINTEXT-LLM-ERROR-9052' });
      const aborted = await stack!.client.compact(failing);
      // The reason is classified: the provider's status, never its body.
      expect(aborted).toMatchObject({ outcome: 'aborted', reason: expect.stringMatching(/^summariser failed: bad request \(HTTP 400\b/) });
      expect(aborted.reason).not.toContain('PLAINTEXT-LLM-ERROR-9052');
      const failedJson = historyToJSON(await raw.workflow.getHandle(lineageWorkflowId(failing)).fetchHistory());
      expect(failedJson).toContain('activityTaskFailedEventAttributes'); // the failure is in history...
      expect(failedJson).not.toContain('PLAINTEXT-LLM-ERROR-9052'); // ...but not readable
      expect(failedJson).not.toContain('scripted failure');
      expect(failedJson).not.toContain('HTTP 400'); // the classified message is encrypted too

      // The codec endpoint the Web UI uses.
      const server = createCodecServer(rotated, { corsOrigins: ['http://127.0.0.1:8233'], insecureNoAuth: true });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const { port } = server.address() as import('node:net').AddressInfo;
        const toJson = (p: Payload) => ({
          metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
          data: Buffer.from(p.data!).toString('base64'),
        });
        const response = await fetch(`http://127.0.0.1:${port}/decode`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:8233' },
          body: JSON.stringify({ payloads: [toJson(payload)] }),
        });
        expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
        const body = (await response.json()) as { payloads: Array<{ data: string }> };
        expect(Buffer.from(body.payloads[0].data, 'base64').toString()).toContain('PLAINTEXT-FOCUS-4410');
      } finally {
        server.close();
      }
    } finally {
      await connection.close();
    }
  });

  it('rejects keys that are not 32 bytes', () => {
    expect(() => parseEncryptionKeys(`k:${randomBytes(16).toString('base64')}`)).toThrow(/32 bytes/);
    expect(() => parseEncryptionKeys('nokey')).toThrow(/keyId:base64Key/);
  });
});
