/**
 * A codec endpoint for the Temporal Web UI (and `temporal --codec-endpoint`): POST /decode
 * and /encode with `{ payloads: [...] }` in protobuf JSON form. Point the UI at it (the dev
 * stack does when PAYLOAD_ENCRYPTION_KEYS is set) to read encrypted histories in the browser;
 * the keys never leave this process. `npm run codec-server` runs it alone.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { loadConfig } from '../config';
import { codecFromKeys } from './aes-gcm-codec';

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

export function createCodecServer(codec: PayloadCodec, options: { corsOrigins: string[] }): http.Server {
  return http.createServer(async (req, res) => {
    const origin = req.headers.origin;
    if (origin && options.corsOrigins.includes(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('access-control-allow-credentials', 'true');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    const route = req.url?.split('?')[0];
    if (req.method !== 'POST' || (route !== '/decode' && route !== '/encode')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('POST /decode or /encode\n');
      return;
    }
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { payloads?: JsonPayload[] };
      const payloads = (body.payloads ?? []).map(fromJson);
      const out = route === '/decode' ? await codec.decode(payloads) : await codec.encode(payloads);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
    }
  });
}

async function main(): Promise<void> {
  const config = loadConfig();
  const codec = codecFromKeys(config.payloadEncryptionKeys);
  if (!codec) throw new Error('PAYLOAD_ENCRYPTION_KEYS is not set: there is nothing to decode');
  const server = createCodecServer(codec, { corsOrigins: config.codecCorsOrigins });
  server.listen(config.codecServerPort, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    console.log(`codec server on http://127.0.0.1:${port} (CORS: ${config.codecCorsOrigins.join(', ')})`);
  });
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
