/**
 * The OpenAI Agents SDK's spelling of Responses items, for tests of the `openai-agents`
 * dialect: `toAgentsItems` writes a Responses transcript as the TypeScript SDK stores it (what
 * its Runner hands a Session: `callId`, `function_call_result` with its `name`, `status` and
 * a `{type:'text'}` output, reasoning `content`, `providerData`), and `sdkRequestInput` turns
 * SDK items into the Responses input the SDK itself sends, with the SDK's own converter
 * (`getInputItems` of @openai/agents-openai), so the strict Responses check reads exactly
 * what the provider would get. Neither uses the service's own view (asResponsesItem).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { isJsonObject, type JsonObject } from '../../src/compaction/json';
import type { Message } from '../../src/compaction/dialects';

const RENAMED: Record<string, string> = { function_call_output: 'function_call_result', computer_call_output: 'computer_call_result' };

/** One Responses item in the SDK's spelling; `names` maps call ids to their function names (a result names its function). */
function toAgentsItem(m: Message, names: ReadonlyMap<string, string> = new Map()): Message {
  const type = typeof m.type === 'string' ? m.type : undefined;
  // The SDK's instructions are system messages: it has no developer role.
  if (type === undefined || type === 'message') return m.role === 'developer' ? { ...m, role: 'system' } : m;
  const { call_id: callId, ...rest } = m;
  const out: JsonObject = { ...rest };
  if (RENAMED[type]) out.type = RENAMED[type];
  if (typeof callId === 'string') out.callId = callId;
  if (type === 'function_call') out.status ??= 'completed';
  if (type === 'function_call_output') {
    out.name = typeof callId === 'string' ? (names.get(callId) ?? callId) : 'tool';
    out.status ??= 'completed';
    if (typeof m.output === 'string') out.output = { type: 'text', text: m.output };
  }
  if (type === 'reasoning') {
    const { summary, encrypted_content: encrypted, ...other } = out;
    const parts = Array.isArray(summary) ? summary : [];
    return {
      ...other,
      content: parts.map((p) => (isJsonObject(p) && typeof p.text === 'string' ? { type: 'input_text', text: p.text } : p)),
      ...(typeof encrypted === 'string' ? { providerData: { encryptedContent: encrypted } } : {}),
    };
  }
  return out;
}

/** A Responses transcript as the TypeScript SDK stores it. */
export function toAgentsItems(messages: readonly Message[]): Message[] {
  const names = new Map<string, string>();
  for (const m of messages) if (m.type === 'function_call' && typeof m.call_id === 'string' && typeof m.name === 'string') names.set(m.call_id, m.name);
  return messages.map((m) => toAgentsItem(m, names));
}

type GetInputItems = (input: unknown[]) => Message[];
let converter: GetInputItems | undefined;

/**
 * The Responses input the SDK sends for these items: its own `getInputItems`, which its
 * package does not export by name, loaded from the file its Responses model imports it from.
 */
export function sdkRequestInput(items: readonly Message[]): Message[] {
  if (!converter) {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@openai/agents-openai');
    converter = (require(path.join(path.dirname(entry), 'openaiResponsesConverter.js')) as { getInputItems: GetInputItems }).getInputItems;
  }
  return JSON.parse(JSON.stringify(converter(items.slice()))) as Message[];
}

/** Why the SDK could not even build the request for these items (it throws before sending), or undefined. */
export function sdkRefusal(items: readonly Message[]): string | undefined {
  try {
    sdkRequestInput(items);
    return undefined;
  } catch (error) {
    return `the Agents SDK refused the items: ${(error as Error).message}`;
  }
}
