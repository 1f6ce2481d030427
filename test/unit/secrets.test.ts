/**
 * Secrets out of error text: the secrets a configuration holds and their redaction
 * (src/secrets.ts), and the summariser's classified failures (src/activities/summariser.ts)
 * against a local endpoint that answers every status with a body quoting the key it was sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlmSummariser } from '../../src/activities/summariser';
import { loadConfig } from '../../src/config';
import { redactSecrets, secretsFromEnv } from '../../src/secrets';

describe('secretsFromEnv and redactSecrets', () => {
  const payloadKey = Buffer.alloc(32, 7).toString('base64');
  const env = {
    OPENAI_API_KEY: 'sk-openai-AAAA1111',
    ANTHROPIC_API_KEY: 'sk-ant-BBBB2222',
    TEMPORAL_API_KEY: 'tmprl-CCCC3333',
    CODEC_AUTH_TOKEN: 'codec-DDDD4444',
    INSPECTOR_AUTH_TOKEN: 'inspect-EEEE5555',
    PAYLOAD_ENCRYPTION_KEYS: `k1:${payloadKey}`,
    DATABASE_URL: 'postgres://app:p%40ss-FFFF6666@db:5432/sessions',
  };

  it('collects every configured secret, whichever API is in use, the database password decoded too', () => {
    const secrets = secretsFromEnv(env);
    for (const secret of [
      'sk-openai-AAAA1111',
      'sk-ant-BBBB2222',
      'tmprl-CCCC3333',
      'codec-DDDD4444',
      'inspect-EEEE5555',
      payloadKey,
      `k1:${payloadKey}`,
      'p@ss-FFFF6666',
    ]) {
      expect(secrets).toContain(secret);
    }
    expect(loadConfig({ ...env, COMPACTION_API: 'chat' }).secrets).toContain('sk-ant-BBBB2222');
    expect(secretsFromEnv({ OPENAI_API_KEY: 'abc' })).toEqual([]); // too short to tell apart from text
  });

  it("collects the inspector's tenant tokens and their database passwords, and INSPECTOR_TENANTS is read with each tenant's two settings", () => {
    const tenantEnv = {
      INSPECTOR_TENANTS: 'acme, beta-eu',
      INSPECTOR_TENANT_ACME_TOKEN: 'acme-token-GGGG7777',
      INSPECTOR_TENANT_ACME_DATABASE_URL: 'postgres://acme_reader:acme-HHHH8888@db/sessions',
      INSPECTOR_TENANT_BETA_EU_TOKEN: 'beta-token-IIII9999',
      INSPECTOR_TENANT_BETA_EU_DATABASE_URL: 'postgres://beta_reader:beta-JJJJ0000@db/sessions',
    };
    expect(secretsFromEnv(tenantEnv)).toEqual(expect.arrayContaining(['acme-token-GGGG7777', 'acme-HHHH8888', 'beta-token-IIII9999', 'beta-JJJJ0000']));
    expect(loadConfig(tenantEnv).inspectorTenants).toEqual([
      { name: 'acme', token: 'acme-token-GGGG7777', databaseUrl: tenantEnv.INSPECTOR_TENANT_ACME_DATABASE_URL },
      { name: 'beta-eu', token: 'beta-token-IIII9999', databaseUrl: tenantEnv.INSPECTOR_TENANT_BETA_EU_DATABASE_URL },
    ]);
    expect(loadConfig({}).inspectorTenants).toEqual([]);
    expect(() => loadConfig({ ...tenantEnv, INSPECTOR_TENANT_BETA_EU_DATABASE_URL: '' })).toThrow(/INSPECTOR_TENANT_BETA_EU_DATABASE_URL is required/);
    expect(() => loadConfig({ INSPECTOR_TENANTS: 'Acme' })).toThrow(/INSPECTOR_TENANTS must name tenants/);
  });

  it('replaces a secret as it is, JSON-escaped and URL-encoded; leaves other text alone', () => {
    const secrets = secretsFromEnv({ OPENAI_API_KEY: 'sk-"quoted"/key+1' });
    expect(redactSecrets('Bearer sk-"quoted"/key+1 was refused', secrets)).toBe('Bearer [redacted] was refused');
    expect(redactSecrets(JSON.stringify({ key: 'sk-"quoted"/key+1' }), secrets)).toBe('{"key":"[redacted]"}');
    expect(redactSecrets(`?key=${encodeURIComponent('sk-"quoted"/key+1')}`, secrets)).toBe('?key=[redacted]');
    expect(redactSecrets('nothing secret here', secrets)).toBe('nothing secret here');
  });
});

describe('summariser failures: classified, with the HTTP status, never the provider body', () => {
  const key = 'sk-proj-ECHOED-9f8e7d6c5b4a';
  let server: http.Server;
  let url: string;
  /** The status to answer next, and the error body's code (OpenAI's `code`, Anthropic's `type`). */
  let next: { status: number; code?: string } = { status: 500 };
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const echoed = `${req.headers.authorization ?? ''} ${String(req.headers['x-api-key'] ?? '')}`.trim();
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { message: `PROVIDER-BODY: bad key ${echoed}`, type: next.code ?? 'error', code: next.code ?? null } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each([
    [401, undefined, 'SummariserAuthError', false, 'auth (HTTP 401'],
    [403, undefined, 'SummariserAuthError', false, 'auth (HTTP 403'],
    [429, 'insufficient_quota', 'SummariserQuotaError', false, 'quota (HTTP 429, insufficient_quota)'],
    [402, undefined, 'SummariserQuotaError', false, 'quota (HTTP 402'],
    [429, 'rate_limit_exceeded', 'SummariserRateLimited', true, 'rate limit (HTTP 429, rate_limit_exceeded)'],
    [408, undefined, 'SummariserServerError', true, 'timeout (HTTP 408'],
    [500, undefined, 'SummariserServerError', true, 'server error (HTTP 500'],
    [529, 'overloaded_error', 'SummariserServerError', true, 'server error (HTTP 529, overloaded_error)'],
    [400, 'invalid_request_error', 'SummariserInvalidRequest', false, 'bad request (HTTP 400, invalid_request_error)'],
    [404, undefined, 'SummariserInvalidRequest', false, 'bad request (HTTP 404'],
  ] as const)('%s %s: %s', async (status, code, type, retryable, message) => {
    for (const api of ['chat', 'anthropic'] as const) {
      next = { status, code };
      const summariser = createLlmSummariser(
        { api, apiKey: key, baseURL: api === 'chat' ? `${url}/v1` : url, model: 'm', stream: false },
        {
          stallTimeoutMs: 5000,
          requestTimeoutMs: 5000,
        },
      );
      const lines = ['user: hi'];
      const error = await summariser
        .summarise({ lines, force: false, chunk: { index: 1, count: 1 }, cut: false }, { signal: new AbortController().signal, onProgress: () => undefined })
        .catch((e: unknown) => e);
      expect(error, api).toBeInstanceOf(ApplicationFailure);
      const failure = error as ApplicationFailure;
      expect(failure.type, api).toBe(type);
      expect(failure.nonRetryable, api).toBe(!retryable);
      expect(failure.message, api).toContain(message);
      expect(failure.details?.[0], api).toMatchObject({ status });
      const text = JSON.stringify({ message: failure.message, details: failure.details, stack: failure.stack });
      expect(text, api).not.toContain(key);
      expect(text, api).not.toContain('PROVIDER-BODY');
    }
  });

  it('an error code that holds the key is left out', async () => {
    next = { status: 401, code: key };
    const summariser = createLlmSummariser(
      { api: 'chat', apiKey: key, baseURL: `${url}/v1`, model: 'm', stream: false },
      { stallTimeoutMs: 5000, requestTimeoutMs: 5000 },
    );
    const error = (await summariser
      .summarise(
        { lines: ['user: hi'], force: false, chunk: { index: 1, count: 1 }, cut: false },
        { signal: new AbortController().signal, onProgress: () => undefined },
      )
      .catch((e: unknown) => e)) as ApplicationFailure;
    expect(error.message).toBe('auth (HTTP 401): the endpoint refused the API key');
  });
});
