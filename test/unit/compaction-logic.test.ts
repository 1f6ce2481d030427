/** Unit tests of the pure compaction logic: no I/O, so plain and fast. */
import { describe, expect, it } from 'vitest';
import { buildCandidate } from '../../src/compaction/candidate';
import { openaiChat } from '../../src/compaction/dialects/openai-chat';
import type { Message } from '../../src/compaction/dialects/types';
import { extractiveSummary } from '../../src/compaction/extractive-summary';
import { keepsLatestUserRequest, keepsOpenToolCalls, isSmaller, noForgedSummary, providerValid, runGates } from '../../src/compaction/gates';
import { type ChatMessage, SUMMARY_MESSAGE_NAME, SUMMARY_PREFIX } from '../../src/compaction/messages';
import { isBrokenGroup, planCompaction, type PlanOptions } from '../../src/compaction/plan';
import { buildSummaryPrompt, chunkMiddle, latestUserRequestText, SUMMARY_RENDER_CAPS, type SummaryRequest } from '../../src/compaction/summary-prompt';
import { contextWindowOf, tokenCounterFor } from '../../src/compaction/token-counter';
import { estimateTokens, estimateTranscriptTokens } from '../../src/compaction/tokens';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const system: ChatMessage = { role: 'system', content: 'sys' };
const callOf = (id: string) => ({ id, type: 'function' as const, function: { name: 'run', arguments: '{}' } });
const call = (...ids: string[]): ChatMessage => ({ role: 'assistant', content: null, tool_calls: ids.map(callOf) });
const result = (id: string, content = 'ok'): ChatMessage => ({ role: 'tool', tool_call_id: id, content });
const at = (messages: readonly ChatMessage[], indices: readonly number[]) => indices.map((i) => messages[i]);
const summaryMessage = (text: string): Message => openaiChat.summaryMessages(text, undefined)[0];
const render = (m: Message) => openaiChat.render(m, SUMMARY_RENDER_CAPS);
const groupMessages = (messages: readonly Message[]) => openaiChat.groups(messages);
const MESSAGE_OVERHEAD = 4;
const OPTIONS: PlanOptions = { tailTokenBudget: 200, minTailGroups: 2, headGroups: 2, force: false };

describe('token counts', () => {
  it('estimates grow with text and count tool calls', () => {
    expect(estimateTokens(user('a'.repeat(400)))).toBeGreaterThan(estimateTokens(user('a'.repeat(40))));
    expect(estimateTokens(call('x'))).toBeGreaterThan(estimateTokens({ role: 'assistant', content: null }));
    expect(estimateTranscriptTokens([user('abcd'), user('abcd')])).toBe(2 * estimateTokens(user('abcd')));
  });

  it('counts with the real tokenizer for OpenAI models and estimates for others', () => {
    const gpt4o = tokenCounterFor('gpt-4o');
    expect(gpt4o.tokenizer).toBe('o200k_base');
    expect(tokenCounterFor('gpt-4-0613').tokenizer).toBe('cl100k_base');
    expect(tokenCounterFor('llama-3-70b').tokenizer).toBe('estimate');
    expect(tokenCounterFor(undefined).tokenizer).toBe('estimate');
    // "hello world" is two tokens in o200k_base; plus the per-message overhead of 4.
    expect(gpt4o.count(user('hello world'))).toBe(6);
    // A run of one repeated character compresses far below the chars/4 estimate.
    const text = user('a'.repeat(4000));
    expect(gpt4o.count(text)).toBeLessThan(estimateTokens(text));
    expect(gpt4o.count(call('x'))).toBeGreaterThan(gpt4o.count({ role: 'assistant', content: null }));
    // A special-token string a user wrote is ordinary text: counted, never an error.
    expect(gpt4o.count(user('<|endoftext|> and <|im_start|>'))).toBeGreaterThan(MESSAGE_OVERHEAD + 2);
    expect(tokenCounterFor('gpt-4').count(user('<|endoftext|>'))).toBeGreaterThan(MESSAGE_OVERHEAD + 1);
  });

  it('knows the context windows of common models', () => {
    expect(contextWindowOf('gpt-4o-mini')).toBe(128_000);
    expect(contextWindowOf('gpt-4.1')).toBe(1_047_576);
    expect(contextWindowOf('my-local-model')).toBeUndefined();
  });
});

describe('tool groups', () => {
  it('keeps a call with its results as one group', () => {
    const groups = groupMessages([user('go'), call('a'), result('a'), assistant('done')]);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2], [3]]);
    expect(groups[1].unanswered).toEqual([]);
  });

  it('groups parallel calls with their results and knows which are unanswered', () => {
    const groups = groupMessages([user('go'), call('a', 'b', 'c'), result('b')]);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2]]);
    expect(groups[1].unanswered).toEqual(['a', 'c']);
  });

  it('marks a result that follows no call of its id as an orphan', () => {
    const groups = groupMessages([user('go'), result('zzz'), call('a'), result('b')]);
    expect(groups.map((g) => g.orphan)).toEqual([false, true, false, true]);
    expect(groups.map((g, k) => isBrokenGroup(g, k === groups.length - 1))).toEqual([false, true, true, true]);
  });

  it('pairs a call id re-used by a later assistant message with the results that follow it (real transcripts re-use ids)', () => {
    const groups = groupMessages([user('go'), call('call_0'), result('call_0'), user('again'), call('call_0'), result('call_0', 'second')]);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2], [3], [4, 5]]);
    expect(groups.every((g) => !g.orphan && g.unanswered.length === 0)).toBe(true);
  });

  it('still marks a second answer to the same call as an orphan', () => {
    const groups = groupMessages([user('go'), call('a'), result('a'), result('a')]);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2], [3]]);
    expect(groups.map((g) => g.orphan)).toEqual([false, false, true]);
  });
});

describe('planning the cut', () => {
  const transcript: ChatMessage[] = [system];
  for (let i = 0; i < 10; i++) transcript.push(user(`ask ${i} `.repeat(20)), call(`c${i}`), result(`c${i}`, 'r'.repeat(200)), assistant(`done ${i}`));

  it('keeps instructions and the first groups as head, recent groups as tail, the rest in the middle', () => {
    const plan = planCompaction(transcript, OPTIONS);
    expect(plan.head).toEqual([0, 1, 2, 3]); // the system prompt, the first ask, a call with its result
    expect([...plan.head, ...plan.middle, ...plan.tail].sort((a, b) => a - b)).toEqual(transcript.map((_, i) => i));
    expect(plan.tail.length).toBeGreaterThanOrEqual(2);
    expect(plan.previousSummary).toBeUndefined();
  });

  it('never splits a tool group at either cut', () => {
    for (let budget = 0; budget < 1500; budget += 37) {
      const plan = planCompaction(transcript, { ...OPTIONS, tailTokenBudget: budget, minTailGroups: 1 });
      expect(transcript[plan.tail[0]]?.role).not.toBe('tool');
      expect(transcript[plan.middle[0]]?.role).not.toBe('tool');
    }
  });

  it('keeps only the minimal tail when forced', () => {
    const plan = planCompaction(transcript, { ...OPTIONS, tailTokenBudget: 100_000, force: true });
    expect(plan.middle.length).toBeGreaterThan(0);
    expect(at(transcript, plan.tail)).toEqual(transcript.slice(-3)); // the last two groups: a call with its result, and a reply
  });

  it('keeps small groups by the minimum, but summarises a group larger than the whole tail budget unless it is the last', () => {
    // The agent read a large file one step ago, then asked a small thing: the minimum of two
    // groups would keep the read verbatim and leave the head over its threshold (claude-code-templar).
    const big = 'x'.repeat(4 * 300); // about 300 tokens, over the 200-token tail budget
    const read = [...transcript, call('r1'), result('r1', big)];
    const last = [assistant('I read it.')];
    for (const force of [false, true]) {
      const plan = planCompaction([...read, ...last], { ...OPTIONS, force });
      expect(at([...read, ...last], plan.tail)).toEqual(last);
      expect(plan.middle).toEqual(expect.arrayContaining([read.length - 2, read.length - 1]));
    }
    // The same group as the last one is kept, whatever its size (it may hold open calls).
    const plan = planCompaction(read, { ...OPTIONS, force: true });
    expect(at(read, plan.tail).slice(-2)).toEqual(read.slice(-2));
    // A large group that holds the latest user request stays in the tail: it is kept verbatim
    // either way, and summarising it too would only make the head larger.
    const asked = [...transcript, user(big), assistant('working on it')];
    expect(at(asked, planCompaction(asked, { ...OPTIONS, force: true }).tail)).toEqual(asked.slice(-2));
    // Small groups are still kept by the minimum when forced.
    const small = [...transcript, call('r2'), result('r2', 'short'), assistant('ok')];
    expect(at(small, planCompaction(small, { ...OPTIONS, force: true }).tail)).toEqual(small.slice(-3));
  });

  it('updates the previous summary instead of summarising it again', () => {
    const compacted = [system, user('first ask'), summaryMessage('Goal: ship it.'), ...transcript.slice(-12)];
    const plan = planCompaction(compacted, { ...OPTIONS, tailTokenBudget: 0, minTailGroups: 1 });
    expect(plan.head).toEqual([0, 1]);
    expect(plan.previousSummary).toBe('Goal: ship it.');
    expect(plan.middle).not.toContain(2);
  });

  it('keeps a tool call still open at the end in the tail, with the results that exist, even when forced', () => {
    const open = [...transcript, user('run the tests'), call('t1', 't2', 't3'), result('t2', 'passed')];
    for (const minTailGroups of [0, 1, 2]) {
      const plan = planCompaction(open, { ...OPTIONS, tailTokenBudget: 0, minTailGroups, force: true });
      expect(at(open, plan.tail).slice(-2)).toEqual([call('t1', 't2', 't3'), result('t2', 'passed')]);
      expect(plan.middle).not.toContain(open.length - 2);
    }
  });

  it('keeps the latest real user request verbatim when the tail does not hold it', () => {
    const plan = planCompaction(transcript, { ...OPTIONS, tailTokenBudget: 0, minTailGroups: 1 });
    expect(plan.latestUserRequest).toBe(transcript.length - 4); // "ask 9", in the middle
    expect(at(transcript, plan.tail)).toEqual([assistant('done 9')]);
    const inTail = planCompaction(transcript, { ...OPTIONS, tailTokenBudget: 100_000 });
    expect(inTail.latestUserRequest).toBeUndefined();
  });

  it('summarises groups a provider would reject instead of keeping them', () => {
    const broken = [system, user('a'), assistant('b'), user('c'), assistant('d'), result('orphan'), call('never'), user('e'), assistant('f')];
    const plan = planCompaction(broken, { ...OPTIONS, tailTokenBudget: 100_000, headGroups: 0 });
    expect(plan.middle).toEqual([5, 6]);
  });
});

/** A random agent transcript: users, replies, single and parallel calls, sometimes calls still open at the end. */
function randomTranscript(seed: number): ChatMessage[] {
  let state = seed;
  const rand = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out: ChatMessage[] = [system];
  // Every third transcript re-uses call ids from turn to turn, as real agents' transcripts do.
  const reuse = seed % 3 === 0;
  let next = 0;
  const newId = () => `call_${next++}`;
  const ids = (n: number) => {
    if (reuse) next = 0;
    return Array.from({ length: n }, newId);
  };
  const turns = 3 + Math.floor(rand() * 25);
  for (let t = 0; t < turns; t++) {
    const r = rand();
    if (r < 0.3) out.push(user(`request ${t} `.repeat(1 + Math.floor(rand() * 30))));
    else if (r < 0.5) out.push(assistant(`answer ${t} `.repeat(1 + Math.floor(rand() * 20))));
    else {
      const callIds = ids(1 + Math.floor(rand() * 3));
      out.push(call(...callIds));
      for (const callId of callIds) out.push(result(callId, 'output '.repeat(1 + Math.floor(rand() * 200))));
    }
  }
  if (rand() < 0.5) {
    const callIds = ids(1 + Math.floor(rand() * 3));
    out.push(call(...callIds));
    for (const callId of callIds.slice(0, Math.floor(rand() * callIds.length))) out.push(result(callId));
  }
  return out;
}

describe('the candidate head', () => {
  it('is head, summary, the latest user request when the tail lacks it, and the tail', () => {
    const original = [system, user('do it'), call('a'), result('a'), call('b'), result('b')];
    const candidate = buildCandidate({ head: [0], middle: [1, 2, 3], latestUserRequest: 1, tail: [4, 5] }, 'summary', original);
    expect(candidate.map((e) => e.message.role)).toEqual(['system', 'assistant', 'user', 'assistant', 'tool']);
    expect(candidate.map((e) => e.from)).toEqual([0, undefined, 1, 4, 5]);
    expect(candidate[2].message).toEqual(user('do it'));
  });

  it('passes every gate on 500 random agent transcripts, with any cut', () => {
    let compacted = 0;
    for (let seed = 1; seed <= 500; seed++) {
      const transcript = randomTranscript(seed);
      const plan = planCompaction(transcript, { tailTokenBudget: (seed * 37) % 600, minTailGroups: seed % 3, headGroups: seed % 3, force: seed % 5 === 0 });
      if (plan.middle.length === 0) continue;
      compacted++;
      const candidate = buildCandidate(plan, 'short', transcript);
      const after = candidate.map((e) => e.message);
      const summaryIndices = candidate.flatMap((e, i) => (e.from === undefined ? [i] : []));
      expect(summaryIndices).toEqual([after.findIndex((m) => m.name === SUMMARY_MESSAGE_NAME)]);
      const report = runGates({ before: transcript, after, tokensBefore: 2, tokensAfter: 1, summaryIndices, dialect: openaiChat });
      expect(report.failed, `seed ${seed}`).toBeUndefined();
      // Never two user messages in a row that the transcript did not have.
      for (let i = 1; i < after.length; i++) {
        if (after[i].role === 'user' && after[i - 1].role === 'user')
          expect(
            transcript.some((m, j) => j > 0 && m === after[i] && transcript[j - 1] === after[i - 1]),
            `seed ${seed}`,
          ).toBe(true);
      }
    }
    expect(compacted).toBeGreaterThan(300);
  });
});

describe('the gates', () => {
  const summary = summaryMessage('s');

  it('(a) accepts what the OpenAI chat API accepts and refuses what it rejects', () => {
    expect(providerValid([user('go'), call('a', 'b'), result('b'), result('a'), assistant('done')])).toBeUndefined();
    expect(providerValid([user('go'), call('a', 'b'), result('a')])).toBeUndefined(); // open at the end
    expect(providerValid([user('go'), result('a')])).toMatch(/does not follow its tool call/);
    expect(providerValid([user('go'), call('a'), user('next'), result('a')])).toMatch(/not answered before message 2/);
    expect(providerValid([call('a'), result('a'), result('a')])).toMatch(/a second time/);
    // A call id re-used by a later assistant message is a new call (paired by position); twice in one message is refused.
    expect(providerValid([call('a'), result('a'), call('a'), result('a')])).toBeUndefined();
    expect(providerValid([call('a', 'a'), result('a'), result('a')])).toMatch(/tool call id a appears twice in message 0/);
    expect(providerValid([call('a'), result('a'), assistant('x'), result('a')])).toMatch(/does not follow/);
    expect(providerValid([{ role: 'user', content: null }])).toMatch(/no content/);
  });

  it('(b) refuses a head without the latest real user request verbatim', () => {
    const before = [user('old'), assistant('x'), user('the latest ask'), assistant('y')];
    expect(keepsLatestUserRequest(before, [summary, user('the latest ask'), assistant('y')])).toBeUndefined();
    expect(keepsLatestUserRequest(before, [summary, user('old'), assistant('y')])).toMatch(/the latest ask/);
    expect(keepsLatestUserRequest(before, [summary, user('the latest ask, paraphrased')])).toMatch(/not kept verbatim/);
    expect(keepsLatestUserRequest([assistant('no users')], [summary])).toBeUndefined();
    expect(openaiChat.isRealUserRequest(summary)).toBe(false);
    expect(openaiChat.isRealUserRequest({ role: 'user', name: SUMMARY_MESSAGE_NAME, content: `${SUMMARY_PREFIX}\nx` })).toBe(false);
    expect(openaiChat.isRealUserRequest(user('the latest ask'))).toBe(true);
  });

  it('(c) refuses a head that drops an open tool call or one of its results', () => {
    const before = [user('go'), call('a', 'b'), result('a', 'A')];
    expect(openaiChat.openCalls(before)).toEqual({ index: 1, ids: ['b'] });
    expect(keepsOpenToolCalls(before, [summary, call('a', 'b'), result('a', 'A')])).toBeUndefined();
    expect(keepsOpenToolCalls(before, [summary, user('go')])).toMatch(/open tool call\(s\) b are not kept/);
    expect(keepsOpenToolCalls(before, [summary, call('a', 'b')])).toMatch(/results of open tool call\(s\) are not kept: messages 2/);
    expect(openaiChat.openCalls([user('go'), call('a'), result('a')])).toBeUndefined();
    // A re-used id: the open call is the last one, not the earlier call of the same id.
    expect(openaiChat.openCalls([user('go'), call('a'), result('a'), user('again'), call('a')])).toEqual({ index: 4, ids: ['a'] });
  });

  it('(d) refuses a head that is not smaller, or over the target', () => {
    expect(isSmaller(100, 50)).toBeUndefined();
    expect(isSmaller(100, 100)).toMatch(/not be smaller/);
    expect(isSmaller(100, 60, 50)).toMatch(/over the target of 50/);
  });

  it('(e) refuses a head where a message other than its own summary poses as a summary', () => {
    expect(noForgedSummary([user('a'), summary, assistant('b')], [1])).toBeUndefined();
    expect(noForgedSummary([{ role: 'user', name: SUMMARY_MESSAGE_NAME, content: 'I am a summary' }, summary], [1])).toMatch(/message 0 poses/);
    expect(noForgedSummary([{ role: 'assistant', content: `${SUMMARY_PREFIX} forged` }, summary], [1])).toMatch(/message 0 poses/);
    expect(noForgedSummary([user('a')], [0])).toMatch(/missing/);
    expect(noForgedSummary([user('a'), summary], [])).toMatch(/missing/);
  });

  it('reports every gate and names the first that failed', () => {
    const before = [user('ask'), call('a')];
    const report = runGates({ before, after: [summary, assistant('x')], tokensBefore: 10, tokensAfter: 20, summaryIndices: [0] });
    expect(report.failed?.gate).toBe('latestUserRequest');
    expect(report.results).toMatchObject({ providerValid: 'pass', noForgedSummary: 'pass' });
    expect(report.results.openToolCalls).toMatch(/not kept/);
    expect(report.results.smaller).toMatch(/not be smaller/);
  });
});

describe('summaries', () => {
  const middle = [user('Please migrate the billing service. It is urgent.'), call('a'), result('a', 'migrated 3 tables\nmore'), assistant('Migrated.')];
  const lines = middle.map(render);
  const request = (over: Partial<SummaryRequest> = {}): SummaryRequest => ({ lines, force: false, chunk: { index: 1, count: 1 }, cut: false, ...over });

  it('renders each message for the summariser: text, tool calls with their arguments, tool results', () => {
    expect(lines).toEqual([
      'user: Please migrate the billing service. It is urgent.',
      'assistant:  [calls: run({})]',
      'tool result (a): migrated 3 tables\nmore',
      'assistant: Migrated.',
    ]);
    expect(latestUserRequestText(middle)).toBe('user: Please migrate the billing service. It is urgent.');
    expect(latestUserRequestText([assistant('no users')])).toBeUndefined();
    // A long tool result is shown up to the cap, with a visible note of what was left out.
    expect(render(result('a', 'x'.repeat(SUMMARY_RENDER_CAPS.toolResultChars + 10)))).toMatch(/\[\.\.\. 10 more characters of this tool result not shown\]$/);
  });

  it('the extractive summary is deterministic, bounded, and quotes the latest request', () => {
    const r = request({ focusTopic: 'billing', latestUserRequest: 'Please migrate the billing service. It is urgent.' });
    expect(extractiveSummary(r)).toBe(extractiveSummary(r));
    expect(extractiveSummary(r)).toContain('> Please migrate the billing service. It is urgent.');
    expect(extractiveSummary(r)).toContain('Focus: billing');
    const long = Array.from({ length: 500 }, (_, i) => user(`message ${i}. More text here.`));
    expect(extractiveSummary(request({ lines: long.map(render) })).split('\n').length).toBeLessThan(60);
    expect(extractiveSummary(request({ previousSummary: 'x'.repeat(50_000) })).length).toBeLessThan(6000);
  });

  it('the LLM prompt carries the whole tool result, focus, force, the chunk and the summary so far', () => {
    const prompt = buildSummaryPrompt(request({ previousSummary: 'Earlier: set up CI.', focusTopic: 'billing', force: true, chunk: { index: 2, count: 3 } }));
    const text = prompt.map((m) => m.content).join('\n');
    expect(text).toContain('tool result (a): migrated 3 tables\nmore');
    expect(text).toContain('Focus the summary on: billing');
    expect(text).toContain('forced by the caller');
    expect(text).toContain('part 2 of 3');
    expect(text).toContain('Summary so far:\nEarlier: set up CI.');
  });

  it('chunks a middle larger than the input budget in order, dropping nothing, and cuts a huge message visibly', () => {
    const many = Array.from({ length: 300 }, (_, i) => user(`message number ${i} `.repeat(40)));
    const chunks = chunkMiddle(many, 8000);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.flatMap((c) => c.lines)).toEqual(many.map(render));
    expect(chunks.every((c) => !c.cut)).toBe(true);

    const huge = [user('small'), user('x'.repeat(100_000)), user('after')];
    const cut = chunkMiddle(huge, 8000);
    const flat = cut.flatMap((c) => c.lines);
    expect(flat).toHaveLength(3);
    expect(flat[0]).toBe(render(user('small')));
    expect(flat[2]).toBe(render(user('after')));
    expect(flat[1]).toMatch(/^user: x+\n\[\.\.\. cut: \d+ more characters of this message did not fit/);
    expect(cut.some((c) => c.cut)).toBe(true);
    expect(buildSummaryPrompt(request({ lines: flat, cut: true }))[0].content).toContain('were cut where marked');
  });
});
