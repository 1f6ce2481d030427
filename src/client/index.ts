export {
  SessionsClient,
  type CompactOptions,
  type CompactResultWithTranscript,
  type CreateSessionOptions,
  type SessionsClientOptions,
} from './sessions-client';
export type {
  CompactionEvent,
  CompactionEventMeta,
  CompactionEventPage,
  CompactionEventsOptions,
  CompactionEventStatus,
  ReadCompactionEventsOptions,
} from './compaction-events';
export { OperatorClient, type LineageStateWithProgress } from './operator-client';
export type { ClientCoreOptions } from './client-core';
export * from '../errors';
export type { ChatMessage, ContentPart, MessageRole, OtherContentPart, TextContentPart } from '../compaction/messages';
export type { Ledger, LedgerCommand, LedgerError, LedgerFile, LedgerRequest, FoldCounts, FileAction } from '../compaction/ledger';
export type { CompactResult, CompactionOutcome, CompactionMode, LineageState, QueuedRequestView } from '../workflows/contract';
