/**
 * Seeds a long lineage for the wake section (issue 41 §4) without the workflow: the lineage is
 * created in the data plane (no workflow started), then each compaction is the worker's own
 * activity (`compactSession`: begin, snapshot, summary, gates, commit) run in this process
 * under a mock activity context, with appends between them, as fast as Postgres takes them.
 * The workflow starts later, at the lineage's first compact() through the client (an Update
 * with start), from the head and generation Postgres holds; the compactions after that take the
 * real path. Benchmark-only.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { type CompactSessionInput, createCompactionActivities } from '../src/activities/compaction';
import { createLlmSummariser } from '../src/activities/summariser';
import type { ChatMessage } from '../src/compaction/messages';
import type { Config } from '../src/config';
import type { DatabaseHandle } from '../src/db/database';
import { appendMessages, createSession } from '../src/db/data-plane';
import type { Answer } from '../src/workflows/contract';

/**
 * How a lineage of `age` compactions is built: the last `real` through the workflow (enough
 * for the run to carry as many remembered answers as a lineage built wholly that way, and a
 * whole number of runs of `period`), the `seeded` before them directly.
 */
export function wakeBuildPlan(age: number, period: number, rememberedAnswers: number): { seeded: number; real: number } {
  const real = Math.min(age, Math.ceil(rememberedAnswers / period) * period);
  return { seeded: age - real, real };
}

/** Creates `sessionId` and commits `compactions` forced compactions to it, `append` messages before each. */
export async function seedLineage(
  options: { config: Config; database: DatabaseHandle; sessionId: string; compactions: number; initial: ChatMessage[] },
  append: (step: number) => ChatMessage[],
  progress: (line: string) => void = () => undefined,
): Promise<{ headSessionId: string; generation: number; ms: number }> {
  const { config, database, sessionId } = options;
  const started = performance.now();
  const activities = createCompactionActivities({
    db: database.db,
    summariser: createLlmSummariser(config.llm, { stallTimeoutMs: 60_000, requestTimeoutMs: 60_000 }),
    plan: { tailTokenBudget: config.compaction.tailTokenBudget, headGroups: config.compaction.headGroups, minTailGroups: config.compaction.minTailGroups },
    summaryInputTokens: config.compaction.summaryInputTokens,
    ledger: { percent: config.compaction.ledgerPercent, maxTokens: config.compaction.ledgerMaxTokens, requestChars: config.compaction.ledgerRequestChars },
    summaryLayout: config.compaction.summaryLayout,
    autoCompaction: config.autoCompaction,
    heartbeatIntervalMs: 10_000,
  });
  const lineage = await createSession(database.db, { sessionId, mode: 'rotate' });
  await appendMessages(database.db, sessionId, options.initial);
  const env = new MockActivityEnvironment();
  let head = { sessionId, generation: lineage.generation };
  for (let step = 1; step <= options.compactions; step++) {
    const input: CompactSessionInput = {
      jobId: `seed/${lineage.lineageId}/${step}`,
      lineageId: lineage.lineageId,
      parentSessionId: head.sessionId,
      generation: head.generation,
      requestIds: [`seed-${step}`],
      trigger: 'update',
      mode: 'rotate',
      force: true,
    };
    const answer = (await env.run(activities.compactSession, input)) as Answer;
    if (answer.outcome !== 'compacted') throw new Error(`seeding ${sessionId}: compaction ${step} answered ${answer.outcome} (${answer.reason ?? ''})`);
    head = { sessionId: answer.sessionId, generation: answer.generation };
    await appendMessages(database.db, head.sessionId, append(step));
    if (step % 1000 === 0) progress(`${sessionId}: ${step} of ${options.compactions} seeded, ${Math.round((performance.now() - started) / step)} ms each`);
  }
  return { headSessionId: head.sessionId, generation: head.generation, ms: performance.now() - started };
}
