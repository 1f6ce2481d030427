/**
 * `sessions doctor`: checks what the service needs and says what is wrong in plain words.
 * Temporal (reachable, namespace, search attributes, a worker polling), Postgres (reachable,
 * migrations applied) and the LLM endpoint (or that the built-in summariser is in use).
 */
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { Pool } from 'pg';
import type { Config } from '../config';
import { MIGRATIONS_DIR } from '../db/database';
import { describeTemporalSecurity, clientConnectionOptions, type TemporalConnectionOptions } from '../temporal-connection';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { redactSecrets } from '../secrets';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const TIMEOUT_MS = 5000;

function reason(error: unknown): string {
  const e = error as { message?: string; code?: string; cause?: { message?: string } };
  return e.cause?.message ?? e.message ?? String(error);
}

/**
 * gRPC reports a failed TLS handshake only as "failed to connect", so doctor makes the same
 * handshake itself to learn why: it connects with the same CA, server name and client pair,
 * sends the HTTP/2 preface, and waits until the server answers (accepted: a refused client
 * certificate arrives as an alert after the client's side of a TLS 1.3 handshake is done)
 * or fails. Returns the TLS error, or undefined when the handshake is accepted.
 */
function probeTls(options: TemporalConnectionOptions, timeoutMs = TIMEOUT_MS): Promise<Error | undefined> {
  const at = options.address.lastIndexOf(':');
  const host = options.address.slice(0, at);
  const { tls: t = {} } = options;
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port: Number(options.address.slice(at + 1)),
      servername: t.serverNameOverride ?? (/^[\d.]+$|:/.test(host) ? undefined : host),
      ...(t.serverNameOverride
        ? { checkServerIdentity: (_host: string, cert: tls.PeerCertificate) => tls.checkServerIdentity(t.serverNameOverride!, cert) }
        : {}),
      ...(t.serverRootCACertificate ? { ca: t.serverRootCACertificate } : {}),
      ...(t.clientCertPair ? { cert: t.clientCertPair.crt, key: t.clientCertPair.key } : {}),
      ALPNProtocols: ['h2'],
    });
    const done = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(() => done(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    let handshakeDone = false;
    socket.on('secureConnect', () => {
      handshakeDone = true;
      // HTTP/2 client preface and an empty SETTINGS frame: a server that accepted us answers.
      socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    });
    socket.on('data', () => done(undefined));
    socket.on('error', (error) => done(error));
    socket.on('close', () =>
      done(
        handshakeDone
          ? Object.assign(new Error('the server closed the connection right after the TLS handshake, without a word'), { code: 'CLOSED_AFTER_HANDSHAKE' })
          : new Error('the server closed the connection during the TLS handshake'),
      ),
    );
  });
}

/**
 * Why a connection to Temporal failed, in terms of the setting to fix: the CA, the server
 * name, the client certificate, the API key, or plain reachability. `tlsError` is what
 * probeTls found, if it ran.
 */
function explainTemporalFailure(config: Pick<Config, 'temporal'>, error: unknown, tlsError?: Error): string {
  const { address, security } = config.temporal;
  const text = [] as string[];
  for (let e: unknown = tlsError ?? error; e; e = (e as { cause?: unknown }).cause) {
    text.push(`${String((e as { code?: unknown }).code ?? '')} ${String((e as { message?: unknown }).message ?? e)}`);
  }
  const all = text.join(' | ');
  const why = tlsError ? `${(tlsError as { code?: string }).code ?? ''} ${tlsError.message}`.trim() : reason(error);
  const code = (error as { code?: unknown }).code;
  if (!tlsError && (/UNAUTHENTICATED|PERMISSION_DENIED|unauthori[sz]ed|invalid api key/i.test(all) || code === 16 || code === 7)) {
    return security.apiKey
      ? `Temporal at ${address} rejected the API key (${why}). Check TEMPORAL_API_KEY and TEMPORAL_NAMESPACE (the key must grant access to it).`
      : `Temporal at ${address} refused the call as unauthenticated (${why}). It may need an API key (TEMPORAL_API_KEY) or a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH).`;
  }
  // Alerts the server sent, or a server that hangs up once it has seen our certificate (or
  // its absence): it did not accept the client certificate.
  if (
    /CLOSED_AFTER_HANDSHAKE|alert (certificate required|unknown ca|bad certificate|certificate unknown|handshake failure|access denied)|ALERT_(CERTIFICATE_REQUIRED|UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|HANDSHAKE_FAILURE)/i.test(
      all,
    )
  ) {
    return security.clientCertPath
      ? `the TLS handshake with ${address} failed: the server refused the client certificate ${security.clientCertPath} (${why}). Check that TEMPORAL_TLS_CLIENT_CERT_PATH is signed by a CA the server trusts.`
      : `the TLS handshake with ${address} failed: the server requires a client certificate (mTLS) (${why}). Set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH.`;
  }
  if (/ALTNAME|not valid for name|NotValidForName|does not match certificate/i.test(all)) {
    return `the server certificate at ${address} does not name the host you connect to (${why}). Set TEMPORAL_TLS_SERVER_NAME to the name in its certificate.`;
  }
  // Our own verification of the server's certificate failed.
  if (/UNABLE_TO_VERIFY|SELF_SIGNED|CERT_|certificate|UnknownIssuer|verify/i.test(all)) {
    return security.serverCaCertPath
      ? `the server certificate at ${address} is not signed by the CA in TEMPORAL_TLS_SERVER_CA_CERT_PATH (${security.serverCaCertPath}) (${why}).`
      : `the server certificate at ${address} is not trusted by the system's CAs (${why}). Set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that signed it.`;
  }
  if (tlsError && !/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|no answer within/i.test(all)) {
    return `no TLS connection to ${address} (${why}). Does the server speak TLS on this port? Unset TEMPORAL_TLS and the TEMPORAL_TLS_* variables for a plaintext server.`;
  }
  return `cannot reach Temporal at ${address} (${why}). Start it with \`npm run dev\`, or set TEMPORAL_ADDRESS.`;
}

async function checkTemporal(config: Config): Promise<Check[]> {
  const { address, namespace, taskQueue } = config.temporal;
  let options: TemporalConnectionOptions;
  try {
    options = clientConnectionOptions(config.temporal) as TemporalConnectionOptions;
  } catch (error) {
    return [{ name: 'temporal', ok: false, detail: `cannot use the connection settings: ${(error as Error).message}` }];
  }
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...options, connectTimeout: TIMEOUT_MS });
    await connection.ensureConnected();
  } catch (error) {
    const tlsError = config.temporal.security.tls ? await probeTls(options) : undefined;
    return [{ name: 'temporal', ok: false, detail: explainTemporalFailure(config, error, tlsError) }];
  }
  const checks: Check[] = [{ name: 'temporal', ok: true, detail: `reachable at ${address} (${describeTemporalSecurity(config.temporal)})` }];
  try {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      checks.push({ name: 'namespace', ok: true, detail: `namespace ${namespace} exists` });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 16 || code === 7) {
        checks.push({ name: 'namespace', ok: false, detail: explainTemporalFailure(config, error) });
        return checks;
      }
      checks.push({
        name: 'namespace',
        ok: false,
        detail: `namespace ${namespace} is missing (${reason(error)}). Create it: temporal operator namespace create --namespace ${namespace}`,
      });
      return checks;
    }
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((name) => !(name in (listed.customAttributes ?? {})));
    checks.push(
      missing.length === 0
        ? { name: 'search attributes', ok: true, detail: Object.keys(SEARCH_ATTRIBUTES).join(', ') }
        : {
            name: 'search attributes',
            ok: false,
            detail: `missing ${missing.join(', ')}: workflows cannot start without them. ${missing
              .map((n) => `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${SEARCH_ATTRIBUTES[n]}`)
              .join('; ')}`,
          },
    );
    const queue = await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 });
    const pollers = queue.pollers?.length ?? 0;
    checks.push(
      pollers > 0
        ? { name: 'worker', ok: true, detail: `${pollers} poller(s) on task queue ${taskQueue}` }
        : {
            name: 'worker',
            ok: false,
            detail: `no worker polls task queue ${taskQueue}: compactions will wait. Start one with \`npm run worker\` (or \`npm run dev\`).`,
          },
    );
  } finally {
    await connection.close();
  }
  return checks;
}

async function checkPostgres(config: Config): Promise<Check[]> {
  const url = new URL(config.databaseUrl);
  const where = `${url.host}${url.pathname}`;
  const pool = new Pool({ connectionString: config.databaseUrl, max: 1, connectionTimeoutMillis: TIMEOUT_MS });
  pool.on('error', () => undefined);
  try {
    await pool.query('select 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    return [
      { name: 'postgres', ok: false, detail: `cannot connect to Postgres at ${where} (${reason(error)}). Start it with \`npm run dev\`, or set DATABASE_URL.` },
    ];
  }
  const checks: Check[] = [{ name: 'postgres', ok: true, detail: `connected to ${where}` }];
  try {
    const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
    const applied = await pool.query('select count(*)::int as n from drizzle.__drizzle_migrations').then(
      (r) => r.rows[0].n as number,
      () => 0,
    );
    checks.push(
      applied >= journal.entries.length
        ? { name: 'migrations', ok: true, detail: `${applied} of ${journal.entries.length} applied` }
        : {
            name: 'migrations',
            ok: false,
            detail: `${applied} of ${journal.entries.length} applied. Run \`npm run db:migrate\` (a starting worker also applies them).`,
          },
    );
  } finally {
    await pool.end();
  }
  return checks;
}

async function checkLlm(config: Config): Promise<Check> {
  const { llm } = config;
  if (!llm.apiKey) return { name: 'summariser', ok: true, detail: 'no OPENAI_API_KEY: the built-in deterministic extractive summariser is used' };
  const where = llm.baseURL ?? 'the OpenAI API';
  // Loaded only here: `openai` is an optional peer dependency of the package (the worker's).
  let sdk: typeof import('openai');
  try {
    sdk = await import('openai');
  } catch {
    return { name: 'summariser', ok: false, detail: 'OPENAI_API_KEY is set but the openai package is not installed (npm install openai)' };
  }
  const { default: OpenAI, APIError } = sdk;
  const client = new OpenAI({ apiKey: llm.apiKey, baseURL: llm.baseURL, maxRetries: 0, timeout: TIMEOUT_MS });
  try {
    // The smallest real request: one token from the configured model.
    await client.chat.completions.create({ model: llm.model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 });
    return { name: 'summariser', ok: true, detail: `model ${llm.model} answers at ${where}` };
  } catch (error) {
    if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
      return { name: 'summariser', ok: false, detail: `${where} rejected the API key (${error.status}). Check OPENAI_API_KEY.` };
    }
    if (error instanceof APIError && error.status === 404) {
      return {
        name: 'summariser',
        ok: false,
        detail: `${where} does not know model ${llm.model} or has no chat completions endpoint (404). Check COMPACTION_MODEL and OPENAI_BASE_URL.`,
      };
    }
    if (error instanceof APIError && error.status !== undefined) {
      // The provider's message may quote the key it was sent (some gateways echo it).
      return { name: 'summariser', ok: false, detail: redactSecrets(`${where} answered ${error.status}: ${error.message}`, config.secrets) };
    }
    return { name: 'summariser', ok: false, detail: redactSecrets(`cannot reach ${where} (${reason(error)}). Check OPENAI_BASE_URL.`, config.secrets) };
  }
}

export async function runDoctor(config: Config): Promise<Check[]> {
  const [temporal, postgres, llm] = await Promise.all([checkTemporal(config), checkPostgres(config), checkLlm(config)]);
  return [...temporal, ...postgres, llm];
}
