/**
 * The AI SDK's `ModelMessage` as the `ai-sdk` dialect stores it: JSON. A message the SDK hands
 * over may hold bytes (`Uint8Array`, `ArrayBuffer`, `Buffer`) and `URL` objects in its image,
 * file and tool-output parts; JSON has neither, so bytes become base64 strings and URLs their
 * `href`, which the SDK reads back as the same data (a string data field is base64, or a URL
 * when it parses as one). Fields whose value is undefined are dropped, as JSON drops them.
 */
import { createHash } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Message } from '../../compaction/dialects';
import { canonicalJson, type JsonValue } from '../../compaction/json';
import { InvalidInputError } from '../../errors';

/** One value of a message as JSON: bytes as base64, URLs as their text, undefined fields dropped. */
function storable(value: unknown, field: string): JsonValue | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidInputError(field, 'is not a finite number');
    return value;
  }
  if (value instanceof URL) return value.href;
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString('base64');
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item, i) => storable(item, `${field}[${i}]`) ?? null);
  if (typeof value === 'object') {
    const out: Record<string, JsonValue> = {};
    for (const [key, item] of Object.entries(value)) {
      const stored = storable(item, `${field}.${key}`);
      if (stored !== undefined) out[key] = stored;
    }
    return out;
  }
  throw new InvalidInputError(field, `holds a ${typeof value}, which has no JSON form`);
}

/** A `ModelMessage` as the `ai-sdk` dialect stores it (JSON: bytes base64, URLs as text). */
export function toStoredMessage(message: ModelMessage, field = 'messages[0]'): Message {
  return storable(message, field) as Message;
}

/** Messages as stored, each named by its position for errors. */
export const toStoredMessages = (messages: readonly ModelMessage[]): Message[] => messages.map((m, i) => toStoredMessage(m, `messages[${i}]`));

/**
 * The append key of a batch the model answered: the response's id (the provider's, or the id
 * the AI SDK generated) with the batch's content. A persist retried with the same batch
 * stores it once; another response never shares it.
 */
export function responseAppendKey(responseId: string, batch: readonly Message[]): string {
  const digest = createHash('sha256').update(responseId).update('\n').update(canonicalJson(batch)).digest('hex');
  return `ai-sdk:${digest.slice(0, 48)}`;
}
