/**
 * The chaos suite at small sizes, inside `npm test`. `npm run chaos` runs the same
 * scenarios at full size (test/chaos/full.chaos.ts). After every scenario: no fork, no
 * orphan, nothing lost or duplicated, and every caller got an answer.
 */
import { describe, expect, it } from 'vitest';
import { badInput, llmFaults, postgresRestartedMidCommit, type ReliabilityRow, temporalKilledMidCompaction, workerKilledMidSummary, workerStorm } from './chaos/scenarios';

function expectIntact(row: ReliabilityRow) {
  expect(row.notes ?? '').not.toMatch(/first error/);
  expect(row).toMatchObject({ forks: 0, orphans: 0, lostWrites: 0, duplicatedWrites: 0, errorsToCallers: 0 });
  expect(row.answered).toBe(row.requests);
}

describe('chaos (small)', () => {
  it('worker SIGKILLed mid-summary: each compaction commits exactly once, the queue goes on', async () => {
    const row = await workerKilledMidSummary({ sessions: 3 });
    expectIntact(row);
    expect(row.compactionsCommitted).toBe(6);
    expect(row.notes).toBe('commits per (lineage, generation): max 1');
  });

  it('Temporal server SIGKILLed mid-compaction and restarted: every request answered, no duplicate child', async () => {
    const row = await temporalKilledMidCompaction({ sessions: 3 });
    expectIntact(row);
    expect(row.compactionsCommitted).toBe(3);
  });

  it('Postgres restarted mid-commit: the commit is retried and committed once', async () => {
    const row = await postgresRestartedMidCommit({ sessions: 2 });
    expectIntact(row);
    expect(row.compactionsCommitted).toBe(2);
    expect(row.notes).toBe('commits per (lineage, generation): max 1');
  });

  it('LLM faults: 401 aborts, every other fault is retried to success', async () => {
    const row = await llmFaults();
    expectIntact(row);
    expect(row.notes).toBe('401 aborted, the rest compacted');
  });

  it('a storm with random worker kills loses and forks nothing', async () => {
    const row = await workerStorm({ workers: 2, sessions: 3, seconds: 12 });
    expectIntact(row);
    expect(row.missingAppends).toBe(0);
    expect(row.compactionsCommitted).toBeGreaterThan(3);
    expect(row.faults).toMatch(/[1-9]\d* random worker kills/);
  });

  it('bad input gets typed errors, writes nothing and never harms the workflow', async () => {
    const row = await badInput({ iterations: 150, cliRuns: 3, seed: 20261130 });
    expect(row.untyped).toEqual([]);
    expectIntact(row);
  });
});
