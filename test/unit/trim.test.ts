/**
 * The trim rung's pure logic (src/compaction/trim.ts) over every dialect, on messy transcripts
 * (test/support/messy.ts) and planted sessions: the head it proposes fits its target, passes
 * every gate, never splits a group, keeps instructions, the latest request and open calls, drops
 * the oldest groups first, and lists what it dropped in the ledger of its summary message.
 */
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type DialectName, type Message } from '../../src/compaction/dialects';
import { runGates } from '../../src/compaction/gates';
import { jsonEqual } from '../../src/compaction/json';
import { emptyLedger } from '../../src/compaction/ledger';
import { DEFAULT_PLAN_OPTIONS, latestUserRequestIndex, planCompaction } from '../../src/compaction/plan';
import { LEDGER_HEADING } from '../../src/compaction/summary-structure';
import { estimateTokens } from '../../src/compaction/tokens';
import { trimProposal, trimTarget } from '../../src/compaction/trim';
import { toAgentsItems } from '../support/agents-items';
import { messyTranscript } from '../support/messy';
import { plantedSession } from '../support/planted';
import { strictProviderCheck } from '../support/strict-check';

const OPTIONS = { requestChars: 500, ledgerBudget: () => 2000, prose: (n: number) => `The ${n} oldest message(s) were dropped.` };

/** A call left open at the end, in the dialect's shape. */
function openCall(name: DialectName): Message[] {
  switch (name) {
    case 'openai-chat':
      return [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_open', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/open.ts"}' } }],
        },
      ];
    case 'anthropic':
      return [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_open', name: 'Read', input: { file_path: 'src/open.ts' } }] }];
    case 'gemini':
      return [{ role: 'model', parts: [{ functionCall: { name: 'read_file', args: { path: 'src/open.ts' }, id: 'call_open' } }] }];
    case 'openai-responses':
      return [{ type: 'function_call', call_id: 'call_open', name: 'read_file', arguments: '{"path":"src/open.ts"}' }];
    case 'openai-agents':
      return toAgentsItems(openCall('openai-responses'));
    case 'ai-sdk':
      return [
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'call_open', toolName: 'read_file', input: { path: 'src/open.ts' } }],
        },
      ];
  }
}

/** The result the agent appends to the open call before its next request. */
function openResult(name: DialectName): Message[] {
  switch (name) {
    case 'openai-chat':
      return [{ role: 'tool', tool_call_id: 'call_open', content: 'ok' }];
    case 'anthropic':
      return [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_open', content: 'ok' }] }];
    case 'gemini':
      return [{ role: 'user', parts: [{ functionResponse: { name: 'read_file', id: 'call_open', response: { output: 'ok' } } }] }];
    case 'openai-responses':
      return [{ type: 'function_call_output', call_id: 'call_open', output: 'ok' }];
    case 'openai-agents':
      return toAgentsItems([...openCall('openai-responses'), ...openResult('openai-responses')]).slice(1);
    case 'ai-sdk':
      return [
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'call_open', toolName: 'read_file', output: { type: 'text', value: 'ok' } }],
        },
      ];
  }
}

function trim(name: DialectName, messages: Message[], targetTokens: number | undefined) {
  const dialect = dialectOf(name);
  const tokens = messages.map((m) => estimateTokens(m, dialect));
  const plan = planCompaction(messages, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 300, dialect }, tokens);
  const proposal = trimProposal(
    messages,
    messages.map((_, i) => i + 1),
    plan,
    dialect,
    tokens,
    (m) => estimateTokens(m, dialect),
    emptyLedger(),
    { ...OPTIONS, targetTokens },
  );
  const total = tokens.reduce((a, b) => a + b, 0);
  if (!proposal) return { proposal, dialect, plan, total };
  const after = proposal.candidate.map((e) => e.message);
  const tokensAfter = proposal.candidate.reduce((sum, e) => sum + (e.from === undefined ? estimateTokens(e.message, dialect) : tokens[e.from]), 0);
  const gates = runGates({
    before: messages,
    after,
    tokensBefore: total,
    tokensAfter,
    targetTokens,
    summaryIndices: proposal.summaryIndices,
    facts: proposal.demand,
    dialect,
  });
  return { proposal, dialect, plan, total, after, tokensAfter, gates };
}

/** What every trimmed head keeps to, whatever the transcript. */
async function expectSound(name: DialectName, messages: Message[], targetTokens: number | undefined, label: string) {
  const { proposal, dialect, total, after, tokensAfter, gates } = trim(name, messages, targetTokens);
  if (!proposal || !after || tokensAfter === undefined) return false;
  expect(gates?.failed, label).toBeUndefined();
  expect(tokensAfter, label).toBeLessThan(total);
  if (targetTokens !== undefined) expect(tokensAfter, label).toBeLessThanOrEqual(targetTokens);
  expect(proposal.rung).toBe('trim');
  // Groups stay whole: each is kept entirely or dropped entirely.
  const kept = new Set(proposal.candidate.flatMap((e) => (e.from === undefined ? [] : [e.from])));
  for (const g of dialect.groups(messages)) {
    const inHead = g.indices.filter((i) => kept.has(i)).length;
    expect([0, g.indices.length], label).toContain(inHead);
  }
  // Instructions, the latest request and the open calls stay; the dropped are the oldest droppable ones.
  messages.forEach((m, i) => {
    if (dialect.isInstruction(m)) expect(kept.has(i), `${label}: instruction ${i}`).toBe(true);
  });
  const latest = latestUserRequestIndex(dialect, messages);
  if (latest >= 0) expect(kept.has(latest), label).toBe(true);
  const open = dialect.openCalls(messages);
  if (open) expect(kept.has(open.index), label).toBe(true);
  const protectedAt = new Set(
    dialect.groups(messages).flatMap((g) => (g.indices.includes(latest) || (open && g.indices.includes(open.index)) ? g.indices : [])),
  );
  const lastDropped = Math.max(-1, ...proposal.replaced.filter((i) => !protectedAt.has(i)));
  const keptAfterSummary = proposal.candidate.slice(proposal.summaryIndices.at(-1)! + 1).flatMap((e) => (e.from === undefined ? [] : [e.from]));
  for (const i of keptAfterSummary) if (!protectedAt.has(i) && !dialect.isInstruction(messages[i])) expect(i, label).toBeGreaterThan(lastDropped);
  // The ledger of what was dropped is in the summary message.
  const summaryText = proposal.summaryIndices.map((i) => dialect.textOf(after[i])).join('\n');
  expect(summaryText, label).toContain(LEDGER_HEADING);
  expect(summaryText, label).toContain(`The ${proposal.replaced.length} oldest message(s) were dropped.`);
  // Messy transcripts need not be valid requests themselves (re-used ids, signatures never issued): the trim makes no valid one invalid.
  if ((await strictProviderCheck(name, dialect.forProvider(messages))) === undefined)
    expect(await strictProviderCheck(name, dialect.forProvider(after)), label).toBeUndefined();
  return true;
}

describe.each(DIALECT_NAMES)('the trim rung (%s)', (name) => {
  it('trims messy transcripts to their target without breaking them', async () => {
    let reached = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const messages = messyTranscript(name, seed, 12);
      const total = messages.reduce((sum, m) => sum + estimateTokens(m, dialectOf(name)), 0);
      for (const percent of [80, 50, 25]) if (await expectSound(name, messages, Math.floor((total * percent) / 100), `seed ${seed}, ${percent}%`)) reached++;
    }
    expect(reached).toBeGreaterThan(20);
  });

  it('keeps the open calls, the latest request and the instructions, and strict providers accept the head', async () => {
    const { messages, facts } = plantedSession(name, 7, 10, { outputLines: 20, thinking: false });
    const withOpen = [...messages, ...openCall(name)];
    const total = withOpen.reduce((sum, m) => sum + estimateTokens(m, dialectOf(name)), 0);
    // The provider takes the head once the agent appended the open call's result, as it will.
    const next = (head: Message[]) => strictProviderCheck(name, dialectOf(name).forProvider([...head, ...openResult(name)]));
    expect(await next(withOpen)).toBeUndefined();
    expect(await expectSound(name, withOpen, Math.floor(total / 4), 'planted, a quarter')).toBe(true);
    const { after, proposal } = trim(name, withOpen, Math.floor(total / 4));
    expect(jsonEqual(after!.at(-1)!, withOpen.at(-1)!)).toBe(true);
    expect(await next(after!)).toBeUndefined();
    // Every planted request dropped is listed in the ledger, verbatim.
    const ledgered = proposal!.ledger.requests.map((r) => r.text);
    expect(ledgered.length).toBeGreaterThan(0);
    for (const text of ledgered) expect(facts.requests).toContain(text);
  });

  it('trims a head a trim wrote: the previous summary replaced, its ledger carried, every gate passing', async () => {
    const dialect = dialectOf(name);
    const { messages } = plantedSession(name, 11, 12, { outputLines: 20, thinking: false });
    // The first half ends with a whole turn: the session goes on with a request.
    const half = messages.findIndex((m, i) => i >= messages.length / 2 && dialect.isRealUserRequest(m));
    const first = trim(name, messages.slice(0, half), Math.floor(messages.slice(0, half).reduce((n, m) => n + estimateTokens(m, dialect), 0) / 2));
    expect(first.proposal).toBeDefined();
    // The next head: what the first trim wrote, then the rest of the session; rows a compaction wrote have no sequence number.
    const next = [...first.proposal!.candidate.map((e) => e.message), ...messages.slice(half)];
    const seqs = [...first.proposal!.candidate.map((e) => (e.from === undefined ? null : e.from + 1)), ...messages.slice(half).map((_, i) => half + i + 1)];
    const tokens = next.map((m) => estimateTokens(m, dialect));
    const total = tokens.reduce((a, b) => a + b, 0);
    const plan = planCompaction(next, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 300, dialect }, tokens);
    expect(plan.previousSummary).toContain('oldest message(s) were dropped');
    const target = Math.floor(total / 2);
    const second = trimProposal(next, seqs, plan, dialect, tokens, (m) => estimateTokens(m, dialect), first.proposal!.ledger, {
      ...OPTIONS,
      targetTokens: target,
    });
    expect(second).toBeDefined();
    const after = second!.candidate.map((e) => e.message);
    const tokensAfter = second!.candidate.reduce((sum, e) => sum + (e.from === undefined ? estimateTokens(e.message, dialect) : tokens[e.from]), 0);
    expect(tokensAfter).toBeLessThanOrEqual(target);
    const gates = runGates({
      before: next,
      after,
      tokensBefore: total,
      tokensAfter,
      targetTokens: target,
      summaryIndices: second!.summaryIndices,
      facts: second!.demand,
      dialect,
    });
    expect(gates.failed).toBeUndefined();
    // One summary only: the previous one is replaced, and the requests its ledger listed are still listed.
    expect(after.filter((m) => dialect.isSummary(m) && dialect.textOf(m).includes(LEDGER_HEADING))).toHaveLength(1);
    for (const r of first.proposal!.ledger.requests) expect(second!.ledger.requests.map((q) => q.text)).toContain(r.text);
    expect(await strictProviderCheck(name, dialect.forProvider(after))).toBeUndefined();
  });

  it('without a target drops what the plan would summarise; an unreachable target proposes nothing', () => {
    const { messages } = plantedSession(name, 3, 8, { outputLines: 10, thinking: false });
    const { proposal, plan } = trim(name, messages, undefined);
    expect(proposal).toBeDefined();
    const middle = plan.middle.filter((i) => i !== plan.latestUserRequest);
    expect(proposal!.replaced).toEqual(middle);
    expect(trim(name, messages, 5).proposal).toBeUndefined();
  });
});

describe('trimTarget', () => {
  it('is a share of the threshold, or of the context window, never over the window', () => {
    expect(trimTarget({ compactAtTokens: 1000, contextWindow: null }, 50)).toBe(500);
    expect(trimTarget({ compactAtTokens: null, contextWindow: 800 }, 50)).toBe(400);
    expect(trimTarget({ compactAtTokens: 4000, contextWindow: 1000 }, 50)).toBe(1000);
    expect(trimTarget({ compactAtTokens: null, contextWindow: null }, 50)).toBeUndefined();
  });
});
