/**
 * The chaos suite at small sizes, inside `npm test`. `npm run chaos` runs the same
 * scenarios at full size (test/chaos/full.chaos.ts: more sessions per dialect, a longer storm,
 * every hostile string in every case, many more random calls) with the same checks
 * (test/chaos/checks.ts): no fork, no orphan, nothing lost or duplicated (the project's audit
 * and the test's own ledger), every caller answered, and evidence that each fault landed.
 */
import { describe, it } from 'vitest';
import { DIALECT_NAMES } from '../../src/compaction/dialects';
import { expectBadInput, expectChurn, expectLlmFaults, expectPostgresRestart, expectStorm, expectTemporalKill, expectWorkerKill } from '../chaos/checks';
import {
  badInput,
  lineageChurn,
  llmFaults,
  postgresRestartedMidCommit,
  temporalKilledMidCompaction,
  workerKilledMidSummary,
  workerStorm,
} from '../chaos/scenarios';

describe('chaos (small)', () => {
  it('worker SIGKILLed mid-summary: attempts are retried, each compaction commits exactly once, the queue goes on', async () => {
    expectWorkerKill(await workerKilledMidSummary({ sessions: 3 }), 3);
  });

  it('Temporal server SIGKILLed mid-compaction and restarted: every request answered, no duplicate child', async () => {
    expectTemporalKill(await temporalKilledMidCompaction({ sessions: 3 }), 3);
  });

  it('Postgres restarted mid-commit: the restart happened, the commit is retried and committed once', async () => {
    expectPostgresRestart(await postgresRestartedMidCommit({ sessions: 2 }), 2);
  });

  it('LLM faults: 401 aborts, every other fault is retried to success', async () => {
    expectLlmFaults(await llmFaults());
  });

  it('a seeded storm with random worker kills, one lineage per dialect, loses and forks nothing, no append fails, every head passes its strict provider', async () => {
    expectStorm(
      await workerStorm({ workers: 2, sessions: DIALECT_NAMES.length, seconds: 20, seed: Number(process.env.CHAOS_SEED ?? 20261130) }),
      DIALECT_NAMES.length,
    );
  });

  it('lineage churn: erased and re-created under a slow summary and old writers, nothing of the old incarnation reaches the new one; two retention batches at once leave no gap', async () => {
    expectChurn(await lineageChurn({ cycles: 2, writers: 2, retentionLineages: 2 }), 2);
  });

  it('bad input in every dialect (client, raw SQL, Updates, signals) gets typed errors, writes nothing and never stops a lineage compacting', async () => {
    expectBadInput(await badInput({ iterations: 120, cliRuns: 3, seed: 20261130 }));
  });
});
