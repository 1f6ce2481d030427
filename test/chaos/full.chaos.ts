/** `npm run chaos`: every scenario at full size; prints the reliability table and saves it. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { reliabilityTable } from './report';
import { badInput, llmFaults, postgresRestartedMidCommit, type ReliabilityRow, temporalKilledMidCompaction, workerKilledMidSummary, workerStorm } from './scenarios';

const rows: ReliabilityRow[] = [];
const intact = (row: ReliabilityRow) => {
  rows.push(row);
  expect(row).toMatchObject({ forks: 0, orphans: 0, lostWrites: 0, duplicatedWrites: 0, errorsToCallers: 0 });
  expect(row.answered).toBe(row.requests);
};

it('worker SIGKILLed mid-summary', async () => intact(await workerKilledMidSummary({ sessions: 10 })), 300_000);
it('Temporal server SIGKILLed mid-compaction', async () => intact(await temporalKilledMidCompaction({ sessions: 10 })), 300_000);
it('Postgres restarted mid-commit', async () => intact(await postgresRestartedMidCommit({ sessions: 5 })), 300_000);
it('LLM faults', async () => intact(await llmFaults()), 300_000);
it('worker storm', async () => {
  const row = await workerStorm({ workers: 3, sessions: 12, seconds: 120 });
  expect(row.missingAppends).toBe(0);
  intact(row);
}, 600_000);
it('bad input', async () => {
  const row = await badInput({ iterations: 2000, cliRuns: 20, seed: Number(process.env.CHAOS_SEED ?? 20261130) });
  expect(row.untyped).toEqual([]);
  intact(row);
}, 600_000);

afterAll(() => {
  const table = reliabilityTable(rows);
  const dir = path.join(__dirname, '../../chaos-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}.json`), `${JSON.stringify(rows, null, 2)}\n`);
  console.log(`\n${table}\n`);
});
