/**
 * Connection options for Temporal, built from the configuration (src/config.ts reads the
 * environment): plain TCP for a dev server; TLS with the system's or a given CA, a server
 * name override, mTLS with a client certificate and key, and an API key (Temporal Cloud).
 * The worker (NativeConnection), SessionsClient and `sessions doctor` (Connection) all
 * connect through here, so the three agree on how to reach a secured cluster.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { TemporalConfig } from './config';

/** A connection setting that cannot be used: names the variable and says why. */
export class TemporalConnectionConfigError extends Error {
  constructor(
    public readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'TemporalConnectionConfigError';
  }
}

interface TlsOptions {
  serverNameOverride?: string;
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

/** The options both connection kinds share: address, TLS and API key. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TlsOptions;
  apiKey?: string;
}

function readPem(variable: string, file: string, expect: RegExp, what: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(file);
  } catch (error) {
    throw new TemporalConnectionConfigError(variable, `cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (!expect.test(content.toString('latin1'))) {
    throw new TemporalConnectionConfigError(variable, `${file} is not a PEM ${what}`);
  }
  return content;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----/;
const PEM_KEY = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/** Reads the files the configuration names; throws TemporalConnectionConfigError naming the variable. */
function temporalConnectionOptions(temporal: Pick<TemporalConfig, 'address' | 'security'>): TemporalConnectionOptions {
  const { security } = temporal;
  if (!security.tls) return { address: temporal.address };
  const tls: TlsOptions = {};
  if (security.serverName) tls.serverNameOverride = security.serverName;
  if (security.serverCaCertPath) {
    tls.serverRootCACertificate = readPem('TEMPORAL_TLS_SERVER_CA_CERT_PATH', security.serverCaCertPath, PEM_CERT, 'certificate');
  }
  if (security.clientCertPath && security.clientKeyPath) {
    tls.clientCertPair = {
      crt: readPem('TEMPORAL_TLS_CLIENT_CERT_PATH', security.clientCertPath, PEM_CERT, 'certificate'),
      key: readPem('TEMPORAL_TLS_CLIENT_KEY_PATH', security.clientKeyPath, PEM_KEY, 'private key'),
    };
  }
  return { address: temporal.address, tls, ...(security.apiKey ? { apiKey: security.apiKey } : {}) };
}

/** For `Connection.connect` (the client side: SessionsClient, doctor). */
export function clientConnectionOptions(temporal: Pick<TemporalConfig, 'address' | 'security'>): ConnectionOptions {
  return temporalConnectionOptions(temporal);
}

/** For `NativeConnection.connect` (the worker). */
export function nativeConnectionOptions(temporal: Pick<TemporalConfig, 'address' | 'security'>): NativeConnectionOptions {
  return temporalConnectionOptions(temporal);
}

/** One line for logs and doctor: how this process reaches Temporal, without secrets. */
export function describeTemporalSecurity(temporal: Pick<TemporalConfig, 'security'>): string {
  const { security } = temporal;
  if (!security.tls) return 'plaintext';
  const parts = ['TLS'];
  parts.push(security.serverCaCertPath ? `CA ${security.serverCaCertPath}` : 'system CAs');
  if (security.serverName) parts.push(`server name ${security.serverName}`);
  if (security.clientCertPath) parts.push(`mTLS client cert ${security.clientCertPath}`);
  if (security.apiKey) parts.push('API key');
  return parts.join(', ');
}
