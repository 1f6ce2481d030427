/** Unit tests of the pure compaction logic: no I/O, so plain and fast. */
import { describe, expect, it } from 'vitest';
import { buildCandidate, ensureUserTurn, judgeCandidate, summaryMessage } from '../src/compaction/candidate';
import { extractiveSummary } from '../src/compaction/extractive-summary';
import { type ChatMessage, isRealUserMessage, isSummaryMessage } from '../src/compaction/messages';
import { planCompaction } from '../src/compaction/plan';
import { buildSummaryPrompt } from '../src/compaction/summary-prompt';
import { estimateTokens, estimateTranscriptTokens } from '../src/compaction/tokens';
import { groupMessages, removeOrphanedToolMessages } from '../src/compaction/tool-groups';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const call = (id: string): ChatMessage => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'run', arguments: '{}' } }] });
const result = (id: string, content = 'ok'): ChatMessage => ({ role: 'tool', tool_call_id: id, content });

describe('token estimates', () => {
  it('grow with text and count tool calls', () => {
    expect(estimateTokens(user('a'.repeat(400)))).toBeGreaterThan(estimateTokens(user('a'.repeat(40))));
    expect(estimateTokens(call('x'))).toBeGreaterThan(estimateTokens({ role: 'assistant', content: null }));
    expect(estimateTranscriptTokens([user('abcd'), user('abcd')])).toBe(2 * estimateTokens(user('abcd')));
  });
});

describe('tool groups', () => {
  it('keeps a call with its results as one group', () => {
    const groups = groupMessages([user('go'), call('a'), result('a'), assistant('done')]);
    expect(groups.map((g) => g.messages.length)).toEqual([1, 2, 1]);
  });

  it('groups a call with several results', () => {
    const multi: ChatMessage = { role: 'assistant', content: null, tool_calls: [call('a').tool_calls![0], call('b').tool_calls![0]] };
    expect(groupMessages([multi, result('a'), result('b'), user('next')]).map((g) => g.messages.length)).toEqual([3, 1]);
  });

  it('removes orphaned results and calls, keeping an orphaned call message that has text', () => {
    const withText: ChatMessage = { role: 'assistant', content: 'let me check', tool_calls: call('lost').tool_calls };
    const cleaned = removeOrphanedToolMessages([result('gone'), call('a'), result('a'), call('b'), withText, user('hi')]);
    expect(cleaned).toEqual([call('a'), result('a'), { role: 'assistant', content: 'let me check' }, user('hi')]);
  });
});

describe('planning the cut', () => {
  const transcript: ChatMessage[] = [{ role: 'system', content: 'sys' }];
  for (let i = 0; i < 10; i++) transcript.push(user(`ask ${i} `.repeat(20)), call(`c${i}`), result(`c${i}`, 'r'.repeat(200)), assistant(`done ${i}`));

  it('keeps instructions and the first groups as head, recent groups as tail, the rest in the middle', () => {
    const plan = planCompaction(transcript, { tailTokenBudget: 200, minTailGroups: 2, headGroups: 2, force: false });
    // The system prompt, then two groups: the first user ask, and a call with its result.
    expect(plan.head).toEqual(transcript.slice(0, 4));
    expect([...plan.head, ...plan.middle, ...plan.tail]).toEqual(transcript);
    expect(plan.tail.length).toBeGreaterThanOrEqual(2);
    expect(plan.previousSummary).toBeUndefined();
  });

  it('never splits a tool group at either cut', () => {
    for (let budget = 0; budget < 1500; budget += 37) {
      const plan = planCompaction(transcript, { tailTokenBudget: budget, minTailGroups: 1, headGroups: 2, force: false });
      expect(plan.tail[0]?.role).not.toBe('tool');
      expect(plan.middle[0]?.role).not.toBe('tool');
    }
  });

  it('keeps only the minimal tail when forced', () => {
    const plan = planCompaction(transcript, { tailTokenBudget: 100_000, minTailGroups: 2, headGroups: 2, force: true });
    expect(plan.middle.length).toBeGreaterThan(0);
    expect(plan.tail).toEqual(transcript.slice(-3)); // the last two groups: a call with its result, and a reply
  });

  it('updates the previous summary instead of summarising it again', () => {
    const compacted = [transcript[0], user('first ask'), summaryMessage('Goal: ship it.'), ...transcript.slice(-12)];
    const plan = planCompaction(compacted, { tailTokenBudget: 0, minTailGroups: 1, headGroups: 2, force: false });
    expect(plan.head).toEqual([transcript[0], user('first ask')]);
    expect(plan.previousSummary).toBe('Goal: ship it.');
    expect(plan.middle.some(isSummaryMessage)).toBe(false);
  });
});

describe('the user-turn guarantee', () => {
  it('restores the last real user message, verbatim, after the summary', () => {
    const original = [user('first'), assistant('a'), user('the real ask'), call('x'), result('x')];
    const candidate = [summaryMessage('s'), call('x'), result('x')];
    expect(ensureUserTurn(candidate, original)).toEqual([summaryMessage('s'), user('the real ask'), call('x'), result('x')]);
  });

  it('leaves a candidate that has a real user message alone and never invents one', () => {
    const candidate = [summaryMessage('s'), user('kept'), assistant('ok')];
    expect(ensureUserTurn(candidate, [user('older')])).toEqual(candidate);
    expect(ensureUserTurn([summaryMessage('s'), assistant('x')], [assistant('no users at all')])).toEqual([summaryMessage('s'), assistant('x')]);
  });

  it('does not count the summary as a user turn', () => {
    expect(isRealUserMessage(summaryMessage('s'))).toBe(false);
  });

  it('builds a candidate with head, summary, a restored user turn and a whole tail', () => {
    const original = [{ role: 'system', content: 'sys' } as ChatMessage, user('do it'), call('a'), result('a'), call('b'), result('b')];
    const candidate = buildCandidate({ head: [original[0]], middle: original.slice(1, 4), tail: original.slice(4) }, 'summary', original);
    expect(candidate.map((m) => m.role)).toEqual(['system', 'assistant', 'user', 'assistant', 'tool']);
    expect(candidate[2]).toEqual(user('do it'));
  });
});

describe('judging a candidate', () => {
  it('refuses a candidate equal to the input or not smaller', () => {
    const input = [user('a'.repeat(400)), assistant('b'.repeat(400))];
    expect(judgeCandidate(input, input)).toMatchObject({ accepted: false, reason: expect.stringMatching(/equals/) });
    expect(judgeCandidate(input, [...input, assistant('more')])).toMatchObject({ accepted: false, reason: expect.stringMatching(/not be smaller/) });
    expect(judgeCandidate(input, [summaryMessage('short')])).toMatchObject({ accepted: true });
  });
});

describe('summaries', () => {
  const middle = [user('Please migrate the billing service. It is urgent.'), call('a'), result('a', 'migrated 3 tables\nmore'), assistant('Migrated.')];

  it('the extractive summary is deterministic, bounded, and quotes the latest request', () => {
    const request = { middle, focusTopic: 'billing', force: false };
    expect(extractiveSummary(request)).toBe(extractiveSummary(request));
    expect(extractiveSummary(request)).toContain('> Please migrate the billing service. It is urgent.');
    expect(extractiveSummary(request)).toContain('Focus: billing');
    const long = Array.from({ length: 500 }, (_, i) => user(`message ${i}. More text here.`));
    expect(extractiveSummary({ middle: long, force: false }).split('\n').length).toBeLessThan(60);
  });

  it('the LLM prompt reduces tool results to one line and carries focus, force and the previous summary', () => {
    const prompt = buildSummaryPrompt({ middle, previousSummary: 'Earlier: set up CI.', focusTopic: 'billing', force: true });
    const text = prompt.map((m) => m.content).join('\n');
    expect(text).toContain('tool result (a): migrated 3 tables');
    expect(text).not.toContain('more');
    expect(text).toContain('Focus the summary on: billing');
    expect(text).toContain('forced by the caller');
    expect(text).toContain('Previous summary:\nEarlier: set up CI.');
  });
});
