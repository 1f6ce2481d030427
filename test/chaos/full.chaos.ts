/**
 * `npm run chaos`: every scenario at full size, with the checks of the small runs
 * (test/chaos/checks.ts); prints the reliability table and saves it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, it } from 'vitest';
import { expectBadInput, expectChurn, expectLlmFaults, expectPostgresRestart, expectStorm, expectTemporalKill, expectWorkerKill } from './checks';
import { reliabilityTable } from './report';
import {
  badInput,
  lineageChurn,
  llmFaults,
  postgresRestartedMidCommit,
  type ReliabilityRow,
  temporalKilledMidCompaction,
  workerKilledMidSummary,
  workerStorm,
} from './scenarios';

const rows: ReliabilityRow[] = [];
const kept = <T extends ReliabilityRow>(row: T): T => {
  rows.push(row);
  return row;
};
const seed = Number(process.env.CHAOS_SEED ?? 20261130);

it('worker SIGKILLed mid-summary', async () => expectWorkerKill(kept(await workerKilledMidSummary({ sessions: 10 })), 10), 300_000);
it('Temporal server SIGKILLed mid-compaction', async () => expectTemporalKill(kept(await temporalKilledMidCompaction({ sessions: 10 })), 10), 300_000);
it('Postgres restarted mid-commit', async () => expectPostgresRestart(kept(await postgresRestartedMidCommit({ sessions: 5 })), 5), 300_000);
it('LLM faults', async () => expectLlmFaults(kept(await llmFaults())), 300_000);
// Three lineages of each dialect.
it('worker storm', async () => expectStorm(kept(await workerStorm({ workers: 3, sessions: 12, seconds: 120, seed })), 12), 600_000);
// Every hostile string in every site, both ways; both non-text requests with both summarisers.
it('bad input', async () => expectBadInput(kept(await badInput({ iterations: 2000, cliRuns: 20, seed, exhaustive: true }))), 600_000);
// Five erase-and-recreate cycles with four old writers; retention over four rotated lineages.
it('lineage churn', async () => expectChurn(kept(await lineageChurn({ cycles: 5, writers: 4, retentionLineages: 4 })), 5), 300_000);

afterAll(() => {
  const table = reliabilityTable(rows);
  const dir = path.join(__dirname, '../../chaos-results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}.json`), `${JSON.stringify(rows, null, 2)}\n`);
  console.log(`\n${table}\n`);
});
