/**
 * `session-compaction/ai-sdk`: the AI SDK's conversations (`ModelMessage[]`, `UIMessage[]`
 * chats) kept in a lineage of the `ai-sdk` dialect, and a `prepareStep` that hands the model
 * the compacted head in the middle of a tool loop. Needs the optional peer dependency `ai`.
 */
export {
  lineageChat,
  toStoredMessage,
  type FinishedStep,
  type LineageChat,
  type LineageChatOptions,
  type LineageTurn,
  type StepsSoFar,
} from './adapters/ai-sdk';
