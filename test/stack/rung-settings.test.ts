/**
 * Which rungs a lineage uses, what each compaction costs, and the minimum-gain guard, on the real
 * stack (Temporal dev server, Postgres, the real `openai` client against the local LLM; issue 37
 * §1 and §4). A lineage created with rungs ['summary'] never masks, even when masking would fit;
 * a worker's COMPACTION_RUNGS is the default of a lineage created without a setting; what the
 * audit row records per rung is what the local LLM billed (counted on its side); an automatic
 * compaction that would not repay its cost is refused with its figures and no cooldown, and a
 * forced one is not judged.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/compaction/dialects';
import { estimateTranscriptTokens } from '../../src/compaction/tokens';
import { auditRows } from '../../src/db/session-store';
import { InvalidInputError } from '../../src/errors';
import { createInspectorApp } from '../../src/inspector/server';
import { plantedSession } from '../support/planted';
import { type TestStack, uniqueId, useTestStack } from '../support/stack';

const dialect = dialectOf('openai-chat');

/** A session masking alone brings under half its window (the masking rung's target): long old tool outputs. */
async function maskableLineage(on: TestStack, id: string, options: { rungs?: string[] } = {}) {
  const { messages } = plantedSession('openai-chat', 22, 8, { outputLines: 80, thinking: false });
  const tokens = estimateTranscriptTokens(messages, dialect);
  const created = await on.client.createSession({ sessionId: id, contextWindow: Math.ceil(tokens * 1.1), ...options });
  await on.client.append(id, messages);
  return created;
}

/** What the local LLM billed for the requests it answered, summed, as the audit row's costs name it. */
function billed(on: TestStack) {
  const sum = (f: (u: TestStack['llm']['requests'][number]['usage']) => number | undefined) => on.llm.requests.reduce((n, r) => n + (f(r.usage) ?? 0), 0);
  return {
    inputTokens: sum((u) => u.prompt_tokens),
    outputTokens: sum((u) => u.completion_tokens),
    cacheReadTokens: sum((u) => u.prompt_tokens_details?.cached_tokens),
    cacheWriteTokens: 0,
    calls: on.llm.requests.length,
  };
}

/** The inspector's page of a compaction (its app, without a server). */
async function inspectorPage(on: TestStack, compactionId: string): Promise<string> {
  const app = createInspectorApp({ client: on.reader, temporalUiUrl: 'http://127.0.0.1:8233' });
  const response = await app.request(`http://127.0.0.1/compactions/${encodeURIComponent(compactionId)}`);
  expect(response.status).toBe(200);
  return response.text();
}

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

describe('the rung setting and the cost per rung (worker defaults)', () => {
  const stack = useTestStack();

  it('masking answers a lineage without a setting (the control): masking fits this head', async () => {
    const id = uniqueId('rungs-all');
    await maskableLineage(stack(), id);
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    expect(stack().llm.requests).toHaveLength(0);
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ rung: 'masking' });
    // Masking ran and paid nothing.
    expect(row.costs).toEqual({ masking: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0 } });
  });

  it("a lineage created with rungs ['summary'] never masks, and its row's costs are what the LLM billed", async () => {
    const id = uniqueId('rungs-summary');
    const created = await maskableLineage(stack(), id, { rungs: ['summary'] });
    expect(created.rungs).toEqual(['summary']);
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    expect(stack().llm.requests.length).toBeGreaterThan(0);
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ rung: 'summary', passedRungs: { masking: 'not enabled for this lineage' } });
    // Counted on the LLM's side: every request it answered for this job, and nothing for masking (it did not run).
    expect(row.costs).toEqual({ summary: billed(stack()) });
    expect(row.costs?.summary?.inputTokens).toBeGreaterThan(0);
    expect(row.summariserPromptTokens).toBe(row.costs?.summary?.inputTokens);
    // The operator's history shows the same costs.
    expect((await stack().client.operator.history(id)).compactions.at(-1)?.costs).toEqual(row.costs);
    // And the inspector's page of the compaction.
    const page = await inspectorPage(stack(), row.id);
    expect(page).toContain(`summary ${row.costs!.summary!.inputTokens} in (${row.costs!.summary!.cacheReadTokens} cached, 0 written)`);
    expect(row.gain).toBeNull();
  });

  it('a summary that paid and then passed (its head over the window) keeps its cost beside the trim that answered', async () => {
    const id = uniqueId('rungs-trim-cost');
    const created = await maskableLineage(stack(), id, { rungs: ['summary', 'trim'] });
    const window = created.contextWindow!;
    stack().llm.setDefault({ text: `A very long summary. ${'Every detail of every part, restated. '.repeat(Math.ceil((window * 5) / 38))}` });
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({
      rung: 'trim',
      passedRungs: { masking: 'not enabled for this lineage', summary: expect.stringMatching(/over the context window/) },
    });
    expect(row.costs).toEqual({ summary: billed(stack()), trim: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0 } });
    expect(row.costs?.summary?.outputTokens).toBeGreaterThan(window);
  });

  it('refuses a bad setting with InvalidInputError and writes nothing: an unknown name, an empty list, the trim alone', async () => {
    for (const rungs of [['summary', 'bogus'], [], ['trim']]) {
      const id = uniqueId('rungs-bad');
      await expect(stack().client.createSession({ sessionId: id, rungs })).rejects.toBeInstanceOf(InvalidInputError);
      const { rows } = await stack().db.db.execute(sql`select count(*)::int as n from lineages where id = ${id}`);
      expect(rows[0]).toEqual({ n: 0 });
    }
    // Created again with another setting: a conflict, as for any other parameter; the same one is idempotent.
    const id = uniqueId('rungs-again');
    await stack().client.createSession({ sessionId: id, rungs: ['trim', 'summary'] });
    expect((await stack().client.createSession({ sessionId: id, rungs: ['summary', 'trim'] })).rungs).toEqual(['summary', 'trim']);
    await expect(stack().client.createSession({ sessionId: id, rungs: ['summary'] })).rejects.toThrow(/already exists with rungs/);
  });
});

describe('the worker default (COMPACTION_RUNGS) and the minimum-gain guard', () => {
  const stack = useTestStack({ env: { COMPACTION_RUNGS: 'summary,trim', COMPACTION_MIN_GAIN_TURNS: '1', AUTO_COMPACTION_COOLDOWNS_MS: '60000' } });

  it('a lineage created without a setting uses the worker default: no masking', async () => {
    const id = uniqueId('rungs-env');
    expect((await maskableLineage(stack(), id)).rungs).toBeUndefined();
    // Manual: the guard does not judge it.
    const answer = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(answer.outcome, answer.reason).toBe('compacted');
    const [row] = await auditRows(stack().db.db, id);
    expect(row).toMatchObject({ rung: 'summary', passedRungs: { masking: 'not enabled for this lineage' }, gain: null });
    expect(row.costs).toEqual({ summary: billed(stack()) });
  });

  it('an automatic compaction that would not repay its cost is refused with its figures, pays nothing, and the cooldown does not climb', async () => {
    const id = uniqueId('min-gain');
    await stack().client.createSession({ sessionId: id, compactAt: 500 });
    const turns = Array.from({ length: 20 }, (_, i) => [
      { role: 'user', content: `request ${i}` },
      { role: 'assistant', content: `answer ${i}: ${words(80, 'a')}` },
    ]).flat();
    const appended = await stack().client.append(id, turns);
    expect(appended.compactionRequestId).toBeDefined();
    const answer = await stack().client.waitForResult(id, appended.compactionRequestId!);
    expect(answer.outcome).toBe('refused');
    expect(answer.reason).toMatch(/^min_gain: over 1 turn\(s\) it would save/);
    expect(stack().llm.requests).toHaveLength(0);
    const [row] = await auditRows(stack().db.db, id);
    expect(row.outcome).toBe('refused');
    expect(row.gain).toMatchObject({ turns: 1, declined: true, estimated: true, tokensBefore: appended.headTokens });
    expect(row.gain!.net).toBeLessThan(0);
    expect(row.gain!.net).toBeCloseTo(row.gain!.expectedSaving - row.gain!.cost - row.gain!.cacheInvalidated, 1);
    expect(row.costs).toBeNull();
    expect(await inspectorPage(stack(), row.id)).toMatch(/<p id="gain">minimum gain over 1 turn\(s\) \(estimated\): .* \(declined\)<\/p>/);
    const { rows } = await stack().db.db.execute(sql`select auto_failures, auto_cooldown_until, auto_request_id from lineages where id = ${id}`);
    expect(rows[0]).toEqual({ auto_failures: 0, auto_cooldown_until: null, auto_request_id: null });
    // No cooldown: the next append at or above the threshold asks again.
    const next = await stack().client.append(id, [{ role: 'assistant', content: 'one more' }]);
    expect(next.compactionRequestId).toBeDefined();
    await stack().client.waitForResult(id, next.compactionRequestId!);

    // A forced compaction of the same head is not judged: it compacts.
    const forced = await stack().client.compact(id, { force: true, timeoutMs: 60_000 });
    expect(forced.outcome, forced.reason).toBe('compacted');
    const last = (await auditRows(stack().db.db, id)).at(-1)!;
    expect(last).toMatchObject({ outcome: 'compacted', gain: null });
  });
});
