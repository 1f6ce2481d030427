/**
 * Per-lineage settings the workflow needs (workflow code cannot read the environment):
 * the client passes them at start from its configuration, and they are carried across
 * continue-as-new. Workflow-safe.
 */
export interface LineageSettings {
  /** Heartbeat timeout of the summarise activity: the lease TTL. */
  leaseTtlMs: number;
  attemptTimeoutMs: number;
  maxAttempts: number;
  retryInitialIntervalMs: number;
  retryMaximumIntervalMs: number;
  /** Continue-as-new after this many compactions, or earlier when the server suggests it. */
  maxCompactionsPerRun: number;
  /**
   * Complete the workflow after this long without requests (0: never). The lineage stays
   * open in Postgres; the next request starts the workflow again from Postgres' state.
   */
  idleTimeoutMs: number;
}

export const DEFAULT_LINEAGE_SETTINGS: LineageSettings = {
  leaseTtlMs: 60_000,
  attemptTimeoutMs: 30 * 60_000,
  maxAttempts: 5,
  retryInitialIntervalMs: 1_000,
  retryMaximumIntervalMs: 30_000,
  maxCompactionsPerRun: 200,
  idleTimeoutMs: 0,
};
