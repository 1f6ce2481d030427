/**
 * A codec endpoint for the Temporal Web UI (and `temporal --codec-endpoint`): POST /decode
 * and /encode with `{ payloads: [...] }` in protobuf JSON form. Point the UI at it (the dev
 * stack does when PAYLOAD_ENCRYPTION_KEYS is set) to read encrypted histories in the browser;
 * the keys never leave this process. `npm run codec-server` runs it alone.
 *
 * It decrypts for whoever holds its bearer token (CODEC_AUTH_TOKEN), and refuses to start
 * without one unless told it is a developer's machine (CODEC_INSECURE_NO_AUTH=true, which
 * `npm run dev` sets when no token is configured: the Web UI of the dev server cannot send
 * one). Each request decodes in the namespace its X-Namespace header names (the Web UI and
 * the Temporal CLI send it), else the configured one: a payload bound to another namespace
 * does not decode (src/codec/aes-gcm-codec.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import { timingSafeEqual } from 'node:crypto';
import { type Config, loadConfig } from '../config';
import { InvalidInputError } from '../errors';
import { codecFromKeys, DEFAULT_NAMESPACE, type PayloadBinding } from './aes-gcm-codec';

/** A payload codec that takes the namespace it reads or writes in (AesGcmPayloadCodec). */
export interface NamespacedCodec {
  encode(payloads: Payload[], binding?: PayloadBinding): Promise<Payload[]>;
  decode(payloads: Payload[], binding?: PayloadBinding): Promise<Payload[]>;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

export interface CodecServerOptions {
  /** Web UI origins allowed to call (CORS); a request from any other origin is refused. */
  corsOrigins: string[];
  /** Every POST must carry `authorization: Bearer <token>` (the Web UI forwards it). Required unless insecureNoAuth. */
  authToken?: string;
  /** Serve without a token: only for a developer's machine (CODEC_INSECURE_NO_AUTH; `npm run dev` sets it without a token). */
  insecureNoAuth?: boolean;
  /** The namespace a request without an X-Namespace header decodes in (TEMPORAL_NAMESPACE). */
  namespace?: string;
  /** Serve /encode too; off by default (reading history needs only /decode). */
  enableEncode?: boolean;
  /** Largest request body read; a larger one is refused with 413. */
  maxBodyBytes?: number;
}

const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

class BodyTooLarge extends Error {}

function tokenMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer (.+)$/i.exec(header ?? '');
  if (!match) return false;
  const given = Buffer.from(match[1]);
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The shortest token accepted: a bearer token is the only thing between a caller and the plaintext. */
export const MIN_CODEC_TOKEN_LENGTH = 16;

export function createCodecServer(codec: NamespacedCodec, options: CodecServerOptions): http.Server {
  if (options.authToken === undefined && !options.insecureNoAuth) {
    throw new InvalidInputError(
      'CODEC_AUTH_TOKEN',
      'is required: the codec endpoint decrypts payloads for whoever calls it (CODEC_INSECURE_NO_AUTH=true serves without one, on a developer machine only)',
    );
  }
  if (options.authToken !== undefined && options.authToken.length < MIN_CODEC_TOKEN_LENGTH) {
    throw new InvalidInputError('CODEC_AUTH_TOKEN', `must be at least ${MIN_CODEC_TOKEN_LENGTH} characters`);
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const refuse = (res: http.ServerResponse, status: number, text: string) => res.writeHead(status, { 'content-type': 'text/plain' }).end(`${text}\n`);
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    // A browser sends Origin on cross-origin calls: only the configured Web UI may call.
    // Tools without a browser (temporal --codec-endpoint) send none and are let through.
    if (origin !== undefined && !options.corsOrigins.includes(origin)) {
      refuse(res, 403, `origin ${origin} is not allowed (CODEC_CORS_ORIGINS)`);
      return;
    }
    if (origin) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('vary', 'origin');
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('access-control-allow-credentials', 'true');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    const route = req.url?.split('?')[0];
    const routes = options.enableEncode ? ['/decode', '/encode'] : ['/decode'];
    if (req.method !== 'POST' || !route || !routes.includes(route)) {
      refuse(res, 404, `POST ${routes.join(' or ')}`);
      return;
    }
    if (options.authToken !== undefined && !tokenMatches(req.headers.authorization, options.authToken)) {
      res.setHeader('www-authenticate', 'Bearer');
      refuse(res, 401, 'a valid bearer token is required (CODEC_AUTH_TOKEN)');
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) {
      refuse(res, 413, `the body is larger than ${maxBodyBytes} bytes (CODEC_MAX_BODY_BYTES)`);
      req.resume();
      return;
    }
    try {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > maxBodyBytes) throw new BodyTooLarge(`the body is larger than ${maxBodyBytes} bytes (CODEC_MAX_BODY_BYTES)`);
        chunks.push(chunk as Buffer);
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
      const payloads = (body.payloads ?? []).map(fromJson);
      const header = req.headers['x-namespace'];
      const binding = { namespace: (Array.isArray(header) ? header[0] : header) || options.namespace || DEFAULT_NAMESPACE };
      const out = route === '/decode' ? await codec.decode(payloads, binding) : await codec.encode(payloads, binding);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        res.setHeader('connection', 'close');
        refuse(res, 413, error.message);
        req.resume();
        return;
      }
      refuse(res, 400, (error as Error).message);
    }
  };
  // A handler that throws anyway (a write after the headers went out) ends its own response;
  // it must not become an unhandled rejection, which would stop the server.
  return http.createServer((req, res) => {
    handle(req, res).catch(() => (res.headersSent ? res.destroy() : refuse(res, 500, 'internal error')));
  });
}

/** The codec server options from the configuration. */
export function codecServerOptions(config: Config): CodecServerOptions {
  return {
    corsOrigins: config.codecCorsOrigins,
    authToken: config.codecAuthToken,
    insecureNoAuth: config.codecInsecureNoAuth,
    namespace: config.temporal.namespace,
    enableEncode: config.codecEnableEncode,
    maxBodyBytes: config.codecMaxBodyBytes,
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const codec = codecFromKeys(config.payloadEncryptionKeys, config.temporal.namespace);
  if (!codec) throw new Error('PAYLOAD_ENCRYPTION_KEYS is not set: there is nothing to decode');
  const server = createCodecServer(codec, codecServerOptions(config));
  server.listen(config.codecServerPort, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    console.log(
      `codec server on http://127.0.0.1:${port} (CORS: ${config.codecCorsOrigins.join(', ')}; bearer token ${config.codecAuthToken ? 'required' : 'NOT required (CODEC_INSECURE_NO_AUTH)'}; /encode ${config.codecEnableEncode ? 'on' : 'off'})`,
    );
  });
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
