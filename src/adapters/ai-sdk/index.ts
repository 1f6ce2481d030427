export { lineageChat, type LineageChat, type LineageChatOptions } from './lineage-chat';
export { toStoredMessage } from './messages';
export type { FinishedStep, LineageTurn, StepsSoFar } from './turn';
