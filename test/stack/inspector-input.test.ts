/**
 * The inspector over plain HTTP (no browser), against the real stack: a path segment or query
 * parameter that is not text (a NUL, malformed percent-encoding, bytes that are not UTF-8, an
 * encoded lone surrogate) is a 400 with a short plain message, never a 500; well-formed
 * encodings still work. Requests go out with node:http so the path is sent byte for byte (a
 * URL parser would normalise it).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopback, startInspector, type RunningInspector } from '../../src/inspector/server';
import { uniqueId, useTestStack } from '../support/stack';

// The inspector reads Postgres and queries workflows; no compaction runs here.
const stack = useTestStack({ noWorker: true });
let inspector: RunningInspector;

beforeAll(async () => {
  inspector = await startInspector({ client: stack().reader, temporalUiUrl: 'http://127.0.0.1:8233', bindAddress: '127.0.0.1:0' });
});

afterAll(async () => {
  await inspector?.close();
});

/** GET `rawPath` exactly as written. */
function get(rawPath: string): Promise<{ status: number; type: string; body: string }> {
  const { hostname, port } = new URL(inspector.url);
  return new Promise((resolve, reject) => {
    const request = http.get({ hostname, port, path: rawPath }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body: Buffer.concat(chunks).toString('utf8') }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

const UNREADABLE = [
  ['a NUL', '%00'],
  ['a NUL amid text', 'ab%00cd'],
  ['a malformed escape', '%zz'],
  ['a cut escape', '%E2%9C'],
  ['a lone % sign', '100%'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['an encoded low surrogate', '%ED%B0%80'],
  ['bytes that are not UTF-8', '%FF%FE'],
  ['an overlong encoding', '%C0%AF'],
];

describe('the inspector refuses a path or query that is not text', () => {
  it.each(UNREADABLE)('%s in a query parameter is a 400 (%s)', async (_what, part) => {
    for (const path of [`/?q=${part}`, `/?source=${part}`, `/?status=live&q=x${part}`, `/?${part}=1`, `/lineages/x?q=${part}`]) {
      const response = await get(path);
      expect(response.status, path).toBe(400);
      expect(response.type, path).toMatch(/^text\/plain/);
      expect(response.body, path).toMatch(/^Bad request: .{1,120}\.$/);
    }
  });

  it.each(UNREADABLE)('%s in a path segment is a 400 (%s)', async (_what, part) => {
    for (const path of [`/lineages/${part}`, `/lineages/${part}/live`, `/compactions/${part}`, `/nothing/${part}`]) {
      const response = await get(path);
      expect(response.status, path).toBe(400);
      expect(response.body, path).toMatch(/^Bad request: the path has /);
    }
  });

  it('names the parameter and what is wrong with it', async () => {
    expect((await get('/?q=%00')).body).toBe('Bad request: the query parameter "q" has a NUL character.');
    expect((await get('/?source=%zz')).body).toBe('Bad request: the query parameter "source" has malformed percent-encoding (or bytes that are not UTF-8).');
    expect((await get('/lineages/%00')).body).toBe('Bad request: the path has a NUL character.');
  });

  it('still serves well-formed encodings: UTF-8 text, +, %25, and ids with escapes', async () => {
    const id = uniqueId('enc:x'); // ':' is sent as %3A
    await stack().client.createSession({ sessionId: id, source: 'ünïcode' });
    const list = await get(`/?q=${encodeURIComponent(id)}&source=${encodeURIComponent('ünïcode')}`);
    expect(list.status).toBe(200);
    expect(list.body).toContain(`/lineages/${encodeURIComponent(id)}`);
    for (const path of ['/?q=a+b', '/?q=100%25', '/?q=%E2%9C%93', '/?q=', '/?q', '/?&&', '/?limit=5']) expect((await get(path)).status, path).toBe(200);
    expect((await get(`/lineages/${encodeURIComponent(id)}`)).status).toBe(200);
    expect((await get('/lineages/no-such%20lineage')).status).toBe(404);
    expect((await get('/healthz')).body).toBe('ok');
  });

  it('a limit that is not a plain whole number in range is a 400 too, not a 500', async () => {
    for (const limit of ['0x10', '1e3', '1.5', '-1', '0', '99999999999', 'abc']) {
      const response = await get(`/?limit=${limit}`);
      expect(response.status, limit).toBe(400);
      expect(response.body, limit).toContain('invalid limit');
    }
  });
});

describe('the inspector off loopback', () => {
  const token = 'a-token-of-twenty-chars';
  it('refuses to start on another address without a token, or with a short one', async () => {
    await expect(startInspector({ client: stack().reader, temporalUiUrl: 'http://x', bindAddress: '0.0.0.0:0' })).rejects.toThrow(
      /INSPECTOR_AUTH_TOKEN: is required to bind the inspector to 0\.0\.0\.0/,
    );
    await expect(startInspector({ client: stack().reader, temporalUiUrl: 'http://x', bindAddress: '0.0.0.0:0', authToken: 'short' })).rejects.toThrow(
      /at least 16 characters/,
    );
    expect(isLoopback('127.0.0.1') && isLoopback('::1') && isLoopback('localhost')).toBe(true);
    expect(isLoopback('0.0.0.0') || isLoopback('10.0.0.7') || isLoopback('::') || isLoopback('127.0.0.1.example.com')).toBe(false);
  });

  it('with a token, every page but the health check asks for it (Basic password or Bearer)', async () => {
    const guarded = await startInspector({ client: stack().reader, temporalUiUrl: 'http://x', bindAddress: '0.0.0.0:0', authToken: token });
    try {
      const { port } = new URL(guarded.url);
      const at = (path: string, authorization?: string) =>
        fetch(`http://127.0.0.1:${port}${path}`, { headers: authorization ? { authorization } : {} }).then(async (r) => ({
          status: r.status,
          challenge: r.headers.get('www-authenticate'),
          body: await r.text(),
        }));
      const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      const refused = await at('/');
      expect(refused.status).toBe(401);
      expect(refused.challenge).toMatch(/^Basic realm=/);
      expect(refused.body).not.toMatch(/lineage/i);
      expect((await at('/lineages/x', basic('ops', 'wrong-token-of-twenty'))).status).toBe(401);
      expect((await at('/', `Bearer ${token}x`)).status).toBe(401);
      expect((await at('/', basic('ops', token))).status).toBe(200);
      expect((await at('/', `Bearer ${token}`)).status).toBe(200);
      expect((await at('/healthz')).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
