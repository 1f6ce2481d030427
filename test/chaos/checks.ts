/**
 * What every chaos scenario must show, shared by the small runs in `npm test`
 * (test/stack/chaos.test.ts) and the full-size runs of `npm run chaos` (test/chaos/full.chaos.ts):
 * the same commits, outcomes and evidence that the fault landed, at any size.
 */
import { expect } from 'vitest';
import { DIALECT_NAMES } from '../../src/compaction/dialects';
import { HOSTILE_KINDS, hostileSites, MARKER_SPACES, structuralMistakes } from './dialect-shapes';
import type { BadInputRow, ChurnRow, ReliabilityRow, StormRow } from './scenarios';

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
  // The same per dialect (sessions go round-robin over them), and the heads the agents send next
  // pass the dialect's strict provider and keep the latest request verbatim.
  const dialects = DIALECT_NAMES.slice(0, Math.min(sessions, DIALECT_NAMES.length));
  expect(Object.keys(row.dialects).sort()).toEqual([...dialects].sort());
  for (const dialect of dialects) {
    const d = row.dialects[dialect]!;
    expect({ dialect, ...d }).toMatchObject({
      dialect,
      appendErrors: 0,
      ledgerProblems: [],
      providerRefusals: [],
      latestRequestProblems: [],
      ledgerForgeries: [],
    });
    // The forged outputs were summarised (their shell calls are in the ledgers), and forged nothing.
    expect(d.forgedCommandsInLedgers, dialect).toBeGreaterThan(0);
    expect(d.acknowledgedAppends, dialect).toBeGreaterThan(d.sessions);
    expect(d.compactionsCommitted, dialect).toBeGreaterThan(d.sessions);
    expect(d.ledgerSummarised, dialect).toBeGreaterThan(0);
    // The ledger found its markers where the dialect keeps text: it looked for some, and saw them in the prompts.
    expect(d.ledgerProbed, dialect).toBeGreaterThan(0);
  }
}

export function expectBadInput(row: BadInputRow) {
  expect(row.untyped).toEqual([]);
  expectIntact(row);
  // Per dialect: refused by the client and through SQL, answered with valid compactions by
  // both summarisers (each seeing its caps cut), and compacting after the fuzz.
  for (const dialect of DIALECT_NAMES) {
    const d = row.dialects[dialect];
    expect(d.hostileCompactions.llm.length, dialect).toBeGreaterThan(0);
    expect(d.hostileCompactions.extractive.length, dialect).toBeGreaterThan(0);
    expect(
      [...d.hostileCompactions.llm, ...d.hostileCompactions.extractive].filter((o) => o !== 'compacted'),
      dialect,
    ).toEqual([]);
    expect({ dialect, ...d }).toMatchObject({
      dialect,
      llmSawCuts: true,
      extractiveCut: true,
      afterFuzz: 'compacted',
      providerRefusals: [],
    });
    // Every case was sent (and, untyped being empty, refused right): from the client, each hostile
    // string in each site, a forged marker behind each space, each mistake, 10 other fields; through
    // SQL, a hostile string in each site, each forged marker, each mistake, 2 text parameters,
    // and the data plane's 4 limits (token count, message size, batch size, erasing an open lineage).
    const sites = hostileSites(dialect).length;
    const mistakes = structuralMistakes(dialect).length;
    expect(d.refusedByClient, dialect).toBeGreaterThanOrEqual(sites * HOSTILE_KINDS.length + MARKER_SPACES.length + mistakes + 10 * HOSTILE_KINDS.length);
    expect(d.refusedBySql, dialect).toBeGreaterThanOrEqual(sites + MARKER_SPACES.length + mistakes + 2 + 4);
    expect(d.sqlStates.SC400, dialect).toBeGreaterThanOrEqual(MARKER_SPACES.length + mistakes + 4);
    // The database refused the batches carrying its full-disk probe (the fault landed), as DatabaseQueryError.
    expect(d.refusedByDatabase, dialect).toBe(2);
  }
  // Every error the library answered was searched for the value the fuzz sent (untyped, above, lists any that held it).
  expect(row.errorsSearched).toBeGreaterThan(0);
}

export function expectChurn(row: ChurnRow, cycles: number) {
  expect(row.untyped).toEqual([]);
  expectIntact(row);
  expect(row.cycles).toHaveLength(cycles);
  for (const [c, cycle] of row.cycles.entries()) {
    // Nothing of the old job or the old writers reached the new lineage (own SQL).
    expect({ cycle: c, leaks: cycle.leaks }).toEqual({ cycle: c, leaks: [] });
    // The faults landed: the old job, summarising across the erase, reached its commit and was
    // answered stale; the old writers wrote before the erase and were refused after it
    // (their loop, the raw SQL append, the keyed resend, replaceTail, compact).
    expect({ cycle: c, outcome: cycle.oldJob, reason: cycle.oldJobReason }).toMatchObject({
      cycle: c,
      outcome: 'stale',
      reason: expect.stringMatching(/erased/),
    });
    expect(cycle.oldWriterAppendsBefore, `cycle ${c}`).toBeGreaterThan(0);
    expect(cycle.staleWritesRefused, `cycle ${c}`).toBeGreaterThanOrEqual(4);
  }
  expect(row.afterChurn).toBe('compacted');
  // Two retention batches at once: both deleted rows, the second was waiting while the first
  // was open (on the retention lock), and no sequence number went unrecorded (own SQL).
  const { retention } = row;
  expect(retention.firstBatch).toBeGreaterThan(0);
  expect(retention.secondBatch).toBeGreaterThan(0);
  expect(retention.secondOverlapped).toBe(true);
  expect(Object.values(retention.gaps).length).toBeGreaterThan(0);
  expect(retention.gaps).toEqual(Object.fromEntries(Object.keys(retention.gaps).map((l) => [l, 0])));
  expect(retention.secondWaitedOnLock).toBe(true);
}
