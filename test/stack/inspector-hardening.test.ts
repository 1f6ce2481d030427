/**
 * The inspector against a web page its operator visits (issue 40 §3, §5), over plain HTTP
 * against the real stack: a request whose Host header names another site (DNS rebinding) is
 * refused with 421 before anything is read, loopback names, the configured names and the
 * health check pass; every response (pages, the live panel, 400, 401, 404, 421, 500) carries
 * the Content-Security-Policy, frame-ancestors 'none' and X-Frame-Options DENY, nosniff and
 * no-referrer; the policy's hashes are those of the page's own script and style.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInspectorApp, hostAllowed, hostName, startInspector, type RunningInspector } from '../../src/inspector/server';
import type { SessionsClient } from '../../src/client/sessions-client';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack({ noWorker: true });
let inspector: RunningInspector;
let guarded: RunningInspector;
const token = 'inspector-token-of-24ch';
let lineageId: string;

beforeAll(async () => {
  const common = { client: stack().reader, temporalUiUrl: 'http://127.0.0.1:8233' };
  inspector = await startInspector({ ...common, bindAddress: '127.0.0.1:0', allowedHosts: ['inspector.internal', 'Ops.Example.COM'] });
  guarded = await startInspector({ ...common, bindAddress: '127.0.0.1:0', authToken: token });
  lineageId = uniqueId('harden');
  await stack().client.createSession({ sessionId: lineageId, source: 'secret-source-5521' });
});

afterAll(async () => {
  await inspector?.close();
  await guarded?.close();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** GET `path` from `server` with exactly the Host header given (node:http sends it as written). */
function get(server: RunningInspector, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const request = http.get({ hostname, port, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

const port = (server: RunningInspector) => new URL(server.url).port;

function expectSecurityHeaders(answer: Answer | Response, what: string): void {
  const header = (name: string) => (answer instanceof Response ? answer.headers.get(name) : answer.headers[name]);
  const csp = String(header('content-security-policy'));
  expect(csp, what).toMatch(/(^|; )default-src 'none'(;|$)/);
  expect(csp, what).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
  expect(csp, what).toMatch(/(^|; )script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/); // no 'unsafe-inline'
  expect(csp, what).not.toContain('unsafe');
  expect(header('x-frame-options'), what).toBe('DENY');
  expect(header('x-content-type-options'), what).toBe('nosniff');
  expect(header('referrer-policy'), what).toBe('no-referrer');
}

describe('the inspector answers only to its own names (DNS rebinding)', () => {
  it('refuses a foreign Host with 421 and shows nothing of the data', async () => {
    const p = port(inspector);
    for (const host of [
      `attacker.example:${p}`,
      'attacker.example',
      `127.0.0.1.attacker.example:${p}`,
      `localhost.attacker.example:${p}`,
      `[::2]:${p}`,
      `0.0.0.0:${p}`,
    ]) {
      for (const path of ['/', `/lineages/${encodeURIComponent(lineageId)}`, `/lineages/${encodeURIComponent(lineageId)}/live`, '/compactions/x']) {
        const answer = await get(inspector, path, { host });
        expect(answer.status, `${host} ${path}`).toBe(421);
        expect(answer.body, host).toMatch(/^Misdirected request/);
        expect(answer.body, host).not.toContain(lineageId);
        expect(answer.body, host).not.toContain('secret-source-5521');
        expectSecurityHeaders(answer, `421 for ${host}`);
      }
    }
    // Even with the right token: the name is wrong whatever the credential.
    expect((await get(guarded, '/', { host: `attacker.example:${port(guarded)}`, authorization: `Bearer ${token}` })).status).toBe(421);
  });

  it('answers loopback names, the configured names (any case, any port, a trailing dot) and the health check from anywhere', async () => {
    const p = port(inspector);
    for (const host of [
      `127.0.0.1:${p}`,
      `localhost:${p}`,
      `localhost.:${p}`,
      `[::1]:${p}`,
      `127.8.9.10:${p}`,
      'inspector.internal',
      `ops.example.com:${p}`,
      'OPS.example.com',
    ]) {
      const answer = await get(inspector, '/', { host });
      expect(answer.status, host).toBe(200);
      expect(answer.body, host).toContain(lineageId);
    }
    expect((await get(inspector, '/healthz', { host: 'attacker.example' })).body).toBe('ok');
    // An unconfigured inspector does not answer to the names configured for another.
    expect((await get(guarded, '/', { host: 'inspector.internal', authorization: `Bearer ${token}` })).status).toBe(421);
  });

  it('reads host names as a browser sends them', () => {
    expect(['localhost:8234', 'LocalHost', '[::1]:80', 'a.example.', '127.0.0.1'].map(hostName)).toEqual([
      'localhost',
      'localhost',
      '::1',
      'a.example',
      '127.0.0.1',
    ]);
    expect(hostAllowed(undefined, [])).toBe(false);
    expect(hostAllowed('a.example:1', ['a.example'])).toBe(true);
    expect(hostAllowed('b.a.example', ['a.example'])).toBe(false);
  });
});

describe('the inspector sends its security headers on every response', () => {
  it('pages, the live panel, the health check, 400, 401 and 404', async () => {
    const id = encodeURIComponent(lineageId);
    for (const [path, status] of [
      ['/', 200],
      [`/lineages/${id}`, 200],
      [`/lineages/${id}/live`, 200],
      ['/healthz', 200],
      ['/?status=bogus', 400],
      ['/?q=%00', 400],
      ['/lineages/no-such-lineage', 404],
      ['/nothing-here', 404],
    ] as const) {
      const answer = await get(inspector, path);
      expect(answer.status, path).toBe(status);
      expectSecurityHeaders(answer, path);
    }
    const refused = await get(guarded, '/');
    expect(refused.status).toBe(401);
    expectSecurityHeaders(refused, '401');
  });

  it('a 500 too (the database unreadable)', async () => {
    const failing = { operator: { listLineages: () => Promise.reject(new Error('connection refused')) } } as unknown as SessionsClient;
    const app = createInspectorApp({ client: failing, temporalUiUrl: 'http://x' });
    const errors = console.error;
    console.error = () => {};
    try {
      const answer = await app.fetch(new Request('http://127.0.0.1:8234/', { headers: { host: '127.0.0.1:8234' } }));
      expect(answer.status).toBe(500);
      expectSecurityHeaders(answer, '500');
    } finally {
      console.error = errors;
    }
  });

  it("allows exactly the page's own script and style, by hash", async () => {
    const answer = await get(inspector, `/lineages/${encodeURIComponent(lineageId)}`);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
    const scripts = [...answer.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
    const styles = [...answer.body.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    expect([scripts.length, styles.length]).toEqual([1, 1]);
    const csp = String(answer.headers['content-security-policy']);
    expect(csp).toContain(`script-src ${hash(scripts[0])}`);
    expect(csp).toContain(`style-src ${hash(styles[0])}`);
    expect(answer.body).not.toMatch(/\son[a-z]+=|\sstyle=|javascript:/i); // no inline handler or style the policy would block
  });
});
