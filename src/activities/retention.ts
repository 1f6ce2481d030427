/**
 * The retention workflow's one activity: one bounded batch of pruning, in one Postgres
 * transaction (SQL `retention_prune`, which holds the retention lock, one batch at a time per
 * database, and no lineage lock). With an export directory, the messages of the batch are
 * written there as JSON lines (one file per day, owner-only: mode 0600; a directory it creates, 0700)
 * before the transaction commits: a batch whose commit fails is exported again by the next
 * run, never lost unexported. Appends go on while the file is written.
 */
import { mkdir, open } from 'node:fs/promises';
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
  /** Test seam: awaited just before the export file is written, the batch's transaction open. */
  beforeExportWrite?: (file: string, lines: number) => Promise<void>;
}

/** One exported message, as `retention_prune` answers it. */
interface ExportedMessage {
  lineageId: string;
  sessionId: string;
  seq: number;
  lineageSeq: number | null;
  createdAt: string;
  message: unknown;
}

/**
 * Appends the messages to `file` as JSON lines, each starting with its lineage
 * (`{"lineageId":...,`: what an operator greps to remove an erased lineage's lines). The
 * file is created owner-only, and a file an earlier release created with another mode is
 * made owner-only too.
 */
async function writeExport(file: string, lines: ExportedMessage[]): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const handle = await open(file, 'a', 0o600);
  try {
    await handle.chmod(0o600);
    const text = lines.map(({ lineageId, sessionId, seq, lineageSeq, createdAt, message }) =>
      JSON.stringify({ lineageId, sessionId, seq, lineageSeq, createdAt, message }),
    );
    await handle.appendFile(text.map((line) => `${line}\n`).join(''));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function createRetentionActivities(deps: RetentionActivityDeps) {
  async function pruneRetentionBatch(policy: RetentionPolicy, batch: number): Promise<PruneResult & { exported: number }> {
    if (!Number.isInteger(batch) || batch < 1) throw new InvalidInputError('batch', 'must be a positive whole number');
    return deps.db.transaction(async (tx) => {
      const { rows } = await tx.execute(sql`select retention_prune(${JSON.stringify(policy)}::jsonb, ${batch}::integer, ${Boolean(deps.exportDir)}) as result`);
      const { exported: lines = [], ...result } = (rows[0] as { result: PruneResult & { exported?: ExportedMessage[] } }).result;
      if (deps.exportDir && lines.length > 0) {
        const file = path.join(deps.exportDir, `pruned-${new Date().toISOString().slice(0, 10)}.jsonl`);
        await deps.beforeExportWrite?.(file, lines.length);
        await writeExport(file, lines);
      }
      return { ...result, exported: lines.length };
    });
  }
  return { pruneRetentionBatch };
}

export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
