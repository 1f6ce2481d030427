/**
 * The head a provider would get, checked the way that provider checks it: the strict fake
 * provider's own request validator for the dialect (test/support/strict-*.ts), which answers
 * with the provider's error text. Used by the corpus runner and the dialect tests.
 */
import type { DialectName, Message } from '../../src/compaction/dialects';
import { validateChatRequest } from './strict-provider';

/** Why the dialect's provider would refuse these messages as the next request's input, or undefined. */
export function strictProviderCheck(dialect: DialectName, messages: readonly Message[]): string | undefined {
  switch (dialect) {
    case 'openai-chat':
      return validateChatRequest({ model: 'agent-model', messages })?.message;
    default:
      return undefined;
  }
}
