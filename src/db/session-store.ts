/**
 * The data layer in Postgres, one module per job (imported together as `store`):
 * - src/db/data-plane.ts: the data plane's SQL functions (create, append, take back, read the
 *   head, the lineage, a recorded answer, the ledger, erase), shared by every client language;
 * - src/db/lineage-state.ts: the lineage row and a session's rows (a compaction's snapshot);
 * - src/db/auto-compaction.ts: the threshold policy's state (cooldown ladder, pending request);
 * - src/db/jobs.ts: a compaction job's audit row and its decision when it does not commit;
 * - src/db/commit.ts: publishing a compaction in one statement, after the gates;
 * - src/db/audit.ts: the integrity audit.
 */
export * from './audit';
export * from './auto-compaction';
export * from './commit';
export * from './data-plane';
export * from './jobs';
export * from './lineage-state';
