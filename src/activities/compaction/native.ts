/**
 * The native rung: the provider's own compaction (src/activities/native-compaction), between
 * masking and the summary. It applies where the lineage's dialect has one and the worker
 * configured it (NATIVE_COMPACTION=on): openai-responses and openai-agents lineages through
 * `POST /responses/compact`, anthropic lineages through the compact_20260112 edit, with the
 * lineage's model (the opaque item is read only by the model that made it), or the configured
 * one when the lineage names none. Off (NATIVE_COMPACTION unset), it passes silently; on, it
 * passes to the summary with its reason: no endpoint for the provider, not applicable, under
 * Anthropic's trigger minimum, a head whose opaque item another model made (the summary
 * replaces it instead of sending it again), and any failure of the call (an error, the provider
 * refusing an item as `invalid_encrypted_content`, a timeout, no compaction item,
 * `content: null`). A cancelled attempt (a lost lease) is not a failure of the call: it ends the
 * attempt as it would the summary's.
 */
import { Context } from '@temporalio/activity';
import { APIError as AnthropicApiError } from '@anthropic-ai/sdk';
import { APIError as OpenAiApiError } from 'openai';
import { asResponsesItem } from '../../compaction/dialects/openai-agents';
import { ledgerBudget, renderLedger } from '../../compaction/ledger';
import { estimateTextTokens } from '../../compaction/tokens';
import type { Message } from '../../compaction/dialects';
import { bindingOf, holdsOpaqueItem, nativeProposal, type OpaqueBinding } from '../../compaction/proposal';
import { ANTHROPIC_TRIGGER_MINIMUM, NativeCompactionFailedError, type NativeProvider } from '../native-compaction';
import type { Rung } from './rungs';
import type { Snapshot } from './snapshot';

/** The provider whose compaction a dialect's lineage may use. */
const PROVIDER_OF: Partial<Record<string, NativeProvider>> = { 'openai-responses': 'openai', 'openai-agents': 'openai', anthropic: 'anthropic' };

/** The binding of the opaque item the head holds, read from the summary message beside it. */
function headBinding(s: Snapshot): OpaqueBinding | undefined {
  for (const m of s.messages) if (s.dialect.isSummary(m)) return bindingOf(s.dialect.textOf(m));
  return undefined;
}

/** Why a native call failed, classified (never the provider's whole text). */
export function nativeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof NativeCompactionFailedError) return error.reason;
  if (error instanceof OpenAiApiError || error instanceof AnthropicApiError) {
    if (error.status === undefined) return /timed? ?out/i.test(error.message) ? `the call timed out after ${timeoutMs} ms` : 'the call could not connect';
    const body = error.error as { error?: { code?: unknown; type?: unknown } } | undefined;
    const code = (error as { code?: unknown }).code ?? body?.error?.code ?? body?.error?.type;
    return `the provider answered ${error.status}${typeof code === 'string' ? ` ${code}` : ''}`;
  }
  if (error instanceof Error && error.name === 'AbortError') return 'the call was cancelled';
  return `the call failed (${error instanceof Error ? error.name : 'unknown error'})`;
}

/** The messages sent to the provider: the middle without the latest request (kept verbatim after), in the provider's wire form. */
function wireInput(s: Snapshot): Message[] {
  const middle = s.plan.middle.filter((i) => i !== s.plan.latestUserRequest).map((i) => s.messages[i]);
  const ready = s.dialect.forProvider(middle);
  // The Agents SDK's items in the Responses API's spelling, as the SDK sends them.
  return s.dialect.name === 'openai-agents' ? ready.map(asResponsesItem) : ready;
}

export const native: Rung = {
  name: 'native',
  async propose({ snapshot: s, input, deps, heartbeat }) {
    const config = deps.native;
    // Off (the default): no trace in the audit row, so nothing changes for a worker that never turned it on.
    if (!config) return undefined;
    const provider = PROVIDER_OF[s.dialect.name];
    if (!provider) return { passed: `the ${s.dialect.name} dialect has no provider compaction` };
    const call = config.calls[provider];
    if (!call) return { passed: `no ${provider} endpoint is configured for the provider's own compaction` };
    if (input.focusTopic) return { passed: 'a focused request asks for our summary' };
    const model = s.lineage.model ?? config.models[provider];
    if (!model) return { passed: `the lineage names no model and none is configured for ${provider}` };
    const bound = headBinding(s);
    if (bound && (bound.provider !== provider || bound.model !== model) && s.messages.some(holdsOpaqueItem)) {
      return { passed: `the head's compaction item was made by ${bound.provider} model ${bound.model}, not ${model}: the summary replaces it` };
    }
    const middleTokens = s.plan.middle.reduce((sum, i) => sum + s.tokens[i], 0);
    if (provider === 'anthropic' && middleTokens < ANTHROPIC_TRIGGER_MINIMUM) {
      return { passed: `the middle holds ${middleTokens} tokens, under Anthropic's compaction trigger minimum of ${ANTHROPIC_TRIGGER_MINIMUM}` };
    }
    const instructions =
      s.plan.head
        .map((i) => s.messages[i])
        .filter((m) => s.dialect.isInstruction(m))
        .map((m) => s.dialect.textOf(m))
        .join('\n\n') || undefined;
    heartbeat.beat({ phase: 'summarising' });
    let answer: Awaited<ReturnType<typeof call>>;
    try {
      answer = await heartbeat.during(deps.heartbeatIntervalMs, () =>
        call({ model, input: wireInput(s), instructions, signal: Context.current().cancellationSignal }),
      );
    } catch (error) {
      if (Context.current().cancellationSignal.aborted) throw error;
      return { passed: `the provider's compaction failed: ${nativeFailure(error, config.timeoutMs)}` };
    }
    const binding: OpaqueBinding = { provider, model, ...(typeof answer.item.id === 'string' ? { itemId: answer.item.id } : {}) };
    const seqs = s.rows.map((r) => r.lineageSeq);
    const proposal = nativeProposal(s.messages, seqs, s.plan, s.dialect, { ...answer, binding }, s.previousLedger, {
      requestChars: deps.ledger.requestChars,
      budgetTokens: ledgerBudget(
        s.lineage.contextWindow,
        deps.ledger,
        s.storedLedger === null ? 0 : estimateTextTokens(renderLedger(s.previousLedger)),
        middleTokens,
      ),
    });
    return { proposal, usage: answer.usage, note: `native rung: ${provider} compaction by model ${model}` };
  },
};
