/**
 * `session-compaction/temporal/workflow`: the workflow side of an agent whose conversation is
 * a lineage (src/temporal/workflow.ts). Workflow code: import it from your workflows file; it
 * imports nothing but `@temporalio/workflow`.
 */
export { agentLoop, type AgentLoop, type AgentLoopOptions, type AgentRunResult } from './temporal/workflow';
export type { AgentActivities, AgentModelStep, AgentToolCall, AgentToolReceipt } from './temporal/contract';
