/**
 * The head a provider would get, checked the way that provider checks it: the strict fake
 * provider's own request validator for the dialect (test/support/strict-*.ts), which answers
 * with the provider's error text; for the AI SDK's messages, what its own provider packages send
 * to each provider it reaches, checked the same way (test/support/strict-ai-sdk.ts: converting
 * is async, so this check is too). Stateless: rules that need what the provider generated
 * (signatures, encrypted content) are checked by the running fakes, not here.
 */
import type { DialectName, Message } from '../../src/compaction/dialects';
import { sdkRefusal, sdkRequestInput } from './agents-items';
import { aiSdkRefusal } from './strict-ai-sdk';
import { validateAnthropicRequest } from './strict-anthropic';
import { validateGeminiRequest } from './strict-gemini';
import { validateChatRequest } from './strict-provider';
import { validateResponsesRequest } from './strict-responses';

/** Why the dialect's provider would refuse these messages as the next request's input, or undefined. */
export async function strictProviderCheck(dialect: DialectName, messages: readonly Message[]): Promise<string | undefined> {
  const refusal = (r: { reason?: string; rule?: string } | null) => (r ? `${r.rule ?? ''} ${r.reason ?? ''}`.trim() : undefined);
  switch (dialect) {
    case 'openai-chat':
      return validateChatRequest({ model: 'agent-model', messages })?.message;
    case 'openai-responses':
      return refusal(validateResponsesRequest({ model: 'agent-model', input: messages, store: false }));
    case 'openai-agents':
      // What the Agents SDK sends for its items: its own converter, then the provider's check.
      return sdkRefusal(messages) ?? refusal(validateResponsesRequest({ model: 'agent-model', input: sdkRequestInput(messages), store: false }));
    case 'anthropic':
      return refusal(validateAnthropicRequest({ model: 'agent-model', max_tokens: 1024, messages }));
    case 'gemini':
      return refusal(validateGeminiRequest({ contents: messages }));
    case 'ai-sdk':
      return aiSdkRefusal(messages);
  }
}
