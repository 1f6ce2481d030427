/**
 * The compaction attempt's pure steps (src/activities/compaction/): the earlier decision an
 * attempt makes right after it began, and the rungs' order (masking before the summary; a masked
 * head the gates would refuse passes to the summary).
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/compaction/dialects';
import { DEFAULT_PLAN_OPTIONS } from '../../src/compaction/plan';
import { earlierDecision } from '../../src/activities/compaction/decision';
import type { CompactionActivityDeps, CompactSessionInput } from '../../src/activities/compaction/deps';
import { Heartbeat } from '../../src/activities/compaction/heartbeat';
import { propose, type Rung, RUNGS } from '../../src/activities/compaction/rungs';
import { takeSnapshot } from '../../src/activities/compaction/snapshot';
import type { StartedJob } from '../../src/db/jobs';
import type { LineageInfo } from '../../src/db/lineage-state';

const lineage: LineageInfo = {
  lineageId: 'l',
  headSessionId: 'l--g2',
  generation: 2,
  mode: 'rotate',
  dialect: 'openai-chat',
  source: null,
  compactAtTokens: null,
  model: null,
  contextWindow: null,
  closed: false,
  incarnation: 'inc-1',
};
const undecided: StartedJob['job'] = {
  outcome: 'running',
  attempts: 1,
  generation: 3,
  parentSessionId: 'l--g2',
  childSessionId: null,
  messagesAfter: null,
  reason: null,
  gate: null,
};
const begun = (job: Partial<StartedJob['job']> = {}, over: Partial<LineageInfo> = {}): StartedJob => ({
  job: { ...undecided, ...job },
  lineage: { ...lineage, ...over },
  ledger: null,
  rows: [],
});
const sent = { headSessionId: 'l--g2', generation: 2 };

describe('earlierDecision', () => {
  it('goes on for an undecided job, its latest attempt, an open lineage and the head it was sent for', () => {
    expect(earlierDecision(begun(), sent, 1)).toBeUndefined();
  });

  it('answers stale and writes nothing on a lineage erased and created again', () => {
    const decision = earlierDecision({ erased: true, headSessionId: 'l', generation: 0 }, sent, 1);
    expect(decision).toMatchObject({ kind: 'answer', answer: { outcome: 'stale', sessionId: 'l', generation: 0 } });
    expect(decision!.answer.reason).toContain('erased');
  });

  it("gives a committed job's answer again, with the follow-up that commit asked for", () => {
    const decision = earlierDecision(begun({ outcome: 'compacted', childSessionId: 'l--g3', messagesAfter: 7, followUpRequestId: 'auto-9' }), sent, 2);
    expect(decision).toEqual({
      kind: 'answer',
      answer: { outcome: 'compacted', sessionId: 'l--g3', generation: 3, previousSessionId: 'l--g2', messagesAfter: 7, followUpRequestId: 'auto-9' },
    });
  });

  it('writes nothing when a later attempt owns the job', () => {
    const decision = earlierDecision(begun({ attempts: 3 }), sent, 2);
    expect(decision).toMatchObject({ kind: 'superseded', answer: { outcome: 'stale', reason: 'attempt 2 was superseded by attempt 3' } });
  });

  it('gives the same answer again for a job an earlier attempt refused', () => {
    const decision = earlierDecision(begun({ outcome: 'refused', reason: 'the summary lost the request', gate: 'latestUserRequest' }), sent, 2);
    expect(decision).toEqual({
      kind: 'answer',
      answer: { outcome: 'refused', sessionId: 'l--g2', generation: 2, reason: 'the summary lost the request', gate: 'latestUserRequest' },
    });
  });

  it('records stale for a closed lineage, before any summary is paid for', () => {
    expect(earlierDecision(begun({}, { closed: true }), sent, 1)).toMatchObject({ kind: 'stale', answer: { reason: 'the lineage is closed' } });
  });

  it('records stale and adopts the head when the head or the generation moved', () => {
    const moved = earlierDecision(begun({}, { headSessionId: 'l--g3', generation: 3 }), sent, 1);
    expect(moved).toMatchObject({ kind: 'stale', answer: { outcome: 'stale', sessionId: 'l--g3', generation: 3 } });
    expect(earlierDecision(begun({}, { generation: 3 }), sent, 1)).toMatchObject({ kind: 'stale' });
  });
});

/** A coding agent's transcript: each turn calls a tool whose output is a large JSON document. */
function toolHeavyTranscript(turns: number): Message[] {
  const messages: Message[] = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let t = 0; t < turns; t++) {
    const id = `call_${t}`;
    messages.push({ role: 'user', content: `Turn ${t}: check src/module-${t}.ts` });
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/module-${t}.ts` }) } }],
    });
    const output = JSON.stringify({
      path: `src/module-${t}.ts`,
      lines: Array.from({ length: 60 }, (_, i) => `export const value${i} = ${i * t}; // line ${i}`),
    });
    messages.push({ role: 'tool', tool_call_id: id, content: output });
    messages.push({ role: 'assistant', content: `module-${t} looks fine.` });
  }
  messages.push({ role: 'user', content: 'Now summarise what you found.' });
  return messages;
}

function snapshotOf(messages: Message[], over: Partial<LineageInfo>) {
  const deps = {
    plan: { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 300 },
    ledger: { percent: 10, maxTokens: 3000, requestChars: 500 },
    masking: { targetPercent: 50 },
  } as unknown as CompactionActivityDeps;
  const tokens = messages.map((m) => Math.ceil(JSON.stringify(m).length / 4));
  const rows = messages.map((body, i) => ({ id: i + 1, seq: i + 1, body, tokenEstimate: tokens[i], lineageSeq: i + 1, originMessageId: null }));
  const input = { force: false } as CompactSessionInput;
  const snapshot = takeSnapshot({ job: undecided, lineage: { ...lineage, ...over }, ledger: null, rows }, input, deps);
  return { snapshot, input, deps, heartbeat: new Heartbeat(() => {}) };
}

describe('the rungs', () => {
  const masking = RUNGS[0];
  const transcript = toolHeavyTranscript(8);
  const total = transcript.reduce((sum, m) => sum + Math.ceil(JSON.stringify(m).length / 4), 0);

  it("are masking, then the provider's own compaction, then the summary, then the trim", () => {
    expect(RUNGS.map((r) => r.name)).toEqual(['masking', 'native', 'summary', 'trim']);
  });

  it('masking proposes a head with old tool outputs replaced when that reaches its target', async () => {
    const result = await masking.propose(snapshotOf(transcript, { compactAtTokens: total }));
    expect(result && 'proposal' in result && result.proposal.rung).toBe('masking');
    expect(result && 'proposal' in result && result.proposal.replaced.length).toBeGreaterThan(0);
  });

  it('masking passes when the gates would refuse its head (over the context window), so the summary runs', async () => {
    const step = snapshotOf(transcript, { compactAtTokens: total, contextWindow: 50 });
    expect(await masking.propose(step)).toEqual({ passed: 'the gates would refuse the masked head (gate smaller)' });
  });

  it('masking passes for a forced or focused request', async () => {
    const step = snapshotOf(transcript, { compactAtTokens: total });
    expect(await masking.propose({ ...step, input: { ...step.input, force: true } })).toEqual({ passed: 'a forced or focused request asks for a summary' });
    expect(await masking.propose({ ...step, input: { ...step.input, focusTopic: 'tests' } })).toEqual({
      passed: 'a forced or focused request asks for a summary',
    });
  });

  it('propose takes the first rung that answers, and refuses to end without one', async () => {
    const step = snapshotOf(transcript, {});
    const calls: string[] = [];
    const passing: Rung = { name: 'masking', propose: async () => void calls.push('masking') };
    const refusing: Rung = { name: 'summary', propose: async () => (calls.push('summary'), { refusal: 'empty', usage: {} }) };
    expect(await propose(step, [passing, refusing])).toEqual({ refusal: 'empty', usage: {} });
    expect(calls).toEqual(['masking', 'summary']);
    await expect(propose(step, [passing])).rejects.toThrow(/no rung proposed/);
  });
});
