/**
 * Payload encryption for everything the service puts in Temporal history (Update and signal
 * arguments, results, activity inputs and outputs): AES-256-GCM, a fresh 96-bit IV per
 * payload, the key id in the payload's metadata. The first configured key encrypts; every
 * configured key decrypts, so keys can be rotated without losing old histories.
 * Search attributes and UI summaries are not payloads and stay readable by design.
 *
 * Envelope 2 (what this release writes) binds each payload to where it belongs, as GCM
 * additional authenticated data: its namespace (the decoder's own: the SDK's serialization
 * context, the codec endpoint's X-Namespace, else the configured namespace) and the workflow
 * whose payload it is (recorded in the metadata; checked against the SDK's context when the
 * decoder has one, see `boundWorkflowMatches`). A payload copied into another namespace or
 * another lineage's workflow does not decode. Envelope 1 (earlier releases: no version field,
 * no AAD) still decodes, so old histories stay readable; docs/security.md says how to retire it.
 */
import path from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PayloadDecryptionError, PayloadKeysMissingError } from '../errors';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const CIPHER = 'encryption-cipher';
/** The envelope's version; absent: envelope 1. */
const ENVELOPE = 'encryption-envelope';
/** The workflow id a payload is bound to (envelope 2); absent: bound to its namespace only. */
const BOUND_WORKFLOW = 'encryption-workflow-id';
const CIPHER_NAME = 'AES256GCM';
export const ENVELOPE_VERSION = 2;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** The namespace a codec binds to when neither the SDK nor the caller names one. */
export const DEFAULT_NAMESPACE = 'default';

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/**
 * Where a payload is read or written: the SDK's serialization context, or what the codec
 * endpoint knows (the namespace of the X-Namespace header, no workflow).
 */
export type PayloadBinding = SerializationContext | { namespace: string; workflowId?: string };

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

/**
 * The additional authenticated data of an envelope-2 payload: the version, the key id, the
 * namespace and the bound workflow id, each length-prefixed so no two bindings share bytes.
 */
function additionalData(keyId: string, namespace: string, workflowId: string | undefined): Buffer {
  const field = (value: string) => {
    const bytes = Buffer.from(value, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  return Buffer.concat([field(`session-compaction payload v${ENVELOPE_VERSION}`), field(keyId), field(namespace), field(workflowId ?? '')]);
}

/**
 * Temporal Schedules start their runs as `<the action's workflow id>-<the scheduled time>`
 * (e.g. `retention-2026-01-01T00:00:00Z`), while the client encoded the action's arguments for
 * the action's workflow id: such a run may read a payload bound to its schedule's id.
 */
const SCHEDULED_RUN_SUFFIX = /^-\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** Whether a payload bound to `bound` may be read by the workflow `reader` (its own, or a scheduled run of it). */
export function boundWorkflowMatches(bound: string, reader: string): boolean {
  return reader === bound || (reader.startsWith(bound) && SCHEDULED_RUN_SUFFIX.test(reader.slice(bound.length)));
}

export interface AesGcmPayloadCodecOptions {
  /** The namespace payloads are bound to when the SDK gives no context (the process's TEMPORAL_NAMESPACE). */
  namespace?: string;
}

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;
  private readonly namespace: string;

  constructor(
    private readonly keys: EncryptionKey[],
    options: AesGcmPayloadCodecOptions = {},
  ) {
    if (keys.length === 0) throw new Error('AesGcmPayloadCodec needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
    if (this.byId.size !== keys.length) throw new Error('AesGcmPayloadCodec: every key needs its own id');
    this.namespace = options.namespace ?? DEFAULT_NAMESPACE;
  }

  async encode(payloads: Payload[], context?: PayloadBinding): Promise<Payload[]> {
    const { id, key } = this.keys[0];
    const namespace = context?.namespace || this.namespace;
    const workflowId = context?.workflowId || undefined;
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(additionalData(id, namespace, workflowId));
      const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
      const data = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: text(ENCRYPTED_ENCODING),
          [KEY_ID]: text(id),
          [CIPHER]: text(CIPHER_NAME),
          [ENVELOPE]: text(String(ENVELOPE_VERSION)),
          ...(workflowId ? { [BOUND_WORKFLOW]: text(workflowId) } : {}),
        },
        data,
      };
    });
  }

  async decode(payloads: Payload[], context?: PayloadBinding): Promise<Payload[]> {
    const namespace = context?.namespace || this.namespace;
    return payloads.map((payload) => {
      if (fromBytes(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
      const keyId = fromBytes(payload.metadata?.[KEY_ID]);
      const key = keyId ? this.byId.get(keyId) : undefined;
      if (!key || !keyId) throw new PayloadKeysMissingError(keyId ?? '');
      const envelope = fromBytes(payload.metadata?.[ENVELOPE]) ?? '1';
      if (envelope !== '1' && envelope !== String(ENVELOPE_VERSION))
        throw new PayloadDecryptionError(`its envelope version ${JSON.stringify(envelope)} is unknown to this release`);
      const data = Buffer.from(payload.data ?? new Uint8Array());
      // A payload without room for its IV and a whole tag is not one this codec wrote; a short
      // tag would leave GCM's authentication far weaker than the 128 bits it is meant to have.
      if (data.length < IV_BYTES + TAG_BYTES)
        throw new PayloadDecryptionError(`it holds ${data.length} bytes, fewer than an IV and a full authentication tag (${IV_BYTES + TAG_BYTES})`);
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      if (envelope !== '1') {
        const bound = fromBytes(payload.metadata?.[BOUND_WORKFLOW]);
        const reader = context?.workflowId;
        if (bound !== undefined && reader && !boundWorkflowMatches(bound, reader)) {
          throw new PayloadDecryptionError(`it belongs to the workflow ${JSON.stringify(bound)}, not ${JSON.stringify(reader)}`);
        }
        decipher.setAAD(additionalData(keyId, namespace, bound));
      }
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      try {
        const plaintext = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
        return temporal.api.common.v1.Payload.decode(plaintext);
      } catch {
        throw new PayloadDecryptionError(
          envelope === '1'
            ? 'it does not authenticate under its key (altered, or not written with this key)'
            : `it does not authenticate under its key in the namespace ${JSON.stringify(namespace)} (altered, moved from another namespace or workflow, or not written with this key)`,
        );
      }
    });
  }
}

/** The codec for a config's keys, or undefined when encryption is off. */
export function codecFromKeys(spec: string | undefined, namespace?: string): AesGcmPayloadCodec | undefined {
  return spec ? new AesGcmPayloadCodec(parseEncryptionKeys(spec), { namespace }) : undefined;
}

/**
 * The failure converter module used with encryption (plain JavaScript, loaded by path: the
 * build copies it beside the compiled codec and bundles it into the prebuilt workflow bundle).
 */
const FAILURE_CONVERTER_PATH = path.join(__dirname, 'failure-converter.js');

/**
 * The data converter of a worker or client when payloads are encrypted: the codec, and the
 * failure converter that moves failure messages into encrypted attributes. Undefined without keys.
 * `namespace` (the process's TEMPORAL_NAMESPACE) binds the payloads the SDK converts without a
 * serialization context.
 */
export function encryptedDataConverter(
  spec: string | undefined,
  namespace?: string,
): { payloadCodecs: AesGcmPayloadCodec[]; failureConverterPath: string } | undefined {
  const codec = codecFromKeys(spec, namespace);
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
