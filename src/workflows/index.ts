export { sessionLineageWorkflow } from './session-lineage';
