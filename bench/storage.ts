/**
 * `npm run bench:storage`: what a lineage costs in Postgres as it compacts, and after
 * retention. For each mode (rotate, in_place) one lineage appends agent turns (a request, a
 * tool call, a ~1 KB JSON tool result, an answer) and is force-compacted after each turn by
 * the real stack (an in-process worker, the local OpenAI-compatible server answering at once);
 * after 1, 100 and 1,000 compactions it reports the lineage's message rows and bytes (the
 * bodies as Postgres stores them as text) per appended message and against the appended
 * bytes (the same measure of every batch as appended), then runs retention (ended sessions
 * and archived rows, 0 days) and reports the same again. Target: at most 1.2x the appended
 * bytes after retention. Never part of `npm test`.
 *
 *   npm run bench:storage                  1, 100 and 1,000 compactions per mode
 *   npm run bench:storage -- --quick       1, 10 and 30
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { SessionsClient } from '../src/client';
import type { Message } from '../src/compaction/dialects';
import { loadConfig, PROJECT_ROOT } from '../src/config';
import { openDatabase, runMigrations } from '../src/db/database';
import { createSessionWorker, installRuntime } from '../src/worker';
import type { CompactionMode } from '../src/workflows/contract';
import { startScratchStack } from '../test/support/scratch-stack';

const quick = process.argv.includes('--quick');
const CHECKPOINTS = quick ? [1, 10, 30] : [1, 100, 1000];

interface Measure {
  compactions: number;
  appendedMessages: number;
  appendedBytes: number;
  rows: number;
  bytes: number;
  rowsPerAppended: number;
  bytesPerAppendedByte: number;
}

function turn(n: number): Message[] {
  const id = `call_${n}`;
  const rows = Array.from({ length: 12 }, (_, i) => ({ id: n * 100 + i, name: `row ${i} of turn ${n}`, ok: i % 3 !== 0, note: 'ünïcode 🙂' }));
  return [
    { role: 'user', content: `Turn ${n}: look up the open orders of customer ${n} and summarise them.` },
    { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'orders', arguments: JSON.stringify({ customer: n }) } }] },
    { role: 'tool', tool_call_id: id, content: JSON.stringify({ customer: n, rows }) },
    { role: 'assistant', content: `Customer ${n} has ${rows.length} orders; ${rows.filter((r) => r.ok).length} are ready.` },
  ];
}

async function main(): Promise<void> {
  const stack = await startScratchStack('bench-storage', { env: { COMPACTION_TAIL_TOKENS: '400' } });
  const config = loadConfig(stack.env);
  installRuntime(config, 'WARN');
  const database = openDatabase(config.databaseUrl);
  await runMigrations(database);
  const worker = await createSessionWorker({ config, database, log: () => undefined });
  const running = worker.run();
  const client = await SessionsClient.connect({ config, database });
  const count = async (query: ReturnType<typeof sql>) => Number(((await database.db.execute(query)).rows[0] as { n: string | number }).n);
  const results: Record<string, { beforeRetention: Measure[]; afterRetention: Measure }> = {};
  try {
    for (const mode of ['rotate', 'in_place'] as CompactionMode[]) {
      const id = `storage-${mode}`;
      await client.createSession({ sessionId: id, mode });
      let appendedMessages = 0;
      let appendedBytes = 0;
      const measure = async (compactions: number): Promise<Measure> => {
        const rows = await count(sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${id}`);
        const bytes = await count(
          sql`select coalesce(sum(octet_length(m.body::text)), 0) as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${id}`,
        );
        return {
          compactions,
          appendedMessages,
          appendedBytes,
          rows,
          bytes,
          rowsPerAppended: rows / appendedMessages,
          bytesPerAppendedByte: bytes / appendedBytes,
        };
      };
      const before: Measure[] = [];
      for (let n = 1; n <= CHECKPOINTS[CHECKPOINTS.length - 1]; n++) {
        // The first append holds three turns, so that the first compaction has a middle to summarise.
        const batch = n === 1 ? [...turn(-2), ...turn(-1), ...turn(1)] : turn(n);
        const { sessionId: head } = await client.append(id, batch);
        appendedMessages += batch.length;
        // Measured as Postgres keeps it (jsonb as text), like the stored rows.
        appendedBytes += await count(sql`select sum(octet_length(x::text)) as n from jsonb_array_elements(${JSON.stringify(batch)}::jsonb) x`);
        const result = await client.compact(head, { force: true });
        if (result.outcome !== 'compacted') throw new Error(`compaction ${n} of ${id}: ${result.outcome} (${result.reason})`);
        if (CHECKPOINTS.includes(n)) {
          before.push(await measure(n));
          console.error(`${mode}: ${n} compactions`);
        }
      }
      const totals = await client.operator.runRetention({ endedSessionDays: 0, archivedDays: 0 }, { batch: 5000 });
      const after = await measure(CHECKPOINTS[CHECKPOINTS.length - 1]);
      const audit = await client.operator.auditLineage(id);
      if (audit.lostMessages + audit.sequenceGaps + audit.forks > 0) throw new Error(`audit of ${id} after retention: ${JSON.stringify(audit)}`);
      results[mode] = { beforeRetention: before, afterRetention: after };
      console.error(`${mode}: retention pruned ${totals.messages} rows in ${totals.batches} batch(es)`);
    }
  } finally {
    await client.close();
    worker.shutdown();
    await running;
    await stack.stop();
  }

  const fmt = (x: number) => x.toFixed(2);
  const lines = ['| mode | compactions | appended messages | rows | rows / appended | bytes / appended bytes |', '| --- | ---: | ---: | ---: | ---: | ---: |'];
  for (const [mode, r] of Object.entries(results)) {
    for (const m of r.beforeRetention)
      lines.push(`| ${mode} | ${m.compactions} | ${m.appendedMessages} | ${m.rows} | ${fmt(m.rowsPerAppended)} | ${fmt(m.bytesPerAppendedByte)} |`);
    const a = r.afterRetention;
    lines.push(
      `| ${mode}, after retention | ${a.compactions} | ${a.appendedMessages} | ${a.rows} | ${fmt(a.rowsPerAppended)} | **${fmt(a.bytesPerAppendedByte)}** |`,
    );
  }
  const met = Object.values(results).every((r) => r.afterRetention.bytesPerAppendedByte <= 1.2);
  lines.push('', `target (at most 1.2x the appended bytes after retention): ${met ? 'met' : 'NOT met'}`);
  console.log(lines.join('\n'));
  const dir = path.join(PROJECT_ROOT, 'bench/results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `storage${quick ? '-quick' : ''}.json`),
    `${JSON.stringify({ at: new Date().toISOString(), checkpoints: CHECKPOINTS, results }, null, 2)}\n`,
  );
  if (!met) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
