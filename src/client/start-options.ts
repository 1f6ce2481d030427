/**
 * The options every start of a lineage's workflow carries (start, signal-with-start and
 * update-with-start alike): its id and task queue, the input built from the lineage row (so
 * a new run starts where Postgres stands), the summary the Web UI shows and the search
 * attributes. Pure. contract/vectors/start-options.json holds the cases the Python client
 * agrees on.
 */
import type { LineageInfo } from '../db/lineage-state';
import { lineageWorkflowId, type SessionLineageInput } from '../workflows/contract';
import { CompactionCount, SessionHead, SessionLineage, SessionSource } from '../workflows/search-attributes';
import type { LineageSettings } from '../workflows/settings';

/** What the start options are built from: the lineage row's identity and place. */
export type LineageStart = Pick<LineageInfo, 'lineageId' | 'headSessionId' | 'generation' | 'mode' | 'source'>;

/**
 * createSession and compact join the lineage's workflow when it runs already (a second
 * create, concurrent compactions), never fail for it. Signal-with-start joins by its nature.
 */
export const JOIN_RUNNING_WORKFLOW = { workflowIdConflictPolicy: 'USE_EXISTING' } as const;

export function lineageStartOptions(lineage: LineageStart, settings: LineageSettings, taskQueue: string) {
  const input: SessionLineageInput = {
    lineageId: lineage.lineageId,
    headSessionId: lineage.headSessionId,
    generation: lineage.generation,
    mode: lineage.mode,
    ...(lineage.source ? { source: lineage.source } : {}),
    settings,
  };
  return {
    workflowId: lineageWorkflowId(lineage.lineageId),
    taskQueue,
    args: [input] as [SessionLineageInput],
    staticSummary: `Session lineage ${lineage.lineageId}${lineage.source ? ` (${lineage.source})` : ''}, ${lineage.mode}`,
    staticDetails: `Compactions of session lineage \`${lineage.lineageId}\` run here one at a time. Transcripts live in Postgres; see the state query for head and queue.`,
    typedSearchAttributes: [
      { key: SessionLineage, value: lineage.lineageId },
      { key: SessionHead, value: lineage.headSessionId },
      { key: CompactionCount, value: lineage.generation },
      ...(lineage.source ? [{ key: SessionSource, value: lineage.source }] : []),
    ],
  };
}
