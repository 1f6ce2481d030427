/**
 * The retention workflow's one activity: one bounded batch of pruning, in one Postgres
 * transaction (SQL `retention_prune`). With an export directory, the messages of the batch
 * are written there as JSON lines (one file per day) before the transaction commits: a batch
 * whose commit fails is exported again by the next run, never lost unexported.
 */
import { appendFile, mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { Database } from '../db/database';
import type { PruneResult } from '../db/session-store';
import type { RetentionPolicy } from '../workflows/retention';
import { InvalidInputError } from '../errors';

export interface RetentionActivityDeps {
  db: Database;
  /** Where pruned messages are exported as JSON lines before they are deleted (none: not exported). */
  exportDir?: string;
}

export function createRetentionActivities(deps: RetentionActivityDeps) {
  async function pruneRetentionBatch(policy: RetentionPolicy, batch: number): Promise<PruneResult & { exported: number }> {
    if (!Number.isInteger(batch) || batch < 1) throw new InvalidInputError('batch', 'must be a positive whole number');
    return deps.db.transaction(async (tx) => {
      const { rows } = await tx.execute(sql`select retention_prune(${JSON.stringify(policy)}::jsonb, ${batch}::integer, ${Boolean(deps.exportDir)}) as result`);
      const { exported: lines = [], ...result } = (rows[0] as { result: PruneResult & { exported?: unknown[] } }).result;
      if (deps.exportDir && lines.length > 0) {
        await mkdir(deps.exportDir, { recursive: true });
        const file = path.join(deps.exportDir, `pruned-${new Date().toISOString().slice(0, 10)}.jsonl`);
        await appendFile(file, lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
        const handle = await open(file, 'r');
        await handle.sync().finally(() => handle.close());
      }
      return { ...result, exported: lines.length };
    });
  }
  return { pruneRetentionBatch };
}

export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
