/**
 * A drop-in `Session` for the OpenAI Agents SDK (`@openai/agents`): the SDK's history, kept
 * by this service in a lineage of the `openai-agents` dialect, so that any number of runners,
 * in any number of processes, share one durable history that compacts itself without forking.
 *
 *   const session = await CompactingSession.open(client, 'support-4711', { compactAtTokens: 60_000 });
 *   await run(agent, 'Where is my order?', { session });
 *
 * The SDK never rewrites the history here: compaction happens in the service (at the
 * lineage's threshold, one job per lineage, durable), and the next `getItems()` returns the
 * compacted head, its items exactly as stored (ids included, as the SDK's own sessions return
 * them). What the model is sent of them is prepared where the SDK prepares history for model
 * input (`prepareHistoryItemForModelInput`): the provider ids of a model turn cut off from
 * its reasoning item (summarised away, or left out by a limit) are dropped there (RS-4);
 * `transcript({ for: 'provider' })` drops the ids of every turn without reasoning, for
 * callers who send the head themselves.
 * What the SDK asks of a session maps onto the service's data plane, each step one
 * transaction under the lineage lock:
 * - `addItems`: an append;
 * - `popItem`: the head's last message taken back (it stays in Postgres, archived);
 * - `clearSession`: the lineage erased (every row, every workflow run: deleteLineage) and
 *   created again under the same id, empty, as the SDK's reference session forgets its items
 *   and its operation ids;
 * - `applyHistoryTransaction`: `append_items` is an append keyed by the operation id (sent
 *   again, it is stored once); `replace_suffix` takes back exactly `expectedSuffix` and
 *   appends `replacement`, or fails with HistoryMismatchError and changes nothing; an
 *   operation id used for another transaction is refused (InvalidInputError);
 * - `replaceHistoryWithCompaction` (the provider compacted: a Responses `compaction` item):
 *   the head replaced by the SDK's items in one step;
 * - `runCompaction({ force: true })` (the SDK's compaction hook): the service's compaction.
 *   Without `force` it does nothing: the service compacts on its own when an append reaches the
 *   threshold.
 *
 * Only the SDK's types are imported: a service that does not use the SDK does not install it.
 */
import type {
  AgentInputItem,
  OpenAIResponsesCompactionArgs,
  OpenAIResponsesCompactionAwareSession,
  OpenAIResponsesCompactionResult,
  SessionHistoryTransactionArgs,
  SessionHistoryTransactionAwareSession,
} from '@openai/agents-core';
import { dialectOf, type Message } from '../compaction/dialects';
import { InvalidInputError, SessionNotFoundError } from '../errors';
import type { CreateSessionOptions, SessionsClient } from './sessions-client';

/** How the lineage is created when it does not exist yet (the dialect is always `openai-agents`). */
export type CompactingSessionOptions = Omit<CreateSessionOptions, 'sessionId' | 'dialect'>;

/** The SDK's items as JSON: what is stored is what `getItems()` returns (fields set to undefined are not kept). */
const asJson = (items: readonly AgentInputItem[]): unknown[] => JSON.parse(JSON.stringify(items)) as unknown[];

const agentsDialect = dialectOf('openai-agents');

/**
 * The provider ids (`id` of assistant messages and calls) the model must not be sent with
 * these items (RS-4): those of a model turn cut off from its reasoning item, that is a turn
 * the provider view strips (no reasoning item in it) that follows the service's summary (its
 * beginning, reasoning included, was summarised away) or starts `items` when they are the end
 * of a longer head (`cut`: a limit left its beginning out). A whole turn without reasoning is
 * a non-reasoning model's, and its ids go as stored, as with the SDK's own sessions.
 */
function idsCutFromTheirReasoning(items: readonly Message[], cut: boolean): Set<string> {
  const ready = agentsDialect.forProvider(items);
  const dropped = new Set<string>();
  items.forEach((item, i) => {
    if (typeof item.id !== 'string' || ready[i] === item || 'id' in ready[i]) return;
    let start = i;
    while (start > 0 && agentsDialect.roleOf(items[start - 1]) === 'assistant') start--;
    if (start === 0 ? cut : agentsDialect.isSummary(items[start - 1])) dropped.add(item.id);
  });
  return dropped;
}

export class CompactingSession implements SessionHistoryTransactionAwareSession, OpenAIResponsesCompactionAwareSession {
  /**
   * The ids of the last `getItems()` answer the model must not see (RS-4). Provider ids are
   * unique, and a turn's reasoning once gone never comes back, so an item keyed by its id is
   * prepared the same way whether the SDK passes the object it read or a copy of it.
   */
  private dropForModel = new Set<string>();

  private constructor(
    private readonly client: SessionsClient,
    /** The lineage's root session id: every session id of a lineage reaches its head. */
    private readonly sessionId: string,
    private readonly options: CompactingSessionOptions,
  ) {}

  /** The session over lineage `sessionId`, created (idempotently) in the `openai-agents` dialect when it does not exist. */
  static async open(client: SessionsClient, sessionId: string, options: CompactingSessionOptions = {}): Promise<CompactingSession> {
    await client.createSession({ ...options, sessionId, dialect: 'openai-agents' });
    return new CompactingSession(client, sessionId, options);
  }

  getSessionId(): Promise<string> {
    return Promise.resolve(this.sessionId);
  }

  /** The head's items exactly as stored: the last `limit` items in order (all without a limit, none for 0 or less). */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    const { messages } = await this.client.transcript(this.sessionId);
    const items = limit === undefined ? messages : messages.slice(-limit);
    this.dropForModel = idsCutFromTheirReasoning(items, items.length < messages.length);
    return items as unknown as AgentInputItem[];
  }

  /**
   * The SDK's hook for history on its way to the model: an item of a model turn cut off from
   * its reasoning item (summarised away, or left out by a limit) is sent without its provider
   * `id` (RS-4: the Responses API would look for the reasoning it came with); every other
   * item as it is.
   */
  prepareHistoryItemForModelInput(item: AgentInputItem): AgentInputItem {
    const id = (item as { id?: unknown }).id;
    if (typeof id !== 'string' || !this.dropForModel.has(id)) return item;
    const { id: _id, ...rest } = item as AgentInputItem & { id: string };
    return rest as AgentInputItem;
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.client.append(this.sessionId, asJson(items));
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    const { removed } = await this.client.replaceTail(this.sessionId, { count: 1 });
    return removed[0] as unknown as AgentInputItem | undefined;
  }

  /** Forgets the conversation: the lineage erased, then created again, empty, with the same settings. */
  async clearSession(): Promise<void> {
    await this.client.deleteLineage(this.sessionId).catch((error: unknown) => {
      // Already erased (by another process, or a clear that stopped before creating again).
      if (!(error instanceof SessionNotFoundError)) throw error;
    });
    await this.client.createSession({ ...this.options, sessionId: this.sessionId, dialect: 'openai-agents' });
  }

  async applyHistoryTransaction({ operationId, transaction }: SessionHistoryTransactionArgs): Promise<void> {
    if (typeof operationId !== 'string' || operationId.trim() === '') throw new InvalidInputError('operationId', 'must be a non-empty string');
    if (transaction?.type === 'append_items') {
      // An empty append still records its operation id (a replacement of nothing by nothing).
      if (transaction.items.length === 0) await this.client.replaceTail(this.sessionId, { count: 0, key: operationId });
      else await this.client.append(this.sessionId, asJson(transaction.items), { appendKey: operationId });
      return;
    }
    if (transaction?.type === 'replace_suffix') {
      await this.client.replaceTail(this.sessionId, {
        expected: asJson(transaction.expectedSuffix),
        replacement: asJson(transaction.replacement),
        key: operationId,
      });
      return;
    }
    throw new InvalidInputError('transaction.type', 'must be append_items or replace_suffix');
  }

  /**
   * Called by the runner when the provider itself compacted the conversation (a Responses
   * `compaction` item in the model's output, with OpenAI's server-side compaction on): the
   * head becomes `items`, atomically, instead of the SDK's clear-and-rebuild fallback.
   */
  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    await this.client.replaceTail(this.sessionId, { count: 'all', replacement: asJson(items) });
  }

  /**
   * The SDK's compaction hook, called after every turn it stores: with `force`, the service
   * compacts the head now (and the next getItems() reads the result); otherwise nothing, as the
   * service compacts at the lineage's threshold. The summary's cost is the service's, so no
   * usage is reported to the run.
   */
  async runCompaction(args?: OpenAIResponsesCompactionArgs): Promise<OpenAIResponsesCompactionResult | null> {
    if (args?.force) await this.client.compact(this.sessionId, { force: true });
    return null;
  }
}
