/**
 * The workflow of examples/temporal-agent.ts: a coding agent whose conversation is a lineage.
 * It carries the lineage id only; agentLoop calls the model and the tools as activities and
 * continues the workflow as new every 50 model calls. Workflow code: deterministic, and it
 * imports nothing but `@temporalio/workflow` (through agentLoop).
 */
import { agentLoop } from '../src/temporal-workflow'; // in your own project: from 'session-compaction/temporal/workflow'

export async function codingAgent(lineageId: string): Promise<string> {
  const { output } = await agentLoop({ lineageId, continueAsNewAfter: 50, activities: { startToCloseTimeout: '5 minutes' } }).run();
  return output ?? '';
}
