export { sessionLineageWorkflow } from './session-lineage';
export { retentionWorkflow } from './retention';
