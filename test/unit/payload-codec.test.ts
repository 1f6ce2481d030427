/**
 * The payload codec and the codec endpoint, trying to break out (issue 40 §3, §5): a payload
 * copied to another namespace or another workflow does not decode, nor one whose binding was
 * edited; a payload too short to hold an IV and a whole tag is refused as such; a payload an
 * earlier release wrote (envelope 1) still decodes; the endpoint will not start without its
 * token (unless told it is a developer's machine), answers 401 without it, and decodes in the
 * namespace of the request's X-Namespace header only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import { AesGcmPayloadCodec, boundWorkflowMatches, ENVELOPE_VERSION } from '../../src/codec/aes-gcm-codec';
import { createCodecServer } from '../../src/codec/codec-server';
import { loadConfig } from '../../src/config';
import { PayloadDecryptionError } from '../../src/errors';

const KEY = { id: 'k1', key: Buffer.alloc(32, 1) };
const plain = (text: string): Payload => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(text)) });
const textOf = (payload: Payload) => JSON.parse(Buffer.from(payload.data!).toString('utf8')) as string;
const meta = (payload: Payload, name: string) => Buffer.from(payload.metadata![name]!).toString('utf8');
const lineage = (id: string) => ({ type: 'workflow' as const, namespace: 'prod', workflowId: `session-lineage/${id}` });

/**
 * A payload the release before envelope 2 wrote (commit 4c95006, `AesGcmPayloadCodec.encode`
 * with the key below, 32 bytes of 7): no envelope version, no AAD. Never re-generate it.
 */
const RELEASE_0_KEY = { id: 'release-0', key: Buffer.from('BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=', 'base64') };
const RELEASE_0_PAYLOAD = {
  metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==', 'encryption-key-id': 'cmVsZWFzZS0w', 'encryption-cipher': 'QUVTMjU2R0NN' },
  data: 'gYgpuSKTQTF5o1rUMeiOdYrbjE1Ch8HDufzu3cFZRIviF0oHRpHzLWqW5/BPNNJOhvHyQS1DNJRld6SxZ9xaR1K1aN0ycIyQoa2P9mzvGQaIrUN0gML1gnF+S4fUdQ==',
};
const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data, 'base64'),
});
const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v!).toString('base64')])),
  data: Buffer.from(p.data!).toString('base64'),
});

describe('the payload codec binds each payload to its namespace and workflow', () => {
  const codec = new AesGcmPayloadCodec([KEY], { namespace: 'prod' });

  it('writes envelope 2 with the bound workflow in the metadata, and reads it back where it belongs', async () => {
    const [encoded] = await codec.encode([plain('hello')], lineage('a'));
    expect(meta(encoded, 'encryption-envelope')).toBe(String(ENVELOPE_VERSION));
    expect(meta(encoded, 'encryption-workflow-id')).toBe('session-lineage/a');
    expect(textOf((await codec.decode([encoded], lineage('a')))[0])).toBe('hello');
    // An activity of that workflow reads it too, and so does a reader that knows only the namespace (the codec endpoint).
    expect(textOf((await codec.decode([encoded], { type: 'activity', namespace: 'prod', workflowId: 'session-lineage/a', isLocal: false }))[0])).toBe('hello');
    expect(textOf((await codec.decode([encoded], { namespace: 'prod' }))[0])).toBe('hello');
    // Without a context the codec's own namespace applies.
    expect(textOf((await codec.decode([encoded]))[0])).toBe('hello');
  });

  it('refuses a payload moved to another namespace', async () => {
    const [encoded] = await codec.encode([plain('secret')], lineage('a'));
    await expect(codec.decode([encoded], { ...lineage('a'), namespace: 'staging' })).rejects.toThrow(PayloadDecryptionError);
    await expect(codec.decode([encoded], { namespace: 'staging' })).rejects.toThrow(/in the namespace "staging"/);
    // A codec configured for another namespace reads it with no context as that namespace: refused.
    await expect(new AesGcmPayloadCodec([KEY], { namespace: 'staging' }).decode([encoded])).rejects.toThrow(PayloadDecryptionError);
  });

  it("refuses a payload moved into another lineage's workflow, and an edited binding", async () => {
    const [encoded] = await codec.encode([plain('secret')], lineage('chat'));
    await expect(codec.decode([encoded], lineage('other'))).rejects.toThrow(/belongs to the workflow "session-lineage\/chat", not "session-lineage\/other"/);
    await expect(codec.decode([encoded], lineage('chat-2'))).rejects.toThrow(PayloadDecryptionError);
    // Rewriting the recorded workflow id to the reader's breaks the tag: the id is authenticated.
    const edited = { ...encoded, metadata: { ...encoded.metadata, 'encryption-workflow-id': Buffer.from('session-lineage/other') } };
    await expect(codec.decode([edited], lineage('other'))).rejects.toThrow(/does not authenticate/);
    // So does dropping it (claiming a namespace-only binding).
    const { 'encryption-workflow-id': _dropped, ...unbound } = encoded.metadata!;
    await expect(codec.decode([{ ...encoded, metadata: unbound }], lineage('other'))).rejects.toThrow(/does not authenticate/);
    // Or passing it off as envelope 1 (no AAD).
    const { 'encryption-envelope': _version, ...v1 } = encoded.metadata!;
    await expect(codec.decode([{ ...encoded, metadata: v1 }], lineage('chat'))).rejects.toThrow(/does not authenticate/);
  });

  it("lets a Temporal Schedule's run read the arguments its schedule encoded, and nothing else by prefix", () => {
    expect(boundWorkflowMatches('retention', 'retention-2026-01-01T00:00:00Z')).toBe(true);
    expect(boundWorkflowMatches('retention', 'retention')).toBe(true);
    expect(boundWorkflowMatches('session-lineage/chat', 'session-lineage/chat-2')).toBe(false);
    expect(boundWorkflowMatches('session-lineage/chat', 'session-lineage/chat-2026-01-01')).toBe(false);
  });

  it('refuses a payload shorter than an IV and a full 16-byte tag, as such', async () => {
    const [encoded] = await codec.encode([plain('x')], lineage('a'));
    for (const length of [0, 12, 16, 27]) {
      const short = { ...encoded, data: Buffer.from(encoded.data!).subarray(0, length) };
      await expect(codec.decode([short], lineage('a')), String(length)).rejects.toThrow(/fewer than an IV and a full authentication tag \(28\)/);
    }
    // An old-format payload cut short is refused the same way.
    const old = fromJson(RELEASE_0_PAYLOAD);
    await expect(new AesGcmPayloadCodec([RELEASE_0_KEY]).decode([{ ...old, data: Buffer.from(old.data!).subarray(0, 20) }])).rejects.toThrow(
      /fewer than an IV/,
    );
    // A cut tag on a longer payload does not authenticate.
    await expect(codec.decode([{ ...encoded, data: Buffer.from(encoded.data!).subarray(0, encoded.data!.length - 4) }], lineage('a'))).rejects.toThrow(
      /does not authenticate/,
    );
  });

  it('refuses an envelope version it does not know', async () => {
    const [encoded] = await codec.encode([plain('x')], lineage('a'));
    const future = { ...encoded, metadata: { ...encoded.metadata, 'encryption-envelope': Buffer.from('3') } };
    await expect(codec.decode([future], lineage('a'))).rejects.toThrow(/envelope version "3" is unknown/);
  });

  it('still decodes what an earlier release wrote (envelope 1), in any context, with its key among the configured ones', async () => {
    const rotated = new AesGcmPayloadCodec([KEY, RELEASE_0_KEY], { namespace: 'prod' });
    for (const context of [undefined, lineage('any'), { namespace: 'elsewhere' }]) {
      const [decoded] = await rotated.decode([fromJson(RELEASE_0_PAYLOAD)], context);
      expect(JSON.parse(Buffer.from(decoded.data!).toString('utf8'))).toEqual({ text: 'written by an earlier release' });
    }
    // Re-encoded, it is envelope 2 under the first key.
    const [decoded] = await rotated.decode([fromJson(RELEASE_0_PAYLOAD)]);
    const [again] = await rotated.encode([decoded], lineage('any'));
    expect([meta(again, 'encryption-key-id'), meta(again, 'encryption-envelope')]).toEqual(['k1', '2']);
  });
});

describe('the codec endpoint', () => {
  const origin = 'http://127.0.0.1:8233';
  const token = 'codec-token-of-24-chars!';
  const codec = new AesGcmPayloadCodec([KEY], { namespace: 'prod' });
  const servers: http.Server[] = [];
  afterEach(() => {
    for (const server of servers.splice(0)) server.close();
  });
  const start = async (server: http.Server) => {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const decode = (url: string, payload: Payload, headers: Record<string, string>) =>
    fetch(`${url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin, ...headers },
      body: JSON.stringify({ payloads: [toJson(payload)] }),
    });

  it('will not start without a token unless told it is a developer machine, nor with a short one', () => {
    expect(() => createCodecServer(codec, { corsOrigins: [origin] })).toThrow(/CODEC_AUTH_TOKEN: is required/);
    expect(() => createCodecServer(codec, { corsOrigins: [origin], authToken: 'short' })).toThrow(/at least 16 characters/);
    expect(() => createCodecServer(codec, { corsOrigins: [origin], insecureNoAuth: true }).close()).not.toThrow();
    expect(loadConfig({}).codecInsecureNoAuth).toBe(false);
    expect(loadConfig({ CODEC_INSECURE_NO_AUTH: 'true' }).codecInsecureNoAuth).toBe(true);
  });

  it('no token, no decode: 401 and not a byte of the plaintext', async () => {
    const url = await start(createCodecServer(codec, { corsOrigins: [origin], authToken: token, namespace: 'prod' }));
    const [encoded] = await codec.encode([plain('PLAINTEXT-4412')], lineage('a'));
    for (const headers of [
      {} as Record<string, string>,
      { authorization: `Bearer ${token.slice(0, -1)}` },
      { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` },
    ]) {
      const refused = await decode(url, encoded, headers);
      expect(refused.status).toBe(401);
      expect(await refused.text()).not.toContain('PLAINTEXT');
    }
    const ok = await decode(url, encoded, { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(JSON.stringify(await ok.json())).toContain(Buffer.from('"PLAINTEXT-4412"').toString('base64'));
  });

  it("decodes in the namespace of the request's X-Namespace header: a payload of another namespace is refused", async () => {
    const url = await start(createCodecServer(codec, { corsOrigins: [origin], authToken: token, namespace: 'prod' }));
    const auth = { authorization: `Bearer ${token}` };
    const [encoded] = await codec.encode([plain('PLAINTEXT-9907')], lineage('a'));
    expect((await decode(url, encoded, { ...auth, 'x-namespace': 'prod' })).status).toBe(200);
    expect((await decode(url, encoded, auth)).status).toBe(200); // no header: the configured namespace
    const moved = await decode(url, encoded, { ...auth, 'x-namespace': 'staging' });
    expect(moved.status).toBe(400);
    const body = await moved.text();
    expect(body).toMatch(/does not authenticate under its key in the namespace "staging"/);
    expect(body).not.toContain('PLAINTEXT');
    // The endpoint's own default namespace is not another namespace's.
    const elsewhere = await start(createCodecServer(codec, { corsOrigins: [origin], authToken: token, namespace: 'staging' }));
    expect((await decode(elsewhere, encoded, auth)).status).toBe(400);
  });
});
