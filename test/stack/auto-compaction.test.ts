/**
 * The threshold policy on the real stack: appends request a compaction whenever the head is
 * at or above the threshold, never while one is pending or a cooldown runs, climb the
 * cooldown ladder after refusals, and send a lost request again. Token counts come from the
 * lineage model's tokenizer.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { appendMessages, beginJob } from '../../src/db/session-store';
import { InvalidInputError } from '../../src/errors';
import { conversation, type TestStack, uniqueId, useTestStack } from '../support/stack';

const COOLDOWNS_MS = [3000, 6000];
const stack = useTestStack({ env: { AUTO_COMPACTION_COOLDOWNS_MS: COOLDOWNS_MS.join(','), AUTO_COMPACTION_RESEND_MS: '3000' } });

const rowsOf = async (query: ReturnType<typeof sql>) => (await stack().db.db.execute(query)).rows as Array<Record<string, any>>;
const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const userMessage = (text: string) => [{ role: 'user', content: text }];
/**
 * Waits until the summariser is asked for the request's job (it answers after 1.5 s), appends
 * twelve long progress notes meanwhile (over 2,000 tokens), then returns the job's answer: they are carried into the new head.
 */
async function appendedDuringSlowSummary(on: TestStack, id: string, requestId: string, summary?: string) {
  on.llm.script({ delayMs: 1500, text: summary });
  await on.llm.waitForRequests(1);
  const during = Array.from({ length: 12 }, (_, i) => ({ role: 'assistant', content: `progress ${i}: ${words(250, 'p')}` }));
  const landed = await on.client.append(id, during);
  const answer = await on.client.waitForResult(id, requestId);
  // The appends landed while the job ran: it carried them.
  expect(answer.messagesAfter).toBeGreaterThan(during.length);
  expect(landed.sessionId).toBe(id);
  return answer;
}
/** Thirty short requests with long answers (about 3,000 tokens): the ledger of the requests stays small. */
const thirtyTurns = () =>
  Array.from({ length: 30 }, (_, i) => [
    { role: 'user', content: `request ${i}` },
    { role: 'assistant', content: `answer ${i}: ${words(70, 'a')}` },
  ]).flat();

/** Appends small messages until one requests a compaction; returns it and when it was made. */
async function appendUntilFired(id: string, deadlineMs: number) {
  const deadline = Date.now() + deadlineMs;
  for (let n = 0; Date.now() < deadline; n++) {
    const at = Date.now();
    const appended = await stack().client.append(id, [{ role: 'assistant', content: `note ${n}` }]);
    if (appended.compactionRequestId) return { appended, at, appendsBefore: n };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no append requested a compaction within ${deadlineMs} ms`);
}

describe('auto-compaction', () => {
  it('neither loops nor stalls: a refused job cools down on the ladder, then appends fire again', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 300 });
    // One message over the threshold with nothing to summarise around it: refused.
    const first = await stack().client.append(id, userMessage(words(1900, 'w')));
    expect(first.compactionRequestId).toBeDefined();
    const refused = await stack().client.waitForResult(id, first.compactionRequestId!);
    const refusedAt = Date.now();
    expect(refused).toMatchObject({ outcome: 'refused', reason: expect.stringMatching(/nothing to summarise/) });

    // During the cooldown, no append requests anything (no loop).
    for (let i = 0; i < 5; i++) {
      const appended = await stack().client.append(id, [{ role: 'assistant', content: `quiet ${i}` }]);
      if (Date.now() < refusedAt + COOLDOWNS_MS[0] - 500) expect(appended.compactionRequestId).toBeUndefined();
    }
    // After it, the next append fires again (no stall), though the head never crossed anew.
    const again = await appendUntilFired(id, 20_000);
    expect(again.at).toBeGreaterThanOrEqual(refusedAt + COOLDOWNS_MS[0] - 1000);
    const second = await stack().client.waitForResult(id, again.appended.compactionRequestId!);
    const secondAt = Date.now();

    if (second.outcome !== 'compacted') {
      // A second refusal climbs the ladder: the next wait is the longer step.
      const third = await appendUntilFired(id, 30_000);
      expect(third.at).toBeGreaterThanOrEqual(secondAt + COOLDOWNS_MS[1] - 1000);
      await stack().client.waitForResult(id, third.appended.compactionRequestId!);
    }
    const jobs = await rowsOf(sql`select trigger, outcome from compactions where lineage_id = ${id} order by started_at`);
    expect(jobs.every((j) => j.trigger === 'threshold')).toBe(true);
    expect(jobs.length).toBeLessThanOrEqual(3);
  });

  it('an automatic request that joined a job which then aborts is settled: the ladder climbs, nothing stays pending', async () => {
    const id = uniqueId('auto-join');
    await stack().client.createSession({ sessionId: id, compactAt: 5000 });
    await stack().client.append(id, conversation(12));
    // A manual compaction whose summariser fails for good (401), slowly enough to be joined.
    stack().llm.script({ status: 401, delayMs: 1500 });
    const manual = stack().client.compact(id, { requestId: uniqueId('manual') });
    await stack().llm.waitForRequests(1);
    const crossing = await stack().client.append(id, userMessage(words(6000, 'w')));
    expect(crossing.compactionRequestId).toBeDefined(); // the automatic request, for the head being compacted
    expect(await manual).toMatchObject({ outcome: 'aborted' });
    expect(await stack().client.waitForResult(id, crossing.compactionRequestId!)).toMatchObject({ outcome: 'aborted' });
    // The fault landed once: one summariser call, for the one job both requests shared.
    expect(stack().llm.requests).toHaveLength(1);
    const [lineage] = await rowsOf(sql`select auto_request_id, auto_failures, auto_cooldown_until from lineages where id = ${id}`);
    expect(lineage).toMatchObject({ auto_request_id: null, auto_failures: 1 });
    expect(lineage.auto_cooldown_until).not.toBeNull();
  });

  it('says so when a compaction cannot bring the head under the threshold, and the ladder applies', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 400 });
    const turns = Array.from({ length: 30 }, (_, i) => [
      { role: 'user', content: `request ${i}: ${words(20, 'u')}` },
      { role: 'assistant', content: `answer ${i}: ${words(20, 'a')}` },
    ]).flat();
    // A summary far larger than the threshold, though (with the ledger of the requests after it) smaller than the transcript.
    stack().llm.script({ text: words(400, 's') });
    const appended = await stack().client.append(id, turns);
    const result = await stack().client.waitForResult(id, appended.compactionRequestId!);
    expect(result.outcome).toBe('compacted');
    expect(result.reason).toMatch(/at or above the threshold of 400/);
    // Above the threshold by itself (nothing was appended meanwhile): another job now would find
    // nothing more to summarise, so it cools down and the next append does not fire.
    const next = await stack().client.append(id, [{ role: 'assistant', content: 'one more' }]);
    expect(next.headTokens).toBeGreaterThanOrEqual(400);
    expect(next.compactionRequestId).toBeUndefined();
  });

  it('a commit that shrank the head but stays above the threshold with what was appended meanwhile compacts again at once, with no cooldown', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 2000 });
    const appended = await stack().client.append(id, thirtyTurns());
    const first = await appendedDuringSlowSummary(stack(), id, appended.compactionRequestId!);
    expect(first).toMatchObject({
      outcome: 'compacted',
      reason: expect.stringMatching(/appended meanwhile, at or above the threshold of 2000; compacting again at once/),
    });
    expect(first.followUpRequestId).toBeDefined();
    // The follow-up ran with no append asking for it, and brought the head under.
    const second = await stack().client.waitForResult(id, first.followUpRequestId!);
    expect(second).toMatchObject({ outcome: 'compacted', generation: 2 });
    expect(second.tokensAfter).toBeLessThan(2000);
    expect(stack().llm.requests).toHaveLength(2);
    const jobs = await rowsOf(sql`select request_ids, trigger, follow_up_request_id from compactions where lineage_id = ${id} order by started_at`);
    expect(jobs).toEqual([
      { request_ids: [appended.compactionRequestId], trigger: 'threshold', follow_up_request_id: first.followUpRequestId },
      { request_ids: [first.followUpRequestId], trigger: 'threshold', follow_up_request_id: null },
    ]);
    const [lineage] = await rowsOf(sql`select auto_failures, auto_cooldown_until, auto_follow_ups from lineages where id = ${id}`);
    expect(lineage).toEqual({ auto_failures: 0, auto_cooldown_until: null, auto_follow_ups: 0 });
    // A later attempt of the first job (its first attempt's answer lost) finds it committed, with its follow-up.
    const [committed] = await rowsOf(sql`select id, parent_session_id from compactions where follow_up_request_id is not null and lineage_id = ${id}`);
    const job = { jobId: committed.id, lineageId: id, parentSessionId: committed.parent_session_id, generation: 0, requestIds: [], trigger: 'threshold' };
    const again = await beginJob(stack().db.db, job, 'fake-model', 99);
    expect(again).toMatchObject({ job: { outcome: 'compacted', followUpRequestId: first.followUpRequestId } });
  });

  it('a commit whose own head is above the threshold cools down, whatever was appended meanwhile', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 1500 });
    const appended = await stack().client.append(id, thirtyTurns());
    // A summary larger than the threshold by itself, though smaller than what it summarised.
    const result = await appendedDuringSlowSummary(stack(), id, appended.compactionRequestId!, words(1100, 's'));
    expect(result).toMatchObject({ outcome: 'compacted', reason: expect.stringMatching(/at or above the threshold of 1500$/) });
    expect(result.followUpRequestId).toBeUndefined();
    const [lineage] = await rowsOf(sql`select auto_failures, auto_cooldown_until > now() as cooling from lineages where id = ${id}`);
    expect(lineage).toEqual({ auto_failures: 1, cooling: true });
    expect(stack().llm.requests).toHaveLength(1);
  });

  it('sends again a request whose signal failed, on the next append', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 1000 });
    const below = await stack().client.append(
      id,
      Array.from({ length: 12 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}: ${words(30, 't')}` })),
    );
    expect(below.compactionRequestId).toBeUndefined();
    const client = stack().client;
    const realRequest = client.requestCompaction.bind(client);
    let failures = 0;
    client.requestCompaction = async () => {
      failures++;
      throw new Error('the network is down');
    };
    let failed;
    try {
      failed = await client.append(id, userMessage(words(400, 'big')));
    } finally {
      client.requestCompaction = realRequest;
    }
    expect(failures).toBe(1); // the fault landed
    expect(failed.compactionRequestId).toBeUndefined();
    expect(failed.compactionRequestError).toMatch(/the network is down/);

    const next = await client.append(id, [{ role: 'assistant', content: 'working on it' }]);
    expect(next.compactionRequestId).toBeDefined();
    expect((await client.waitForResult(id, next.compactionRequestId!)).outcome).toBe('compacted');
  });

  it('sends again a request whose sender died before signalling, once it is older than the resend time', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 300 });
    // An append made by a client that then died: the request is recorded, never signalled.
    const lost = await appendMessages(stack().db.db, id, [{ role: 'user', content: words(400, 'x') }], [500], stack().config.autoCompaction);
    const lostAt = Date.now();
    expect(lost.autoCompactionRequestId).toBeDefined();
    const immediately = await stack().client.append(id, [{ role: 'assistant', content: 'still pending' }]);
    if (Date.now() < lostAt + 2500) expect(immediately.compactionRequestId).toBeUndefined();
    const resent = await appendUntilFired(id, 20_000);
    expect(resent.at).toBeGreaterThanOrEqual(lostAt + 2000);
    expect(resent.appended.compactionRequestId).not.toBe(lost.autoCompactionRequestId);
  });
});

describe('auto-compaction and append keys', () => {
  it('a keyed append resent after a lost answer does not send its compaction request again', async () => {
    const id = uniqueId('auto');
    await stack().client.createSession({ sessionId: id, compactAt: 300 });
    const batch = [{ role: 'user', content: words(400, 'k') }];
    const first = await stack().client.append(id, batch, { appendKey: 'k-1' });
    expect(first.compactionRequestId).toBeDefined();
    const resent = await stack().client.append(id, batch, { appendKey: 'k-1' });
    expect(resent).toMatchObject({ replayed: true, lastLineageSeq: first.lastLineageSeq });
    expect(resent.compactionRequestId).toBeUndefined();
    await stack().client.waitForResult(id, first.compactionRequestId!, { timeoutMs: 60_000 });
    const jobs = await rowsOf(sql`select request_ids from compactions where lineage_id = ${id}`);
    expect(jobs).toHaveLength(1);
  });
});

describe('thresholds and token counts', () => {
  it('takes the threshold as a share of the context window, from the model or given', async () => {
    const a = uniqueId('pct');
    expect(await stack().client.createSession({ sessionId: a, compactAt: '80%', model: 'gpt-4o' })).toMatchObject({
      compactAtTokens: 102_400,
      contextWindow: 128_000,
    });
    const b = uniqueId('pct');
    expect(await stack().client.createSession({ sessionId: b, compactAt: '50%', model: 'local-llm', contextWindow: 32_000 })).toMatchObject({
      compactAtTokens: 16_000,
    });
    const c = uniqueId('pct');
    await expect(stack().client.createSession({ sessionId: c, compactAt: '80%', model: 'local-llm' })).rejects.toMatchObject({
      name: 'InvalidInputError',
      field: 'compactAt',
    });
    await expect(stack().client.createSession({ sessionId: c, compactAt: '180%', contextWindow: 1000 })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await rowsOf(sql`select id from lineages where id = ${c}`)).toEqual([]);
  });

  it('stores real token counts for OpenAI models and estimates for others', async () => {
    const real = uniqueId('tok');
    await stack().client.createSession({ sessionId: real, model: 'gpt-4o' });
    const counted = await stack().client.append(real, [
      { role: 'user', content: 'hello world' },
      { role: 'user', content: 'a'.repeat(4000) },
    ]);
    const estimated = uniqueId('tok');
    await stack().client.createSession({ sessionId: estimated });
    await stack().client.append(estimated, [
      { role: 'user', content: 'hello world' },
      { role: 'user', content: 'a'.repeat(4000) },
    ]);
    const tokens = async (id: string) => (await rowsOf(sql`select token_estimate as n from messages where session_id = ${id} order by seq`)).map((r) => r.n);
    expect(await tokens(real)).toEqual([6, expect.any(Number)]);
    expect((await tokens(real))[1]).toBeLessThan(1000); // 4,000 repeated characters are few tokens
    expect(await tokens(estimated)).toEqual([7, 1004]);
    expect(counted.headTokens).toBe((await tokens(real)).reduce((a, b) => a + b, 0));
  });
});

describe('auto-compaction with no follow-ups allowed and the default cooldowns', () => {
  const strict = useTestStack({ env: { AUTO_COMPACTION_MAX_FOLLOW_UPS: '0' } });
  const rows = async (query: ReturnType<typeof sql>) => (await strict().db.db.execute(query)).rows as Array<Record<string, any>>;

  it('past the bound of follow-ups the next append asks instead, and no cooldown starts', async () => {
    const id = uniqueId('auto');
    await strict().client.createSession({ sessionId: id, compactAt: 2000 });
    const appended = await strict().client.append(id, thirtyTurns());
    const result = await appendedDuringSlowSummary(strict(), id, appended.compactionRequestId!);
    expect(result).toMatchObject({ outcome: 'compacted', reason: expect.stringMatching(/0 follow-up\(s\) in a row already: the next append asks again/) });
    expect(result.followUpRequestId).toBeUndefined();
    const [lineage] = await rows(sql`select auto_failures, auto_cooldown_until from lineages where id = ${id}`);
    expect(lineage).toEqual({ auto_failures: 0, auto_cooldown_until: null });
    const next = await strict().client.append(id, [{ role: 'assistant', content: 'one more' }]);
    expect(next.headTokens).toBeGreaterThanOrEqual(2000);
    expect(next.compactionRequestId).toBeDefined();
    expect(await strict().client.waitForResult(id, next.compactionRequestId!)).toMatchObject({ outcome: 'compacted' });
  });

  it('no cooldown holds back the append that takes the head across the ceiling, and none after it loops', async () => {
    const id = uniqueId('auto');
    // Threshold 300 and no context window: the ceiling is 600.
    await strict().client.createSession({ sessionId: id, compactAt: 300 });
    // One message over the threshold with nothing to summarise around it: refused, and the 1-minute cooldown starts.
    const first = await strict().client.append(id, userMessage(words(320, 'w')));
    expect(first.headTokens).toBeGreaterThanOrEqual(300);
    expect(first.headTokens).toBeLessThan(600);
    expect(await strict().client.waitForResult(id, first.compactionRequestId!)).toMatchObject({ outcome: 'refused' });
    const [cooling] = await rows(sql`select auto_cooldown_until > now() as cooling from lineages where id = ${id}`);
    expect(cooling.cooling).toBe(true);
    // Under the ceiling the cooldown holds.
    const below = await strict().client.append(id, [{ role: 'assistant', content: words(20, 'b') }]);
    expect(below.headTokens).toBeLessThan(600);
    expect(below.compactionRequestId).toBeUndefined();
    // Across it, a compaction is requested all the same.
    const across = await strict().client.append(id, [{ role: 'user', content: words(300, 'c') }]);
    expect(across.headTokens).toBeGreaterThanOrEqual(600);
    expect(across.compactionRequestId).toBeDefined();
    const answer = await strict().client.waitForResult(id, across.compactionRequestId!);
    // Above it, appends do not ask again while the cooldown runs (a head no compaction can shrink does not loop).
    if (answer.outcome !== 'compacted') {
      const [still] = await rows(sql`select auto_cooldown_until > now() as cooling, head_tokens from lineages where id = ${id}`);
      expect(still).toMatchObject({ cooling: true });
      expect(Number(still.head_tokens)).toBeGreaterThanOrEqual(600);
      const above = await strict().client.append(id, [{ role: 'assistant', content: 'still here' }]);
      expect(above.compactionRequestId).toBeUndefined();
    }
  });
});
