/**
 * OperatorClient: what an operator reads of a deployment (a lineage's workflow state and
 * progress, the lineages, their compactions, ledgers and audit, where a workflow is) and
 * retention. Get one from a SessionsClient (`sessions.operator`, over its connections) or on
 * its own (`OperatorClient.connect()`); SessionsClient holds what an agent service calls.
 */
import { type Ledger, ledgerFrom } from '../compaction/ledger';
import { readWithRetry } from '../db/database';
import * as queries from '../db/lineage-queries';
import * as store from '../db/session-store';
import { InvalidInputError } from '../errors';
import { checkSessionId, type LineageState, lineageWorkflowId, stateQuery } from '../workflows/contract';
import type { RetentionPolicy, RetentionTotals } from '../workflows/retention';
import { type ClientCore, type ClientCoreOptions, closeOwned, connectCore, type OwnedConnections, withCallerErrors } from './client-core';
import { progressOfWorkflow } from './lineage-workflow';
import type { CompactionProgress } from './progress';
import * as retention from './retention';
import type { RetentionOptions } from './retention';

export interface LineageStateWithProgress extends LineageState {
  /** The running compaction's progress, from its heartbeats; absent when none runs. */
  progress?: CompactionProgress;
}

export class OperatorClient {
  /** @internal SessionsClient shares its connections through this; OperatorClient.connect opens its own. */
  constructor(
    private readonly core: ClientCore,
    private readonly owned: OwnedConnections = {},
  ) {}

  static async connect(options: ClientCoreOptions = {}): Promise<OperatorClient> {
    const { owned, ...core } = connectCore(options);
    return new OperatorClient(core, owned);
  }

  /** Runs retention once, now (src/client/retention.ts), and answers what it pruned. */
  runRetention(policy: RetentionPolicy, options: RetentionOptions = {}): Promise<RetentionTotals> {
    return retention.runRetention(this.core.temporal, this.core.config.temporal.taskQueue, policy, options);
  }

  /** Has Temporal run retention every `every` ('24h'): a Temporal Schedule, created or updated. */
  scheduleRetention(policy: RetentionPolicy, options: RetentionOptions & { every: string }) {
    return retention.scheduleRetention(this.core.temporal, this.core.config.temporal.taskQueue, policy, options);
  }

  /** Stops scheduled retention (false when none was scheduled). */
  unscheduleRetention(): Promise<boolean> {
    return retention.unscheduleRetention(this.core.temporal);
  }

  /** The workflow's state query, plus `progress` of the compaction in flight (from its heartbeats). */
  async state(sessionId: string): Promise<LineageStateWithProgress> {
    const lineage = await store.lineageState(this.core.database.db, checkSessionId(sessionId));
    const handle = this.core.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
    const [state, progress] = await Promise.all([handle.query(stateQuery), progressOfWorkflow(this.core.temporal, lineageWorkflowId(lineage.lineageId))]);
    return progress ? { ...state, progress } : state;
  }

  /**
   * The progress of the lineage's running compaction, or undefined when none runs. Read from
   * the workflow's description: the pending compactSession activity's last heartbeat details,
   * decoded with this client's data converter (so encrypted details decode too).
   */
  async progress(sessionId: string): Promise<CompactionProgress | undefined> {
    const lineage = await store.lineageState(this.core.database.db, checkSessionId(sessionId));
    return progressOfWorkflow(this.core.temporal, lineageWorkflowId(lineage.lineageId));
  }

  /** Lineages, a page at a time (Postgres only). */
  async listLineages(options: queries.ListLineagesOptions = {}): Promise<queries.LineagePage> {
    return readWithRetry(() => queries.listLineages(this.core.database.db, options));
  }

  /** The lineage of a session with every compaction, oldest first (Postgres only). */
  async history(sessionId: string): Promise<queries.LineageDetail> {
    checkSessionId(sessionId);
    return readWithRetry(() => queries.lineageDetail(this.core.database.db, sessionId));
  }

  /** One compaction with the parent transcript and what it produced (Postgres only). */
  async compaction(compactionId: string): Promise<queries.CompactionDetail> {
    if (typeof compactionId !== 'string' || compactionId.length === 0 || compactionId.length > 300)
      throw new InvalidInputError('compactionId', 'must be a string of 1 to 300 characters');
    return readWithRetry(() => queries.compactionDetail(this.core.database.db, compactionId));
  }

  /** The namespace and workflow id of a lineage, for links to the Temporal Web UI. */
  workflowLocation(lineageId: string): { namespace: string; workflowId: string } {
    return { namespace: this.core.config.temporal.namespace, workflowId: lineageWorkflowId(lineageId) };
  }

  /**
   * The ledger the lineage's head carries (src/compaction/ledger.ts): the user's requests and
   * corrections, files, commands, open errors and identifiers its compactions kept, and the
   * in-flight work (`inFlight`: the plan, background work, user turns not yet answered, standing
   * instructions), as JSON; null before the first compaction (Postgres only).
   */
  async ledger(sessionId: string): Promise<Ledger | null> {
    checkSessionId(sessionId);
    const stored = await readWithRetry(() => store.headLedger(this.core.database.db, sessionId));
    return stored === null ? null : ledgerFrom(stored);
  }

  /** The integrity audit of one lineage (Postgres only). */
  async auditLineage(sessionId: string): Promise<store.AuditReport & { lineageId: string }> {
    checkSessionId(sessionId);
    return store.auditLineage(this.core.database.db, sessionId);
  }

  async audit(): Promise<store.AuditReport> {
    return store.audit(this.core.database.db);
  }

  /** The workflow handle of a session's lineage, for operators and tests. */
  async workflowHandle(sessionId: string) {
    const lineage = await store.lineageState(this.core.database.db, checkSessionId(sessionId));
    return this.core.temporal.workflow.getHandle(lineageWorkflowId(lineage.lineageId));
  }

  async close(): Promise<void> {
    await closeOwned(this.owned);
  }
}

withCallerErrors(OperatorClient.prototype, (client) => (client as unknown as { core: ClientCore }).core.config.databaseUrl);
