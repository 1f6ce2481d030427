/**
 * Payload encryption for everything the service puts in Temporal history (Update and signal
 * arguments, results, activity inputs and outputs): AES-256-GCM, a fresh 96-bit IV per
 * payload, the key id in the payload's metadata. The first configured key encrypts; every
 * configured key decrypts, so keys can be rotated without losing old histories.
 * Search attributes and UI summaries are not payloads and stay readable by design.
 */
import path from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PayloadKeysMissingError } from '../errors';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const CIPHER = 'encryption-cipher';
const CIPHER_NAME = 'AES256GCM';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** Parses `id:base64key[,id:base64key...]`; the first key is the one that encrypts. */
export function parseEncryptionKeys(spec: string): EncryptionKey[] {
  const keys = spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const at = part.indexOf(':');
      if (at <= 0) throw new Error('PAYLOAD_ENCRYPTION_KEYS entries must look like keyId:base64Key');
      const id = part.slice(0, at);
      const key = Buffer.from(part.slice(at + 1), 'base64');
      if (key.length !== 32) throw new Error(`encryption key ${id} must be 32 bytes (base64 of 32 random bytes), got ${key.length}`);
      return { id, key };
    });
  if (keys.length === 0) throw new Error('PAYLOAD_ENCRYPTION_KEYS holds no key');
  const seen = new Set<string>();
  for (const { id } of keys) {
    // Two keys under one id: a payload's key id would not say which key encrypted it.
    if (seen.has(id)) throw new Error(`PAYLOAD_ENCRYPTION_KEYS has the key id ${JSON.stringify(id)} twice; every key needs its own id`);
    seen.add(id);
  }
  return keys;
}

const text = (value: string) => new TextEncoder().encode(value);
const fromBytes = (value: Uint8Array | null | undefined) => (value ? Buffer.from(value).toString('utf8') : undefined);

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;

  constructor(private readonly keys: EncryptionKey[]) {
    if (keys.length === 0) throw new Error('AesGcmPayloadCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
    if (this.byId.size !== keys.length) throw new Error('AesGcmPayloadCodec: every key needs its own id');
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.keys[0];
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: text(ENCRYPTED_ENCODING), [KEY_ID]: text(id), [CIPHER]: text(CIPHER_NAME) }, data };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (fromBytes(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
      const keyId = fromBytes(payload.metadata?.[KEY_ID]);
      const key = keyId ? this.byId.get(keyId) : undefined;
      if (!key) throw new PayloadKeysMissingError(keyId ?? '');
      const data = Buffer.from(payload.data ?? new Uint8Array());
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plaintext);
    });
  }
}

/** The codec for a config's keys, or undefined when encryption is off. */
export function codecFromKeys(spec: string | undefined): AesGcmPayloadCodec | undefined {
  return spec ? new AesGcmPayloadCodec(parseEncryptionKeys(spec)) : undefined;
}

/**
 * The failure converter module used with encryption (plain JavaScript, loaded by path: the
 * build copies it beside the compiled codec and bundles it into the prebuilt workflow bundle).
 */
const FAILURE_CONVERTER_PATH = path.join(__dirname, 'failure-converter.js');

/**
 * The data converter of a worker or client when payloads are encrypted: the codec, and the
 * failure converter that moves failure messages into encrypted attributes. Undefined without keys.
 */
export function encryptedDataConverter(spec: string | undefined): { payloadCodecs: AesGcmPayloadCodec[]; failureConverterPath: string } | undefined {
  const codec = codecFromKeys(spec);
  return codec ? { payloadCodecs: [codec], failureConverterPath: FAILURE_CONVERTER_PATH } : undefined;
}

/**
 * The PayloadKeysMissingError behind `error`, if reading an answer failed for want of payload
 * keys: the SDK's default converter meets an encrypted payload ("Unknown encoding:
 * binary/encrypted") when the client has no keys, the codec a key id it lacks.
 */
export function payloadKeysMissing(error: unknown): PayloadKeysMissingError | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = error; typeof e === 'object' && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (e instanceof PayloadKeysMissingError) return e;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && message.includes(`Unknown encoding: ${ENCRYPTED_ENCODING}`)) return new PayloadKeysMissingError();
  }
  return undefined;
}
