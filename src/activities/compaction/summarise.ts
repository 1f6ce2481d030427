/**
 * The summarise step: the summariser on the middle of the snapshot, in chunks when it is large,
 * while the heartbeat beats on its timer (the lease holds as long as the summariser works; a
 * lost lease cancels it through the activity's signal). Records the summariser's latency and
 * token metrics.
 */
import { Context } from '@temporalio/activity';
import { withoutReservedText } from '../../compaction/summary-structure';
import { latestUserRequestText, prefixLayout } from '../../compaction/summary-prompt';
import { summariseInChunks, type SummaryProgress, type SummaryResult } from '../summariser';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Heartbeat } from './heartbeat';
import type { Snapshot } from './snapshot';

export async function summarise(
  s: Snapshot,
  input: CompactSessionInput,
  deps: CompactionActivityDeps,
  heartbeat: Heartbeat,
): Promise<SummaryResult & { chunks: number }> {
  const { summariser } = deps;
  heartbeat.beat({ phase: 'summarising' });
  const started = Date.now();
  const summary = await heartbeat.during(deps.heartbeatIntervalMs, () =>
    summariseInChunks(
      summariser,
      {
        middle: s.plan.middle.map((i) => s.messages[i]),
        previousSummary: s.plan.previousSummary,
        // A focus sent by signal skips the clients' and the Update validator's check: what of a summary's structure it holds is removed.
        focusTopic: input.focusTopic === undefined ? undefined : withoutReservedText(input.focusTopic),
        force: input.force,
        latestUserRequest: latestUserRequestText(s.messages, s.dialect),
        dialect: s.dialect,
        // The session's own model, on an API that takes its messages: ask with the head as the
        // agent sent it, so the provider's prompt cache serves it.
        prefix:
          deps.summaryLayout === 'prefix' && s.lineage.model === summariser.model && summariser.speaks?.(s.dialect.name)
            ? prefixLayout(s.messages, s.plan, s.dialect, s.tokensBefore, deps.summaryInputTokens)
            : undefined,
      },
      {
        inputBudgetTokens: deps.summaryInputTokens,
        signal: Context.current().cancellationSignal,
        onProgress: (p: SummaryProgress) => heartbeat.note({ phase: 'summarising', ...p }),
      },
    ),
  );
  const meter = Context.current().metricMeter.withTags({ model: summary.model });
  meter.createHistogram('session_summariser_latency', 'int', 'ms', 'Time the summariser took').record(Date.now() - started);
  meter.createCounter('session_summariser_prompt_tokens', 'tokens', 'Prompt tokens the summariser reported').add(summary.promptTokens ?? 0);
  meter.createCounter('session_summariser_completion_tokens', 'tokens', 'Completion tokens the summariser reported').add(summary.completionTokens ?? 0);
  return summary;
}
