/**
 * Production connections: options built from the environment (unit), and real TLS and mTLS
 * through a local TLS-terminating proxy in front of the dev server (the dev server has no
 * TLS flags): the worker and SessionsClient compact through it, a wrong CA and a missing or
 * untrusted client certificate are refused, and doctor names the setting at fault.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { runDoctor } from '../../src/cli/doctor';
import { loadConfig, loadTemporalSecurity } from '../../src/config';
import { openDatabase } from '../../src/db/database';
import { createSessionWorker } from '../../src/worker';
import { clientConnectionOptions, describeTemporalSecurity, nativeConnectionOptions, TemporalConnectionConfigError } from '../../src/temporal-connection';
import { conversation, startTestStack, type TestStack, uniqueId } from '../support/stack';
import { makeTestPki, startTlsProxy, type TestPki, type TlsProxy } from '../support/tls-proxy';

let pki: TestPki;
beforeAll(() => {
  pki = makeTestPki();
});
afterAll(() => pki?.remove());

describe('connection options from the environment', () => {
  it('is plaintext with no TLS settings', () => {
    expect(loadTemporalSecurity({})).toEqual({ tls: false });
    expect(clientConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'h:1' }).temporal)).toEqual({ address: 'h:1' });
  });

  it('reads the CA, server name, client pair and API key, and implies TLS', () => {
    const temporal = loadConfig({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_API_KEY: 'secret-key',
      TEMPORAL_NAMESPACE: 'ns.acct',
    }).temporal;
    expect(temporal.namespace).toBe('ns.acct');
    const options = nativeConnectionOptions(temporal);
    expect(options.address).toBe('ns.acct.tmprl.cloud:7233');
    expect(options.apiKey).toBe('secret-key');
    const tlsOptions = options.tls as { serverNameOverride: string; serverRootCACertificate: Buffer; clientCertPair: { crt: Buffer; key: Buffer } };
    expect(tlsOptions.serverNameOverride).toBe('temporal.internal');
    expect(tlsOptions.serverRootCACertificate.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(tlsOptions.clientCertPair.crt.toString()).toMatch(/BEGIN CERTIFICATE/);
    expect(tlsOptions.clientCertPair.key.toString()).toMatch(/PRIVATE KEY/);
    expect(describeTemporalSecurity({ security: temporal.security })).not.toMatch(/secret-key/);
  });

  it('an API key alone is TLS with the system CAs (Temporal Cloud)', () => {
    const temporal = loadConfig({ TEMPORAL_API_KEY: 'k' }).temporal;
    expect(clientConnectionOptions(temporal)).toEqual({ address: '127.0.0.1:7233', tls: {}, apiKey: 'k' });
    expect(clientConnectionOptions(loadConfig({ TEMPORAL_TLS: 'true' }).temporal)).toEqual({ address: '127.0.0.1:7233', tls: {} });
  });

  it('refuses contradictory or half settings, naming the variable', () => {
    expect(() => loadTemporalSecurity({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert })).toThrow(
      /both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/,
    );
    expect(() => loadTemporalSecurity({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toThrow(/TEMPORAL_TLS=false contradicts/);
    expect(() => loadTemporalSecurity({ TEMPORAL_TLS: 'maybe' })).toThrow(/TEMPORAL_TLS must be true or false/);
    const missing = loadConfig({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(pki.dir, 'nope.crt') }).temporal;
    expect(() => clientConnectionOptions(missing)).toThrow(TemporalConnectionConfigError);
    expect(() => clientConnectionOptions(missing)).toThrow(/TEMPORAL_TLS_SERVER_CA_CERT_PATH: cannot read .*nope\.crt \(ENOENT\)/);
    const notPem = path.join(pki.dir, 'not-a-key.pem');
    writeFileSync(notPem, 'hello');
    const badKey = loadConfig({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert, TEMPORAL_TLS_CLIENT_KEY_PATH: notPem }).temporal;
    expect(() => clientConnectionOptions(badKey)).toThrow(/TEMPORAL_TLS_CLIENT_KEY_PATH: .*not-a-key\.pem is not a PEM private key/);
  });
});

describe('TLS and mTLS against a real server (through a TLS-terminating proxy)', () => {
  let stack: TestStack;
  let mtls: TlsProxy;
  let serverTls: TlsProxy;
  const tlsEnv = (proxy: TlsProxy, extra: Record<string, string> = {}) => ({
    ...stack.env,
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
    ...extra,
  });
  const mtlsEnv = (extra: Record<string, string> = {}) =>
    tlsEnv(mtls, { TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert, TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey, ...extra });

  beforeAll(async () => {
    stack = await startTestStack({ noWorker: true });
    mtls = await startTlsProxy(pki, inject('stack').temporalAddress, { requireClientCert: true });
    serverTls = await startTlsProxy(pki, inject('stack').temporalAddress, { requireClientCert: false });
  });
  afterAll(async () => {
    await mtls?.close();
    await serverTls?.close();
    await stack?.close();
  });

  it('the worker and SessionsClient compact over mTLS configured only by the environment', async () => {
    const config = loadConfig(mtlsEnv());
    const database = openDatabase(config.databaseUrl);
    // No connection passed in: each builds its own from the configuration.
    const worker = await createSessionWorker({ config, database, workflowBundlePath: inject('stack').workflowBundlePath, log: () => undefined });
    const running = worker.run();
    const client = await SessionsClient.connect({ config, database, settings: { retryInitialIntervalMs: 200 } });
    try {
      const sessionId = uniqueId('mtls');
      await client.createSession({ sessionId });
      await client.append(sessionId, conversation(20));
      const result = await client.compact(sessionId, { requestId: 'over-mtls' });
      expect(result.outcome).toBe('compacted');
      expect(result.sessionId).not.toBe(sessionId);
    } finally {
      await client.close();
      worker.shutdown();
      await running;
      await database.close();
    }
    // The proxy's own ledger: every connection came through TLS with our client certificate.
    expect(mtls.accepted.length).toBeGreaterThanOrEqual(2);
    expect(new Set(mtls.accepted)).toEqual(new Set(['client']));
    const doctor = await runDoctor(loadConfig(mtlsEnv()));
    expect(doctor[0]).toMatchObject({ name: 'temporal', ok: true, detail: expect.stringMatching(/mTLS client cert/) });
    expect(doctor.find((c) => c.name === 'namespace')).toMatchObject({ ok: true });
  });

  it('TLS with the server CA only (no client certificate) connects when the server does not ask for one', async () => {
    const before = serverTls.accepted.length;
    const connection = await Connection.connect(clientConnectionOptions(loadConfig(tlsEnv(serverTls)).temporal));
    try {
      await connection.workflowService.describeNamespace({ namespace: 'default' });
    } finally {
      await connection.close();
    }
    expect(serverTls.accepted.length).toBeGreaterThan(before);
  });

  it('a wrong CA is refused by the client, and doctor says the CA is at fault', async () => {
    const config = loadConfig(mtlsEnv({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.otherCaCert }));
    const accepted = mtls.accepted.length;
    await expect(NativeConnection.connect(nativeConnectionOptions(config.temporal))).rejects.toThrow();
    const [temporal] = await runDoctor(config);
    expect(temporal).toMatchObject({ name: 'temporal', ok: false, detail: expect.stringMatching(/not signed by the CA in TEMPORAL_TLS_SERVER_CA_CERT_PATH/) });
    expect(mtls.accepted.length).toBe(accepted);
  });

  it('a missing client certificate is refused by the server, and doctor says mTLS needs one', async () => {
    const config = loadConfig(tlsEnv(mtls));
    const refused = mtls.refused.length;
    const [temporal] = await runDoctor(config);
    expect(temporal).toMatchObject({ name: 'temporal', ok: false, detail: expect.stringMatching(/requires a client certificate \(mTLS\)/) });
    await expect(NativeConnection.connect(nativeConnectionOptions(config.temporal))).rejects.toThrow();
    // The fault landed where we meant it: the proxy refused handshakes for want of a certificate.
    expect(mtls.refused.length).toBeGreaterThan(refused);
    expect(mtls.refused.slice(refused).join(' ')).toMatch(/certificate/i);
  });

  it('a client certificate from an untrusted CA is refused by the server', async () => {
    const config = loadConfig(mtlsEnv({ TEMPORAL_TLS_CLIENT_CERT_PATH: pki.strangerCert, TEMPORAL_TLS_CLIENT_KEY_PATH: pki.strangerKey }));
    const refused = mtls.refused.length;
    const [temporal] = await runDoctor(config);
    expect(temporal).toMatchObject({ name: 'temporal', ok: false, detail: expect.stringMatching(/refused the client certificate .*stranger\.crt/) });
    expect(mtls.refused.length).toBeGreaterThan(refused);
  });

  it('plaintext against a TLS port fails, and doctor says so', async () => {
    const [temporal] = await runDoctor(loadConfig({ ...stack.env, TEMPORAL_ADDRESS: mtls.address }));
    expect(temporal).toMatchObject({ name: 'temporal', ok: false });
    const [missingFile] = await runDoctor(loadConfig(mtlsEnv({ TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(pki.dir, 'gone.key') })));
    expect(missingFile).toMatchObject({ name: 'temporal', ok: false, detail: expect.stringMatching(/TEMPORAL_TLS_CLIENT_KEY_PATH: cannot read/) });
  });
});
