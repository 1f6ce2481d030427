/**
 * What every chaos scenario must show, shared by the small runs in `npm test`
 * (test/chaos.test.ts) and the full-size runs of `npm run chaos` (test/chaos/full.chaos.ts):
 * the same commits, outcomes and evidence that the fault landed, at any size.
 */
import { expect } from 'vitest';
import type { ReliabilityRow, StormRow } from './scenarios';

/** No fork, orphan, loss or duplicate (the project's audit and our own ledger), every caller answered. */
export function expectIntact(row: ReliabilityRow) {
  expect(row.notes ?? '').not.toMatch(/first error/);
  expect(row).toMatchObject({ forks: 0, orphans: 0, lostWrites: 0, duplicatedWrites: 0, errorsToCallers: 0 });
  expect(row.answered).toBe(row.requests);
  if (row.ledgerProblems !== undefined) {
    expect(row.ledgerProblems).toEqual([]);
    expect(row.ledgerChecked).toBeGreaterThan(0);
  }
}

export function expectWorkerKill(row: ReliabilityRow, sessions: number) {
  expectIntact(row);
  // Two compactions of every session, each committed exactly once.
  expect(row.compactionsCommitted).toBe(2 * sessions);
  expect(row.notes).toBe('commits per (lineage, generation): max 1');
  // The kill landed mid-summary: attempts were retried, and the LLM saw more calls than jobs.
  expect(row.evidence?.maxAttempts).toBeGreaterThan(1);
  expect(row.evidence?.firstWaveLlmCalls).toBeGreaterThan(sessions);
}

export function expectTemporalKill(row: ReliabilityRow, sessions: number) {
  expectIntact(row);
  expect(row.compactionsCommitted).toBe(sessions);
  expect(row.evidence?.serverKilledBy).toBe('SIGKILL');
}

export function expectPostgresRestart(row: ReliabilityRow, sessions: number) {
  expectIntact(row);
  expect(row.compactionsCommitted).toBe(sessions);
  expect(row.notes).toBe('commits per (lineage, generation): max 1');
  // The restart landed while a commit was open, and a new server answered afterwards.
  expect(row.evidence).toMatchObject({ commitSleeping: true, restarted: true });
}

export function expectLlmFaults(row: ReliabilityRow) {
  expectIntact(row);
  expect(row.notes).toBe('401 aborted, the rest compacted');
}

export function expectStorm(row: StormRow, sessions: number) {
  expectIntact(row);
  expect(row.appendErrors).toBe(0);
  expect(row.missingAppends).toBe(0);
  expect(row.acknowledgedAppends).toBeGreaterThan(sessions);
  expect(row.compactionsCommitted).toBeGreaterThan(sessions);
  expect(row.evidence?.kills).toBeGreaterThan(0);
}

export function expectBadInput(row: ReliabilityRow & { untyped: string[] }) {
  expect(row.untyped).toEqual([]);
  expectIntact(row);
}
