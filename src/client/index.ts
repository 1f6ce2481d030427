export { SessionsClient, type CompactOptions, type CompactResultWithTranscript, type CreateSessionOptions, type SessionsClientOptions } from './sessions-client';
export * from '../errors';
export type { ChatMessage } from '../compaction/messages';
export type { CompactResult, CompactionOutcome, CompactionMode, LineageState } from '../workflows/contract';
