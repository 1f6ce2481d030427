/**
 * `session-compaction/claude-agent-sdk`: the Claude Agent SDK's `SessionStore` over lineages.
 * Needs the optional peer dependency `@anthropic-ai/claude-agent-sdk` (only its types are
 * imported here).
 */
export { LineageSessionStore, type LineageSessionStoreOptions } from './adapters/claude-agent-sdk';
