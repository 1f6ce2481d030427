/**
 * A busy lineage keeps compacting: several writers append continuously (an agent's turns,
 * paced like model calls of 80-300 ms, with now and then one large tool output) while every
 * summary takes seconds, so each commit carries what was appended meanwhile and may leave the
 * head above the threshold. A commit that shrank what it summarised asks for a follow-up at
 * once (no cooldown), and the head never passes the ceiling (twice the threshold here: no
 * context window). The head is measured after every append by the test itself: the live rows
 * of the head, read from Postgres, counted with the lineage's tokenizer (not the lineage's
 * head_tokens), against the test's own list of what each writer appended.
 *
 * With the policy before follow-ups (a commit above the threshold climbed the cooldown ladder:
 * 1 minute, then 5, then 15), the first such commit stopped automatic compaction and the head
 * passed the ceiling within seconds.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/compaction/dialects';
import { tokenCounterFor } from '../../src/compaction/token-counter';
import { seededRandom } from '../support/strict-provider';
import { uniqueId, useTestStack } from '../support/stack';

const THRESHOLD = 6000;
const CEILING = 2 * THRESHOLD; // sc_ceiling_tokens: no context window, so twice the threshold
const SUMMARY_MS = 2000;
const WRITERS = 3;
const TURNS_PER_WRITER = 60;

// The default cooldown ladder (1, 5, 15 minutes): what a user runs.
const stack = useTestStack();
const counter = tokenCounterFor(null);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rowsOf = async (query: ReturnType<typeof sql>) => (await stack().db.db.execute(query)).rows as Array<Record<string, any>>;

/** One turn of a coding agent as one batch: a request, parallel tool calls with JSON results, or an answer. */
function turn(writer: number, n: number, rand: () => number): Message[] {
  const tag = `w${writer}-t${n}`;
  const kind = n % 3;
  if (kind === 0) return [{ role: 'user', content: `(${tag}) Please check the ${['parser', 'lexer', 'cache'][writer % 3]} again and report.` }];
  if (kind === 1) {
    const calls = [0, 1].map((k) => ({
      id: `call_${tag}_${k}`,
      type: 'function',
      function: { name: 'read_file', arguments: JSON.stringify({ path: `src/${tag}-${k}.ts` }) },
    }));
    // Every 20th turn of the first writer is a large output (cat of a big file): a burst.
    const big = writer === 0 && n % 20 === 1;
    const output = (k: number) =>
      JSON.stringify({
        path: `src/${tag}-${k}.ts`,
        lines: Array.from({ length: big ? 700 : 3 + Math.floor(rand() * 8) }, (_, i) => `const v${i} = ${i * k};`),
      });
    return [{ role: 'assistant', content: null, tool_calls: calls }, ...calls.map((c, k) => ({ role: 'tool', tool_call_id: c.id, content: output(k) }))];
  }
  return [{ role: 'assistant', content: `(${tag}) Done: the ${rand() < 0.5 ? 'test passes' : 'build is green'}.` }];
}

describe('a busy lineage', () => {
  it('keeps compacting while writers append during slow summaries: the head stays under the ceiling and comes back under the threshold', async () => {
    const id = uniqueId('busy');
    await stack().client.createSession({ sessionId: id, compactAt: THRESHOLD });
    stack().llm.setDefault({ delayMs: SUMMARY_MS });
    await stack().client.append(id, [{ role: 'system', content: 'You are a careful coding agent.' }]);

    // The test's own measure of the head after every append: its live rows, counted here.
    const measured: Array<{ tokens: number; head: string }> = [];
    const measure = async (head: string) => {
      const rows = await rowsOf(sql`select body from messages where session_id = ${head} and archived_at is null`);
      const tokens = rows.reduce((sum, r) => sum + counter.count(r.body as Message), 0);
      measured.push({ tokens, head });
    };
    const appended: Message[] = [];
    const writer = async (w: number) => {
      const rand = seededRandom(1000 + w);
      for (let n = 0; n < TURNS_PER_WRITER; n++) {
        const batch = turn(w, n, rand);
        const result = await stack().client.append(id, batch);
        appended.push(...batch);
        await measure(result.sessionId);
        // The agent's model call before its next turn.
        await pause(80 + Math.floor(rand() * 220));
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    const stoppedAt = await rowsOf(sql`select count(*)::int as n from compactions where lineage_id = ${id}`);

    // Once the writers stop, the lineage settles under the threshold within a bounded number of jobs.
    const deadline = Date.now() + 60_000;
    let state = await stack().client.state(id);
    for (; Date.now() < deadline; state = await stack().client.state(id)) {
      const [lineage] = await rowsOf(sql`select head_session_id from lineages where id = ${id}`);
      if (!state.inFlight && state.queue.length === 0 && state.headSessionId === lineage.head_session_id) {
        await measure(state.headSessionId);
        if (measured.at(-1)!.tokens < THRESHOLD) break;
      }
      await pause(200);
    }
    const jobs = await rowsOf(sql`select outcome, trigger, follow_up_request_id, tokens_after from compactions where lineage_id = ${id} order by started_at`);
    const peak = Math.max(...measured.map((m) => m.tokens));
    console.info(
      `busy lineage: ${appended.length} messages from ${WRITERS} writers, ${jobs.length} jobs (${jobs.filter((j) => j.follow_up_request_id).length} asked a follow-up), ` +
        `highest head ${peak} tokens (threshold ${THRESHOLD}, ceiling ${CEILING}), final ${measured.at(-1)!.tokens}`,
    );

    // The burst landed: some commit carried enough to stay above the threshold, and followed up.
    expect(jobs.some((j) => j.follow_up_request_id !== null)).toBe(true);
    expect(jobs.filter((j) => j.outcome === 'compacted').length).toBeGreaterThanOrEqual(3);
    // Under the ceiling at every point the test measured.
    expect(measured.filter((m) => m.tokens >= CEILING)).toEqual([]);
    // Back under the threshold, within three jobs of the writers stopping.
    expect(measured.at(-1)!.tokens).toBeLessThan(THRESHOLD);
    expect(jobs.length - stoppedAt[0].n).toBeLessThanOrEqual(3);
    // No cooldown was started: every commit shrank what it summarised.
    const [lineage] = await rowsOf(sql`select auto_failures, auto_cooldown_until from lineages where id = ${id}`);
    expect(lineage).toMatchObject({ auto_failures: 0, auto_cooldown_until: null });
  });
});
