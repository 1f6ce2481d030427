import { Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import { buildCandidate } from '../src/compaction/candidate';
import type { Message } from '../src/compaction/dialects';
import { openaiChat } from '../src/compaction/dialects/openai-chat';
import { SUMMARY_RENDER_CAPS } from '../src/compaction/summary-prompt';
import { planCompaction, DEFAULT_PLAN_OPTIONS } from '../src/compaction/plan';
import type { Summariser } from '../src/activities/summariser';

export const FLOOR_TABLE_SQL =
  'create table if not exists bench_floor_rows (id bigserial primary key, n integer not null, at timestamptz not null default now())';

/** Floor (c)'s unit of work, and the same-shape floor activity's: one single-row INSERT transaction. */
export async function insertFloorRow(pool: Pool, n: number): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query('insert into bench_floor_rows (n) values ($1)', [n]);
    await client.query('commit');
  } finally {
    client.release();
  }
}

/** Activities of the benchmark's auxiliary worker: the naive design's and the same-shape floor's. */
export function createNaiveActivities(summariser: Summariser, pool: Pool) {
  return {
    /** The naive design's activity: the same plan and summariser, the transcript in and out by value. */
    async naiveSummarise(messages: Message[]): Promise<Message[]> {
      const plan = planCompaction(messages, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 200 });
      if (plan.middle.length === 0) return messages;
      const summary = await summariser.summarise(
        {
          lines: plan.middle.map((i) => openaiChat.render(messages[i], SUMMARY_RENDER_CAPS)),
          previousSummary: plan.previousSummary,
          force: false,
          chunk: { index: 1, count: 1 },
          cut: false,
        },
        { signal: new AbortController().signal, onProgress: () => undefined },
      );
      return buildCandidate(plan, summary.text, messages).map((entry) => entry.message);
    },
    /** The same-shape floor: heartbeat once, one single-row INSERT transaction. */
    async floorTransaction(n: number): Promise<number> {
      Context.current().heartbeat({ phase: 'floor' });
      await insertFloorRow(pool, n);
      return n;
    },
  };
}

export type NaiveActivities = ReturnType<typeof createNaiveActivities>;
