/**
 * The gemini dialect: what it accepts and refuses at append, how it groups function calls
 * with their responses, what the summariser reads, and the provider rules (provider-rules.md,
 * GM-1 to GM-3), each with an accepted and a refused case. Pure: no database, no Temporal.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUMMARY_ACK_TEXT, SUMMARY_PREFIX } from '../../../src/compaction/dialects/common';
import { gemini } from '../../../src/compaction/dialects/gemini';
import type { Message } from '../../../src/compaction/dialects/types';
import type { JsonObject, JsonValue } from '../../../src/compaction/json';

const user = (...parts: JsonValue[]): Message => ({ role: 'user', parts });
const model = (...parts: JsonValue[]): Message => ({ role: 'model', parts });
const t = (text: string, extra: JsonObject = {}): JsonObject => ({ text, ...extra });
const call = (name: string, args: JsonObject = {}, id?: string): JsonObject => ({ functionCall: { name, args, ...(id ? { id } : {}) } });
const response = (name: string, resp: JsonObject = { result: 'ok' }, id?: string): JsonObject => ({
  functionResponse: { name, response: resp, ...(id ? { id } : {}) },
});
const thought: JsonObject = { text: 'I should check the weather first.', thought: true };
const SIGNATURE = 'CiQB0e2Kb7Zk1QmR9sQ0r2thoughtsig';
const signed = (part: JsonObject): JsonObject => ({ ...part, thoughtSignature: SIGNATURE });
const png: JsonObject = { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB' } };
const pdf: JsonObject = { fileData: { mimeType: 'application/pdf', fileUri: 'gs://bucket/report.pdf' } };
const caps = { toolResultChars: 40, toolArgumentChars: 30 };

describe('gemini: check at append', () => {
  it('accepts text, thoughts with signatures, calls, responses, media, code and unknown keys', () => {
    expect(gemini.check(user(t('hello')))).toBeUndefined();
    expect(gemini.check(model(signed(thought), t('Checking.'), signed(call('get_weather', { city: 'Paris' }, 'call_1'))))).toBeUndefined();
    expect(gemini.check(model(call('get_weather', { city: 'Paris' })))).toBeUndefined(); // GM-5: a call alone, no text
    expect(gemini.check(user(response('get_weather', { temp: 21 }, 'call_1')))).toBeUndefined();
    expect(gemini.check(user(t('what is this?'), png, pdf))).toBeUndefined();
    expect(
      gemini.check(model({ executableCode: { language: 'PYTHON', code: 'print(1)' } }, { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1\n' } })),
    ).toBeUndefined();
    expect(
      gemini.check({ role: 'user', parts: [{ text: 'x', videoMetadata: { fps: 1 }, partMetadata: { a: 1 } }, { someFuturePart: { y: 2 } }], extra: true }),
    ).toBeUndefined();
    expect(gemini.check(model({ text: '', thoughtSignature: SIGNATURE }))).toBeUndefined();
  });

  it('accepts role "function" for a turn of responses, and the snake_case spelling of the API JSON', () => {
    expect(gemini.check({ role: 'function', parts: [response('get_weather')] })).toBeUndefined();
    expect(gemini.check(model({ function_call: { name: 'get_weather', args: { city: 'Rome' } }, thought_signature: SIGNATURE }))).toBeUndefined();
    expect(
      gemini.check(user({ function_response: { name: 'get_weather', response: { temp: 3 } } }, { inline_data: { mime_type: 'image/jpeg', data: '/9j/' } })),
    ).toBeUndefined();
  });

  it.each<[string, unknown, string, RegExp]>([
    ['not an object', 'hi', '', /object/],
    ['an assistant role', { role: 'assistant', parts: [t('x')] }, 'role', /"user" or "model"/],
    ['no role', { parts: [t('x')] }, 'role', /"user" or "model"/],
    ['no parts', { role: 'user', content: 'hi' }, 'parts', /non-empty array/],
    ['empty parts', user(), 'parts', /non-empty array/],
    ['a part that is not an object', user('hi'), 'parts[0]', /object/],
    ['a text that is a number', user(t('a'), { text: 3 }), 'parts[1].text', /string/],
    ['a thought that is a string', model({ text: 'x', thought: 'yes' }), 'parts[0].thought', /boolean/],
    ['a thoughtSignature that is a number', model({ text: 'x', thoughtSignature: 1 }), 'parts[0].thoughtSignature', /string/],
    ['inlineData that is a string', user({ inlineData: 'abc' }), 'parts[0].inlineData', /object/],
    ['a functionCall that is not an object', model({ functionCall: 'get_weather' }), 'parts[0].functionCall', /object/],
    ['a functionCall in a user turn', user(call('get_weather')), 'parts[0].functionCall', /only allowed in a model turn/],
    ['a functionCall without name', model({ functionCall: { args: {} } }), 'parts[0].functionCall.name', /not empty/],
    ['a snake_case function_call without name', model({ function_call: { args: {} } }), 'parts[0].function_call.name', /not empty/],
    ['functionCall args that are an array', model({ functionCall: { name: 'f', args: [1] } }), 'parts[0].functionCall.args', /object/],
    ['a functionCall id that is a number', model({ functionCall: { name: 'f', id: 7 } }), 'parts[0].functionCall.id', /string/],
    ['a functionResponse in a model turn', model(response('f')), 'parts[0].functionResponse', /only allowed in a user/],
    ['a functionResponse without name', user({ functionResponse: { response: {} } }), 'parts[0].functionResponse.name', /not empty/],
    [
      'a functionResponse whose response is a string',
      user({ functionResponse: { name: 'f', response: 'ok' } }),
      'parts[0].functionResponse.response',
      /object/,
    ],
    ['a "function" turn holding text', { role: 'function', parts: [response('f'), t('x')] }, 'parts[1]', /only functionResponse parts/],
  ])('refuses %s', (_what, message, field, detail) => {
    const problem = gemini.check(message);
    expect(problem?.field).toBe(field);
    expect(problem?.detail).toMatch(detail);
  });
});

describe('gemini: roles, texts, requests', () => {
  it('files model turns as assistant, turns of responses only as tool, others as user', () => {
    expect(gemini.roleOf(model(t('hi')))).toBe('assistant');
    expect(gemini.roleOf(user(response('a'), response('b')))).toBe('tool');
    expect(gemini.roleOf({ role: 'function', parts: [response('a')] })).toBe('tool');
    expect(gemini.roleOf(user(response('a'), t('and this')))).toBe('user');
    expect(gemini.roleOf(user(png))).toBe('user');
  });

  it('counts text, thoughts, calls and responses; not signatures or inline data', () => {
    const out = gemini.texts(model(signed(thought), t('Checking.'), signed(call('get_weather', { city: 'Paris' }, 'call_1'))));
    expect(out).toEqual(expect.arrayContaining([thought.text, 'Checking.', 'get_weather', '{"city":"Paris"}', 'call_1']));
    expect(out.join(' ')).not.toContain(SIGNATURE);
    const resp = gemini.texts(user(response('get_weather', { temp: 21 }), png));
    expect(resp).toEqual(expect.arrayContaining(['get_weather', '{"temp":21}']));
    expect(resp.join(' ')).not.toContain('iVBOR');
    expect(gemini.texts(model({ executableCode: { code: 'print(1)' } }, { codeExecutionResult: { output: '1' } }))).toEqual(['print(1)', '1']);
  });

  it('reads as text the text parts that are not thoughts', () => {
    expect(gemini.textOf(model(thought, t('one'), call('f'), t('two')))).toBe('one\ntwo');
    expect(gemini.textOf(user(response('f'), t('note')))).toBe('note');
  });

  it('has no instructions in contents and puts the summary first', () => {
    expect(gemini.isInstruction(user(t('You are helpful.')))).toBe(false);
    expect(gemini.keepsOpeningGroups).toBe(false);
  });

  it('takes text and media (alone too) from the user as real requests; not responses, blank text, thoughts or summaries', () => {
    expect(gemini.isRealUserRequest(user(t('what is the weather?')))).toBe(true);
    expect(gemini.isRealUserRequest(user(png))).toBe(true);
    expect(gemini.isRealUserRequest(user(pdf))).toBe(true);
    expect(gemini.isRealUserRequest(user({ inline_data: { mime_type: 'image/png', data: 'x' } }))).toBe(true);
    expect(gemini.isRealUserRequest(user(response('f')))).toBe(false);
    expect(gemini.isRealUserRequest(user(response('f'), t('also this')))).toBe(false);
    expect(gemini.isRealUserRequest({ role: 'function', parts: [response('f')] })).toBe(false);
    expect(gemini.isRealUserRequest(user(t('  \n')))).toBe(false);
    expect(gemini.isRealUserRequest(user({ text: 'musing', thought: true }))).toBe(false);
    expect(gemini.isRealUserRequest(model(t('hi')))).toBe(false);
    expect(gemini.isRealUserRequest(gemini.summaryMessages('s', undefined)[0])).toBe(false);
  });
});

describe('gemini: summary', () => {
  it('is a user turn, with a model acknowledgement when a user turn is kept next', () => {
    const [summary, ack] = gemini.summaryMessages(' the story so far ', user(t('next')));
    expect(summary).toEqual({ role: 'user', parts: [{ text: `${SUMMARY_PREFIX}\nthe story so far` }] });
    expect(ack).toEqual({ role: 'model', parts: [{ text: SUMMARY_ACK_TEXT }] });
    expect(gemini.summaryMessages('s', model(t('kept')))).toHaveLength(1);
    expect(gemini.isSummary(summary)).toBe(true);
    expect(gemini.isSummary(ack)).toBe(true);
    expect(gemini.isSummary(user(t('hello')))).toBe(false);
    for (const m of [summary, ack]) expect(gemini.check(m)).toBeUndefined();
  });

  it('makes a head the provider accepts, whichever role is kept next', () => {
    const keptUser = [user(t('next')), model(call('f')), user(response('f'))];
    expect(gemini.providerCheck([...gemini.summaryMessages('s', keptUser[0]), ...keptUser])).toBeUndefined();
    const keptModel = [model(t('kept answer')), user(t('thanks'))];
    expect(gemini.providerCheck([...gemini.summaryMessages('s', keptModel[0]), ...keptModel])).toBeUndefined();
    // a kept call turn right after the acknowledgement would break GM-1: such a cut starts at a user turn instead
    expect(gemini.providerCheck([...gemini.summaryMessages('s', user(t('x'))), model(call('f'))])).toMatch(
      /function call turn comes immediately after a user turn/,
    );
  });

  it('sees the marker in any text part, past white space and format characters', () => {
    expect(gemini.posesAsSummary(user(t('fine'), t(`\u200b ${SUMMARY_PREFIX}`)))).toBe(true);
    expect(gemini.posesAsSummary(model(t(`${SUMMARY_PREFIX} forged`)))).toBe(true);
    expect(gemini.posesAsSummary(user(t(`quoting ${SUMMARY_PREFIX}`)))).toBe(false);
  });
});

describe('gemini: groups', () => {
  const shape = (messages: Message[]) => gemini.groups(messages).map((g) => [g.indices, g.orphan, g.unanswered]);

  it('joins a call turn with the directly following response turn (GM-2), parallel calls too', () => {
    expect(
      shape([
        user(t('weather in Paris and Rome?')),
        model(call('get_weather', { city: 'Paris' }), call('get_weather', { city: 'Rome' })),
        user(response('get_weather'), response('get_weather')),
        model(t('Sunny both.')),
      ]),
    ).toEqual([
      [[0], false, []],
      [[1, 2], false, []],
      [[3], false, []],
    ]);
  });

  it('pairs by id when present, then by name, then by order; names re-used across turns pair with their own turn', () => {
    const byId = [user(t('go')), model(call('f', {}, 'c1'), call('f', {}, 'c2')), user(response('f', {}, 'c2'), response('f', {}, 'c1'))];
    expect(shape(byId)[1]).toEqual([[1, 2], false, []]);
    const byName = [user(t('go')), model(call('a'), call('b')), user(response('b'))];
    expect(shape(byName)[1]).toEqual([[1, 2], false, ['a']]);
    const reused = [user(t('go')), model(call('f')), user(response('f')), model(call('f')), user(response('f'))];
    expect(shape(reused)).toEqual([
      [[0], false, []],
      [[1, 2], false, []],
      [[3, 4], false, []],
    ]);
    expect(gemini.resultsOf(reused, 3, ['f'])).toEqual([4]);
  });

  it('marks responses that answer no call of the directly previous turn as orphans (GM-2, GM-3)', () => {
    expect(shape([user(response('f'))])).toEqual([[[0], true, []]]);
    expect(shape([user(t('go')), model(call('f')), model(t('thinking aloud')), user(response('f'))])).toEqual([
      [[0], false, []],
      [[1], false, ['f']],
      [[2], false, []],
      [[3], true, []],
    ]);
    expect(shape([user(t('go')), model(call('f')), user(response('f'), response('f'))])[1]).toEqual([[1, 2], true, []]);
  });

  it('reports the calls open at the end, by id or by name, with the responses that exist', () => {
    const messages = [user(t('go')), model(call('a', {}, 'id_a'), call('b'))];
    expect(gemini.openCalls(messages)).toEqual({ index: 1, ids: ['id_a', 'b'] });
    const partial = [...messages, user(response('a', {}, 'id_a'))];
    expect(gemini.openCalls(partial)).toEqual({ index: 1, ids: ['b'] });
    expect(gemini.resultsOf(partial, 1, ['id_a', 'b'])).toEqual([2]);
    expect(gemini.openCalls([...partial.slice(0, 2), user(response('a', {}, 'id_a'), response('b'))])).toBeUndefined();
  });
});

describe('gemini: render', () => {
  it('shows text, calls, responses, media and code; never thoughts or signatures', () => {
    expect(gemini.render(user(t('what is this?'), png, pdf), caps)).toBe('user: what is this? [inlineData: image/png] [fileData: gs://bucket/report.pdf]');
    expect(gemini.render(model(signed(thought), t('Checking.'), signed(call('get_weather', { city: 'Paris', unit: 'celsius', detail: 'full' }))), caps)).toBe(
      'assistant: Checking. [calls: get_weather({"city":"Paris","unit":"celsiu [... 19 more characters of these arguments not shown])]',
    );
    expect(gemini.render(user(response('get_weather', { temp: 21 }, 'call_1')), caps)).toBe('tool result (get_weather, call_1): {"temp":21}');
    expect(gemini.render(user(response('read', { content: 'y'.repeat(50) })), caps)).toMatch(
      /^tool result \(read\): \{"content":"y+ \[\.\.\. 24 more characters of this tool result not shown\]$/,
    );
    expect(gemini.render(model(call('f')), caps)).toBe('assistant: [calls: f({})]');
    expect(
      gemini.render(model({ executableCode: { language: 'PYTHON', code: 'print(1)' } }, { codeExecutionResult: { outcome: 'OUTCOME_OK', output: '1' } }), caps),
    ).toBe('assistant: [code (PYTHON): print(1)] code result (OUTCOME_OK): 1');
    const line = gemini.render(model(signed(thought), { text: '', thoughtSignature: SIGNATURE }, t('Done.')), caps);
    expect(line).toBe('assistant: Done.');
    expect(line).not.toContain(SIGNATURE);
  });

  it('cuts on grapheme boundaries', () => {
    const line = gemini.render(user(response('f', { s: '👍🏽'.repeat(30) })), { toolResultChars: 21, toolArgumentChars: 5 });
    expect((line as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });
});

describe('gemini: provider rules', () => {
  const check = (messages: Message[]) => gemini.providerCheck(messages);

  it('accepts an ordinary exchange with a function loop, and an open call turn at the very end', () => {
    expect(check([])).toBeUndefined();
    expect(check([user(t('weather?')), model(call('get_weather')), user(response('get_weather')), model(t('Sunny.'))])).toBeUndefined();
    expect(check([user(t('weather?')), model(call('get_weather'), call('get_time'))])).toBeUndefined();
    expect(check([user(t('go')), model(call('f')), { role: 'function', parts: [response('f')] }, model(call('g')), user(response('g'))])).toBeUndefined();
    expect(check([user(t('a')), user(t('b')), model(t('c')), model(t('d'))])).toBeUndefined();
  });

  it('refuses a content the append check refuses, naming the field', () => {
    expect(check([user(t('go')), model({ functionCall: { args: {} } })])).toMatch(/^contents\[1\]\.parts\[0\]\.functionCall\.name: /);
  });

  it('GM-1: contents start with a user turn', () => {
    expect(check([model(t('hello')), user(t('hi'))])).toBe(
      "contents[0]: Please ensure that the conversation starts with a user turn (the first content has role 'model').",
    );
  });

  it('GM-1: a function call turn comes right after a user turn or a function response turn', () => {
    expect(check([user(t('go')), model(t('Sure.')), model(call('f'))])).toBe(
      'contents[2]: Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
    );
  });

  it('GM-2: a function response turn comes right after its function call turn', () => {
    expect(check([user(t('go')), model(t('ok')), user(response('f'))])).toBe(
      'contents[2]: Please ensure that function response turn comes immediately after a function call turn.',
    );
    expect(check([user(response('f'))])).toBe('contents[0]: Please ensure that function response turn comes immediately after a function call turn.');
  });

  it('GM-3: as many response parts as call parts', () => {
    expect(check([user(t('go')), model(call('a'), call('b')), user(response('a'), response('b')), model(t('ok'))])).toBeUndefined();
    const gm3 = 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
    expect(check([user(t('go')), model(call('a'), call('b')), user(response('a'))])).toBe(`contents[2]: ${gm3}`);
    expect(check([user(t('go')), model(call('a')), user(response('a'), response('a'))])).toBe(`contents[2]: ${gm3}`);
    expect(check([user(t('go')), model(call('a')), user(t('never mind'))])).toBe(`contents[2]: ${gm3}`);
  });
});

describe('gemini: hold and provider view', () => {
  it('never holds, and sends the contents as they are', () => {
    const messages = [user(t('go')), model(signed(thought), signed(call('f')))];
    expect(gemini.holdReason(messages)).toBeUndefined();
    const view = gemini.forProvider(messages);
    expect(view).toEqual(messages);
    view.forEach((m, i) => expect(m).toBe(messages[i]));
  });
});

/** A Claude Code transcript as Gemini contents: turns merged, blocks mapped to parts (a mechanical test input, not a real Gemini log). */
function asGeminiContents(messages: Message[]): Message[] {
  const out: Array<{ role: string; parts: JsonObject[] }> = [];
  const names = new Map<string, string>();
  for (const m of messages) {
    const role = m.role === 'assistant' ? 'model' : 'user';
    const blocks = (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as JsonObject[])) as JsonObject[];
    const parts: JsonObject[] = [];
    for (const b of blocks) {
      if (b.type === 'text') parts.push({ text: b.text });
      else if (b.type === 'thinking') parts.push({ text: b.thinking, thought: true, thoughtSignature: b.signature });
      else if (b.type === 'tool_use') {
        names.set(String(b.id), String(b.name));
        parts.push({ functionCall: { id: b.id, name: b.name, args: b.input } });
      } else if (b.type === 'tool_result') {
        parts.push({ functionResponse: { id: b.tool_use_id, name: names.get(String(b.tool_use_id)) ?? 'unknown', response: { content: b.content ?? '' } } });
      }
    }
    const last = out[out.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  }
  return out as unknown as Message[];
}

const CORPUS = path.resolve(__dirname, '../../../../shared/corpus');

describe('gemini: real transcripts', () => {
  it.skipIf(!existsSync(path.join(CORPUS, 'gemini')))('accepts every message and every transcript of the gemini corpus', () => {
    for (const file of readdirSync(path.join(CORPUS, 'gemini')).filter((f) => f.endsWith('.json'))) {
      const messages = (JSON.parse(readFileSync(path.join(CORPUS, 'gemini', file), 'utf8')) as { messages: Message[] }).messages;
      messages.forEach((m, i) => expect(gemini.check(m), `${file} message ${i}`).toBeUndefined());
      expect(gemini.providerCheck(messages), file).toBeUndefined();
    }
  });

  it.skipIf(!existsSync(path.join(CORPUS, 'anthropic')))(
    'accepts the real Claude Code transcripts converted to contents, and every compacted head cut at a group start',
    () => {
      const files = readdirSync(path.join(CORPUS, 'anthropic')).filter((f) => f.endsWith('.json'));
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        const messages = asGeminiContents((JSON.parse(readFileSync(path.join(CORPUS, 'anthropic', file), 'utf8')) as { messages: Message[] }).messages);
        messages.forEach((m, i) => expect(gemini.check(m), `${file} content ${i}`).toBeUndefined());
        expect(gemini.providerCheck(messages), file).toBeUndefined();
        const groups = gemini.groups(messages);
        expect(groups.filter((g) => g.orphan || g.unanswered.length > 0)).toEqual([]);
        for (const g of groups) {
          const start = g.indices[0];
          expect(gemini.providerCheck(messages.slice(0, g.indices[g.indices.length - 1] + 1)), `${file} prefix`).toBeUndefined();
          if (start > 0) {
            expect(
              gemini.providerCheck([...gemini.summaryMessages('s', messages[start]), ...messages.slice(start)]),
              `${file} cut at ${start}`,
            ).toBeUndefined();
          }
        }
      }
    },
  );
});
