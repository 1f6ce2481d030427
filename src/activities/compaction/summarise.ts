/**
 * The summarise step: the summariser on the middle of the snapshot, in chunks when it is large,
 * while the heartbeat beats on its timer (the lease holds as long as the summariser works; a
 * lost lease cancels it through the activity's signal). Records the summariser's latency and
 * token metrics. When the summariser refuses its input as too long, the step tries again, a
 * bounded number of times, with smaller requests (the prefix layout's one request rendered in
 * chunks instead, then chunks of half the budget); after that the refusal goes to the rung.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { holdsOpaqueItem } from '../../compaction/proposal';
import { withoutReservedText } from '../../compaction/summary-structure';
import { renderLedger } from '../../compaction/ledger';
import { latestUserRequestText, prefixLayout } from '../../compaction/summary-prompt';
import { summariseInChunks, type SummaryProgress, type SummaryResult } from '../summariser';
import type { CompactSessionInput, CompactionActivityDeps } from './deps';
import type { Heartbeat } from './heartbeat';
import type { Snapshot } from './snapshot';

/** Provider error codes that say a request held more than the model takes (`prompt_too_long`: Anthropic's, as the summariser classifies it). */
const INPUT_TOO_LARGE_CODES = new Set([
  'context_length_exceeded',
  'context_window_exceeded',
  'request_too_large',
  'string_above_max_length',
  'prompt_too_long',
]);

/**
 * The classified reason (never the provider's text) when a summariser failure says its input was
 * too large for the model: HTTP 413, or a context-length error code; undefined for any other error.
 */
export function inputTooLarge(error: unknown): string | undefined {
  if (!(error instanceof ApplicationFailure)) return undefined;
  const detail = (error.details?.[0] ?? {}) as { status?: unknown; code?: unknown };
  const tooLarge = detail.status === 413 || (typeof detail.code === 'string' && INPUT_TOO_LARGE_CODES.has(detail.code));
  return tooLarge ? error.message : undefined;
}

export async function summarise(
  s: Snapshot,
  input: CompactSessionInput,
  deps: CompactionActivityDeps,
  heartbeat: Heartbeat,
): Promise<SummaryResult & { chunks: number }> {
  const { summariser } = deps;
  heartbeat.beat({ phase: 'summarising' });
  const started = Date.now();
  // The session's own model, on an API that takes its messages: ask with the head as the
  // agent sent it, so the provider's prompt cache serves it.
  // Never with a provider's opaque compaction item in the head: it may be another model's, which
  // refuses it (the rendered layout shows it as a placeholder, so it is not sent again).
  const prefix =
    deps.summaryLayout === 'prefix' && s.lineage.model === summariser.model && summariser.speaks?.(s.dialect.name) && !s.messages.some(holdsOpaqueItem)
      ? prefixLayout(s.messages, s.plan, s.dialect, s.tokensBefore, deps.summaryInputTokens)
      : undefined;
  // Each try asks with smaller requests than the one before; a refusal of the last one is the rung's to handle.
  const tries = [
    ...(prefix ? [{ prefix, inputBudgetTokens: deps.summaryInputTokens }] : []),
    { prefix: undefined, inputBudgetTokens: deps.summaryInputTokens },
    { prefix: undefined, inputBudgetTokens: Math.max(1, Math.floor(deps.summaryInputTokens / 2)) },
  ];
  for (const [k, layout] of tries.entries()) {
    try {
      return await summariseOnce(s, input, deps, heartbeat, started, layout);
    } catch (error) {
      if (k === tries.length - 1 || !inputTooLarge(error)) throw error;
      heartbeat.beat({ phase: 'summarising' });
    }
  }
  throw new Error('unreachable: the last try returns or throws');
}

async function summariseOnce(
  s: Snapshot,
  input: CompactSessionInput,
  deps: CompactionActivityDeps,
  heartbeat: Heartbeat,
  started: number,
  layout: { prefix: ReturnType<typeof prefixLayout> | undefined; inputBudgetTokens: number },
): Promise<SummaryResult & { chunks: number }> {
  const { summariser } = deps;
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
        ledger: s.storedLedger === null ? undefined : renderLedger(s.previousLedger),
        dialect: s.dialect,
        prefix: layout.prefix,
      },
      {
        inputBudgetTokens: layout.inputBudgetTokens,
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
