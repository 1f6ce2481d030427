/**
 * `session-compaction/temporal`: the worker side of an agent that runs on Temporal with its
 * conversation in a lineage (docs/agents-on-temporal.md): the activities (read the head, call
 * the model, append what it returned and the tools' results, keyed), and the two agent models
 * the package ships, the AI SDK's (`ai`, loaded on first use) and the OpenAI Agents SDK's
 * (its types only). The workflow side is `session-compaction/temporal/workflow`.
 * Needs the optional peer dependency `@temporalio/activity`.
 */
export { createAgentActivities, activityAppendKey, type AgentActivitiesOptions, type AgentTool } from './temporal/activities';
export { aiSdkAgentModel, type AiSdkAgentModelOptions } from './temporal/ai-sdk-model';
export { agentsSdkAgentModel, type AgentsSdkAgentModelOptions } from './temporal/agents-sdk-model';
export type { AgentModel, AgentModelAnswer, AgentModelReading, AgentModelRequest } from './temporal/model';
export type {
  AgentActivities,
  AgentInputInput,
  AgentModelCallInput,
  AgentModelStep,
  AgentToolCall,
  AgentToolCallInput,
  AgentToolReceipt,
} from './temporal/contract';
