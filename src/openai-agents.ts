/**
 * `session-compaction/openai-agents`: the OpenAI Agents SDK's `Session` over a lineage. Needs the
 * optional peer dependency `@openai/agents-core` (only its types are imported here).
 */
export { CompactingSession, type CompactingSessionOptions } from './client/agents-session';
