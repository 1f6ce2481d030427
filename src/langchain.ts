/**
 * `session-compaction/langchain`: an agent middleware for LangChain v1's `createAgent` that keeps
 * the conversation in a lineage and hands the model its compacted head. Needs the optional peer
 * dependencies `langchain` and `@langchain/core`.
 */
export { fromChatMessage, lineageMiddleware, toChatMessage, type LineageMiddlewareOptions } from './adapters/langchain';
