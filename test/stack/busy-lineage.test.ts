/**
 * A busy lineage keeps compacting: several writers append continuously (an agent's turns with
 * JSON tool outputs and parallel calls, paced like model calls of 80-300 ms) while every
 * summary takes seconds, so each commit carries what was appended meanwhile and leaves the
 * head above the threshold. A commit that shrank what it summarised asks for a follow-up at
 * once (no cooldown), so the head stays under the ceiling (twice the threshold here: no
 * context window) and comes back under the threshold once the writers stop.
 *
 * Each summary answers once the writers have appended SUMMARY_SPAN tokens since it was asked
 * (a condition on the test's own ledger, not a time), so how much a job carries does not
 * depend on the machine's load. The head is measured after every append by the test itself:
 * the live rows of the head, read from Postgres, counted with the lineage's tokenizer (not
 * the lineage's head_tokens).
 *
 * With the policy before follow-ups (a commit above the threshold climbed the cooldown ladder:
 * 1 minute, then 5, then 15), automatic compaction stopped after the first commit and the head
 * passed the ceiling: see `npm test` on the commit before this file.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/compaction/dialects';
import { tokenCounterFor } from '../../src/compaction/token-counter';
import { seededRandom } from '../support/strict-provider';
import { uniqueId, useTestStack } from '../support/stack';

const THRESHOLD = 6000;
const CEILING = 2 * THRESHOLD; // sc_ceiling_tokens: no context window, so twice the threshold
/** Tokens the writers append while one summary runs: with the kept tail (2,500) and the summary, more than the threshold. */
const SUMMARY_SPAN = 3500;
const WRITERS = 3;
const TURNS_PER_WRITER = 120;

// The default cooldown ladder (1, 5, 15 minutes), what a user runs; a kept tail of 2,500 tokens;
// a summariser that may take a while before its first token (the lease stays 3 s: heartbeats go on).
const stack = useTestStack({ env: { COMPACTION_TAIL_TOKENS: '2500', COMPACTION_STALL_TIMEOUT_MS: '60000' } });
const counter = tokenCounterFor(null);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rowsOf = async (query: ReturnType<typeof sql>) => (await stack().db.db.execute(query)).rows as Array<Record<string, any>>;

/** One turn of a coding agent as one batch: a request, parallel tool calls with JSON results, or an answer. */
function turn(writer: number, n: number, rand: () => number): Message[] {
  const tag = `w${writer}-t${n}`;
  const kind = n % 3;
  if (kind === 0) return [{ role: 'user', content: `(${tag}) Check the ${['parser', 'lexer', 'cache'][writer % 3]} again.` }];
  if (kind === 1) {
    const calls = [0, 1].map((k) => ({
      id: `call_${n % 4}${k}`,
      type: 'function',
      function: { name: 'read_file', arguments: JSON.stringify({ path: `src/${tag}-${k}.ts` }) },
    }));
    const output = (k: number) =>
      JSON.stringify({ path: `src/${tag}-${k}.ts`, lines: Array.from({ length: 2 + Math.floor(rand() * 10) }, (_, i) => `const v${i} = ${i * k};`) });
    return [{ role: 'assistant', content: null, tool_calls: calls }, ...calls.map((c, k) => ({ role: 'tool', tool_call_id: c.id, content: output(k) }))];
  }
  return [{ role: 'assistant', content: `(${tag}) Done: the ${rand() < 0.5 ? 'test passes' : 'build is green'}.` }];
}

/** The test's own count of what the writers appended, and summaries that wait on it. */
class AppendLedger {
  total = 0;
  done = false;
  private waiters: Array<{ at: number; resolve: () => void }> = [];

  add(batch: Message[]): void {
    this.total += batch.reduce((sum, m) => sum + counter.count(m), 0);
    this.wake();
  }

  finish(): void {
    this.done = true;
    this.wake();
  }

  /** Settles once `span` more tokens were appended than now, or the writers are done. */
  appended(span: number): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ at: this.total + span, resolve });
      this.wake();
    });
  }

  private wake(): void {
    this.waiters = this.waiters.filter((w) => (this.done || this.total >= w.at ? (w.resolve(), false) : true));
  }
}

describe('a busy lineage', () => {
  it('keeps compacting while writers append during slow summaries: the head stays under the ceiling and comes back under the threshold', async () => {
    const id = uniqueId('busy');
    await stack().client.createSession({ sessionId: id, compactAt: THRESHOLD });
    const ledger = new AppendLedger();
    stack().llm.setDefault({ until: () => ledger.appended(SUMMARY_SPAN) });
    await stack().client.append(id, [{ role: 'system', content: 'You are a careful coding agent.' }]);

    // The test's own measure of the head after every append: its live rows, counted here.
    const measured: number[] = [];
    const measure = async (head: string) => {
      const rows = await rowsOf(sql`select body from messages where session_id = ${head} and archived_at is null`);
      measured.push(rows.reduce((sum, r) => sum + counter.count(r.body as Message), 0));
    };
    const writer = async (w: number) => {
      const rand = seededRandom(1000 + w);
      for (let n = 0; n < TURNS_PER_WRITER; n++) {
        const batch = turn(w, n, rand);
        const result = await stack().client.append(id, batch);
        ledger.add(batch);
        await measure(result.sessionId);
        // The agent's model call before its next turn.
        await pause(80 + Math.floor(rand() * 220));
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    ledger.finish();
    const [{ n: jobsWhileWriting }] = await rowsOf(sql`select count(*)::int as n from compactions where lineage_id = ${id}`);

    // Once the writers stop, the lineage settles under the threshold within a bounded number of jobs.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const state = await stack().client.operator.state(id);
      const [lineage] = await rowsOf(sql`select head_session_id from lineages where id = ${id}`);
      if (!state.inFlight && state.queue.length === 0 && state.headSessionId === lineage.head_session_id) {
        await measure(state.headSessionId);
        if (measured.at(-1)! < THRESHOLD) break;
      }
      if (Date.now() > deadline) break;
      await pause(200);
    }
    const jobs = await rowsOf(sql`select outcome, follow_up_request_id from compactions where lineage_id = ${id} order by started_at`);
    const followUps = jobs.filter((j) => j.follow_up_request_id !== null).length;
    const peak = Math.max(...measured);
    console.info(
      `busy lineage: ${ledger.total} tokens from ${WRITERS} writers, ${jobs.length} jobs (${followUps} asked a follow-up), ` +
        `highest head ${peak} tokens (threshold ${THRESHOLD}, ceiling ${CEILING}), final ${measured.at(-1)}`,
    );

    // Commits carried enough to stay above the threshold, and followed up.
    expect(followUps).toBeGreaterThanOrEqual(2);
    expect(jobs.every((j) => j.outcome === 'compacted')).toBe(true);
    // Under the ceiling at every point the test measured.
    expect(measured.filter((tokens) => tokens >= CEILING)).toEqual([]);
    // Back under the threshold, within three jobs of the writers stopping.
    expect(measured.at(-1)).toBeLessThan(THRESHOLD);
    expect(jobs.length - jobsWhileWriting).toBeLessThanOrEqual(3);
    // No cooldown was started: every commit shrank what it summarised.
    const [lineage] = await rowsOf(sql`select auto_failures, auto_cooldown_until from lineages where id = ${id}`);
    expect(lineage).toMatchObject({ auto_failures: 0, auto_cooldown_until: null });
  });
});
