/**
 * Where a compaction is held, and what becomes of an item reference: a lineage with thinking on is held
 * inside an open tool loop also when the loop was opened by appends carried in during the
 * summary (the gate sees the head at commit), a held automatic request does not climb the
 * cooldown ladder, and a Responses item reference (which the provider cannot resolve with
 * store:false) is summarised, never kept.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../src/compaction/dialects/anthropic';
import { openaiResponses } from '../../src/compaction/dialects/openai-responses';
import { runGates } from '../../src/compaction/gates';
import type { Message } from '../../src/compaction/dialects';
import { planCompaction, DEFAULT_PLAN_OPTIONS } from '../../src/compaction/plan';
import { uniqueId, useTestStack } from '../support/stack';

const thinking = { type: 'thinking', thinking: 'Let me check.', signature: 'EqQBsig==' };
const closedLoop: Message[] = [
  { role: 'user', content: 'Fix the parser.' },
  { role: 'assistant', content: [thinking, { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.ts' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '42' }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
];

describe('the hold', () => {
  it('is checked again on the head at commit: carried appends that open a loop with thinking on refuse the commit', () => {
    const carried: Message[] = [
      { role: 'user', content: 'Now the lexer.' },
      { role: 'assistant', content: [thinking, { type: 'tool_use', id: 'toolu_2', name: 'Read', input: { path: 'b.ts' } }] },
    ];
    expect(anthropic.holdReason(closedLoop)).toBeUndefined();
    const summary = anthropic.summaryMessages('the parser was fixed', carried[0]);
    const report = runGates({
      before: [...closedLoop, ...carried],
      after: [...summary, ...carried],
      tokensBefore: 100,
      tokensAfter: 50,
      summaryIndices: summary.map((_, i) => i),
      dialect: anthropic,
    });
    expect(report.failed?.gate).toBe('providerValid');
    expect(report.failed?.reason).toMatch(/tool loop is open with thinking on/);
  });

  it('does not climb the automatic-compaction cooldown ladder, so the next append asks again', async () => {
    const id = uniqueId('hold');
    await stack().client.createSession({ sessionId: id, dialect: 'anthropic', compactAt: 50 });
    const appended = await stack().client.append(id, [
      ...closedLoop,
      { role: 'user', content: 'And the lexer, please: '.repeat(20) },
      { role: 'assistant', content: [thinking, { type: 'tool_use', id: 'toolu_3', name: 'Read', input: { path: 'c.ts' } }] },
    ]);
    expect(appended.compactionRequestId).toBeDefined();
    const answer = await stack().client.waitForResult(id, appended.compactionRequestId!);
    expect(answer.outcome).toBe('refused');
    expect(answer.reason).toMatch(/tool loop is open with thinking on/);
    const [lineage] = (await stack().db.db.execute(sql`select auto_failures, auto_cooldown_until, auto_request_id from lineages where id = ${id}`))
      .rows as Array<{
      auto_failures: number;
      auto_cooldown_until: Date | null;
      auto_request_id: string | null;
    }>;
    expect(lineage).toEqual({ auto_failures: 0, auto_cooldown_until: null, auto_request_id: null });
    // The loop closes: the next append at or above the threshold asks again, and compacts.
    const next = await stack().client.append(id, [
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_3', content: '{"ok": true}' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Both done.' }] },
    ]);
    expect(next.compactionRequestId).toBeDefined();
    const after = await stack().client.waitForResult(id, next.compactionRequestId!);
    expect(after.reason ?? '').not.toMatch(/tool loop is open/);
  });
});

describe('a Responses item reference', () => {
  it('is summarised, never kept, so a head with one is never refused for it', () => {
    const items: Message[] = [
      { type: 'message', role: 'developer', content: 'Be careful.' },
      { type: 'item_reference', id: 'msg_abc' },
      { role: 'user', content: 'Fix the parser.' },
      ...Array.from({ length: 6 }, (_, i): Message[] => [
        { type: 'function_call', call_id: `c${i}`, name: 'shell', arguments: '{}' },
        { type: 'function_call_output', call_id: `c${i}`, output: '42' },
      ]).flat(),
    ];
    const plan = planCompaction(items, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 0, dialect: openaiResponses });
    expect(plan.middle).toContain(1);
    expect([...plan.head, ...plan.tail]).not.toContain(1);
  });
});

const stack = useTestStack();
