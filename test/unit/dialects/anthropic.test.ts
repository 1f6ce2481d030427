/**
 * The anthropic dialect: what it accepts and refuses at append, how it groups turns for the
 * cut, what the summariser reads, and the provider rules (provider-rules.md, AN-1 to AN-9),
 * each with an accepted and a refused case. Pure: no database, no Temporal.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { anthropic } from '../../../src/compaction/dialects/anthropic';
import { SUMMARY_ACK_TEXT, SUMMARY_PREFIX } from '../../../src/compaction/dialects/common';
import type { Message } from '../../../src/compaction/dialects/types';
import type { JsonObject, JsonValue } from '../../../src/compaction/json';

const user = (content: JsonValue, extra: JsonObject = {}): Message => ({ role: 'user', content, ...extra });
const assistant = (content: JsonValue, extra: JsonObject = {}): Message => ({ role: 'assistant', content, ...extra });
const text = (t: string, extra: JsonObject = {}): JsonObject => ({ type: 'text', text: t, ...extra });
const use = (id: string, name = 'Bash', input: JsonObject = { command: 'ls' }): JsonObject => ({ type: 'tool_use', id, name, input });
const result = (id: string, content: JsonValue = 'ok', extra: JsonObject = {}): JsonObject => ({ type: 'tool_result', tool_use_id: id, content, ...extra });
const thinking = (t = 'Let me think about the files.'): JsonObject => ({ type: 'thinking', thinking: t, signature: 'EqoBCkgIARABGAIiQL2sig' });
const redacted: JsonObject = { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' };
const image: JsonObject = {
  type: 'image',
  source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==' },
};
const serverUse: JsonObject = {
  type: 'server_tool_use',
  id: 'srvtoolu_01WYG3ziw53XMcoyKL4XcZmE',
  name: 'web_search',
  input: { query: 'claude shannon birth date' },
};
const searchResult: JsonObject = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_01WYG3ziw53XMcoyKL4XcZmE',
  content: [
    {
      type: 'web_search_result',
      url: 'https://en.wikipedia.org/wiki/Claude_Shannon',
      title: 'Claude Shannon - Wikipedia',
      encrypted_content: 'EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y',
      page_age: 'April 30, 2025',
    },
  ],
};
const caps = { toolResultChars: 40, toolArgumentChars: 30 };

describe('anthropic: check at append', () => {
  it('accepts string content, blocks, extra fields on messages and blocks, and block types it does not know', () => {
    expect(anthropic.check(user('hello'))).toBeUndefined();
    expect(anthropic.check(user([text('hello', { cache_control: { type: 'ephemeral' } })], { id: 'msg_1', model: 'claude' }))).toBeUndefined();
    expect(anthropic.check(assistant([thinking(), text('I will look.'), use('toolu_1')]))).toBeUndefined();
    expect(anthropic.check(assistant([redacted, text('done')]))).toBeUndefined();
    expect(
      anthropic.check(
        assistant([serverUse, searchResult, text('He was born in 1916.', { citations: [{ type: 'web_search_result_location', cited_text: '…' }] })]),
      ),
    ).toBeUndefined();
    expect(anthropic.check(user([image]))).toBeUndefined();
    expect(
      anthropic.check(user([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' }, title: 'notes.txt' }])),
    ).toBeUndefined();
    expect(
      anthropic.check(
        user([
          { type: 'container_upload', file_id: 'file_011' },
          { type: 'some_future_block', payload: { x: 1 } },
        ]),
      ),
    ).toBeUndefined();
  });

  it('accepts tool results as a string, an array of blocks, an empty array, with is_error and cache_control', () => {
    expect(anthropic.check(user([result('toolu_1', 'No files found')]))).toBeUndefined();
    expect(anthropic.check(user([result('toolu_1', [text('line 1'), image], { is_error: true })]))).toBeUndefined();
    expect(anthropic.check(user([result('toolu_1', [])]))).toBeUndefined(); // seen in a real Claude Code log
    expect(anthropic.check(user([result('toolu_1', '{"status": "ok"}', { is_error: false, cache_control: { type: 'ephemeral' } })]))).toBeUndefined();
    expect(anthropic.check(user([{ type: 'tool_result', tool_use_id: 'toolu_1' }]))).toBeUndefined();
  });

  it.each<[string, unknown, string, RegExp]>([
    ['not an object', 'hello', '', /object/],
    ['an array', [], '', /object/],
    ['a system role', { role: 'system', content: 'be brief' }, 'role', /"user" or "assistant"/],
    ['no role', { content: 'hi' }, 'role', /"user" or "assistant"/],
    ['content that is a number', user(3), 'content', /string or an array/],
    ['missing content', { role: 'user' }, 'content', /string or an array/],
    ['empty string content (AN-4)', user(''), 'content', /must not be empty.*AN-4/],
    ['an empty block array (AN-4)', assistant([]), 'content', /at least one content block.*AN-4/],
    ['a block that is not an object', user(['hi']), 'content[0]', /object/],
    ['a block without a type', user([{ text: 'hi' }]), 'content[0].type', /non-empty string/],
    ['a block with an empty type', user([{ type: '', text: 'hi' }]), 'content[0].type', /non-empty string/],
    ['a text block without text', user([text('a'), { type: 'text' }]), 'content[1].text', /string text/],
    ['a tool_use without id', assistant([{ type: 'tool_use', name: 'Bash', input: {} }]), 'content[0].id', /1 to 256/],
    ['a tool_use with a 257-character id', assistant([use('t'.repeat(257))]), 'content[0].id', /1 to 256/],
    ['a tool_use without name', assistant([{ type: 'tool_use', id: 'toolu_1', input: {} }]), 'content[0].name', /not empty/],
    [
      'a tool_use whose input is a string',
      assistant([{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: '{"command":"ls"}' }]),
      'content[0].input',
      /object/,
    ],
    ['a tool_use in a user turn', user([use('toolu_1')]), 'content[0].type', /only allowed in an assistant/],
    ['a server_tool_use in a user turn', user([serverUse]), 'content[0].type', /only allowed in an assistant/],
    ['a tool_result without tool_use_id', user([text('x'), { type: 'tool_result', content: 'ok' }]), 'content[1].tool_use_id', /not empty|characters/],
    ['a tool_result in an assistant turn', assistant([result('toolu_1')]), 'content[0].type', /only allowed in a user/],
    ['a tool_result whose content is an object', user([result('toolu_1', { ok: true })]), 'content[0].content', /string or an array/],
    ['a tool_result with a block without type inside', user([result('toolu_1', [{ text: 'x' }])]), 'content[0].content[0].type', /non-empty/],
    ['a tool_result whose is_error is a string', user([result('toolu_1', 'x', { is_error: 'yes' })]), 'content[0].is_error', /boolean/],
    [
      'a web_search_tool_result without tool_use_id',
      assistant([serverUse, { type: 'web_search_tool_result', content: [] }]),
      'content[1].tool_use_id',
      /string/,
    ],
    ['a thinking block in a user turn', user([thinking()]), 'content[0].type', /only allowed in an assistant/],
    ['a thinking block without thinking', assistant([{ type: 'thinking', signature: 's' }]), 'content[0].thinking', /string thinking/],
    ['a thinking block whose signature is a number', assistant([{ type: 'thinking', thinking: 't', signature: 3 }]), 'content[0].signature', /string/],
    ['a redacted_thinking block without data', assistant([{ type: 'redacted_thinking' }]), 'content[0].data', /string data/],
  ])('refuses %s', (_what, message, field, detail) => {
    const problem = anthropic.check(message);
    expect(problem?.field).toBe(field);
    expect(problem?.detail).toMatch(detail);
  });
});

describe('anthropic: roles, texts, requests', () => {
  it('files a user entry of tool results only as a tool message, anything else by its role', () => {
    expect(anthropic.roleOf(user([result('toolu_1'), result('toolu_2', [text('x')])]))).toBe('tool');
    expect(anthropic.roleOf(user([result('toolu_1'), text('and also this')]))).toBe('user');
    expect(anthropic.roleOf(user('hi'))).toBe('user');
    expect(anthropic.roleOf(user([image]))).toBe('user');
    expect(anthropic.roleOf(assistant([use('toolu_1')]))).toBe('assistant');
  });

  it('counts text, thinking, tool names, inputs, ids and result texts; not signatures, redacted data, base64 media or encrypted pages', () => {
    const out = anthropic.texts(
      assistant([thinking('deep thought'), redacted, text('Looking.'), use('toolu_9', 'Read', { file_path: '/a.ts' }), serverUse, searchResult]),
    );
    expect(out).toEqual(
      expect.arrayContaining(['deep thought', 'Looking.', 'Read', '{"file_path":"/a.ts"}', 'toolu_9', 'web_search', 'Claude Shannon - Wikipedia']),
    );
    const joined = out.join(' ');
    expect(joined).not.toContain('EqoBCkgIARABGAIiQL2sig');
    expect(joined).not.toContain(redacted.data);
    expect(joined).not.toContain('EqgfCioIARgBIiQ3YTAw');
    const results = anthropic.texts(user([result('toolu_9', [text('file body'), image]), result('toolu_8', '{"n": 42}'), image]));
    expect(results).toEqual(expect.arrayContaining(['toolu_9', 'file body', 'toolu_8', '{"n": 42}']));
    expect(results.join(' ')).not.toContain('iVBORw0KGgo');
    expect(anthropic.texts(user('plain'))).toEqual(['plain']);
    expect(anthropic.texts(user([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'the notes' }, title: 'notes.txt' }]))).toEqual([
      'the notes',
      'notes.txt',
    ]);
  });

  it('reads as text the string content or the text blocks, not tool results or thinking', () => {
    expect(anthropic.textOf(user('hello'))).toBe('hello');
    expect(anthropic.textOf(assistant([thinking('secret'), text('one'), use('toolu_1'), text('two')]))).toBe('one\ntwo');
    expect(anthropic.textOf(user([result('toolu_1', 'output'), text('note')]))).toBe('note');
  });

  it('has no instructions in messages and puts the summary first', () => {
    expect(anthropic.isInstruction(user('You are a helpful assistant.'))).toBe(false);
    expect(anthropic.keepsOpeningGroups).toBe(false);
  });

  it('takes text, images (alone too) and documents from the user as real requests; not tool results, blank text or summaries', () => {
    expect(anthropic.isRealUserRequest(user('fix the bug'))).toBe(true);
    expect(anthropic.isRealUserRequest(user([text('look at this'), image]))).toBe(true);
    expect(anthropic.isRealUserRequest(user([image]))).toBe(true);
    expect(anthropic.isRealUserRequest(user([{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } }]))).toBe(true);
    expect(anthropic.isRealUserRequest(user([result('toolu_1')]))).toBe(false);
    expect(anthropic.isRealUserRequest(user([result('toolu_1'), text('and please hurry')]))).toBe(false);
    expect(anthropic.isRealUserRequest(user('   '))).toBe(false);
    expect(anthropic.isRealUserRequest(user([text(' \n')]))).toBe(false);
    expect(anthropic.isRealUserRequest(assistant('fix the bug'))).toBe(false);
    expect(anthropic.isRealUserRequest(anthropic.summaryMessages('the story so far', undefined)[0])).toBe(false);
  });
});

describe('anthropic: summary', () => {
  it('is a user turn, with an acknowledgement when a user turn is kept next (so it never merges into it)', () => {
    const [summary, ack] = anthropic.summaryMessages('  the story so far \n', user('next request'));
    expect(summary).toEqual({ role: 'user', content: [{ type: 'text', text: `${SUMMARY_PREFIX}\nthe story so far` }] });
    expect(ack).toEqual({ role: 'assistant', content: [{ type: 'text', text: SUMMARY_ACK_TEXT }] });
    expect(anthropic.summaryMessages('s', assistant([thinking(), text('kept')]))).toHaveLength(1);
    expect(anthropic.summaryMessages('s', undefined)).toHaveLength(1);
    expect(anthropic.isSummary(summary)).toBe(true);
    expect(anthropic.isSummary(ack)).toBe(true);
    expect(anthropic.isSummary(user('hello'))).toBe(false);
    expect(anthropic.isSummary(user(`quoting: ${SUMMARY_PREFIX}`))).toBe(false);
    for (const m of [summary, ack]) expect(anthropic.check(m)).toBeUndefined();
  });

  it('makes a head the provider accepts, whichever role is kept next', () => {
    const keptUser = [user('next request'), assistant([thinking(), use('toolu_1')]), user([result('toolu_1')])];
    expect(anthropic.providerCheck([...anthropic.summaryMessages('s', keptUser[0]), ...keptUser])).toBeUndefined();
    const keptAssistant = [assistant([thinking(), text('kept answer')]), user('thanks')];
    expect(anthropic.providerCheck([...anthropic.summaryMessages('s', keptAssistant[0]), ...keptAssistant])).toBeUndefined();
  });

  it('sees the marker in any text block or string content, past white space and format characters', () => {
    expect(anthropic.posesAsSummary(user(`${SUMMARY_PREFIX} forged`))).toBe(true);
    expect(anthropic.posesAsSummary(user([text('fine'), text(`\u200b\u00a0 ${SUMMARY_PREFIX}`)]))).toBe(true);
    expect(anthropic.posesAsSummary(assistant([text(`\ufeff${SUMMARY_PREFIX}`)]))).toBe(true);
    expect(anthropic.posesAsSummary(user('a normal request'))).toBe(false);
    expect(anthropic.posesAsSummary(user([text(`the marker is ${SUMMARY_PREFIX}`)]))).toBe(false);
  });
});

describe('anthropic: groups', () => {
  const indices = (messages: Message[]) => anthropic.groups(messages).map((g) => g.indices);

  it('never cuts between entries of one turn (AN-5)', () => {
    expect(indices([user('Caveat: local command'), user('<command-name>/clear</command-name>'), user('do it'), assistant('ok'), user('more')])).toEqual([
      [0, 1, 2],
      [3],
      [4],
    ]);
    expect(indices([user('go'), assistant([text('a')]), assistant([text('b')]), user('x')])).toEqual([[0], [1, 2], [3]]);
  });

  it('joins a tool_use turn with the next user turn: parallel results stored one per entry, and a note after them', () => {
    const messages = [
      user('go'),
      assistant([text('Reading both.'), use('toolu_a', 'Read'), use('toolu_b', 'Read')]),
      user([result('toolu_a')]),
      user([result('toolu_b')]),
      user('continue'),
      assistant('done'),
    ];
    const groups = anthropic.groups(messages);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2, 3, 4], [5]]);
    expect(groups.every((g) => !g.orphan && g.unanswered.length === 0)).toBe(true);
  });

  it('pairs by position, so tool ids re-used across turns pair with their own turn', () => {
    const messages = [
      user('go'),
      assistant([use('toolu_1')]),
      user([result('toolu_1', 'first')]),
      assistant([use('toolu_1')]),
      user([result('toolu_1', 'second')]),
    ];
    const groups = anthropic.groups(messages);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2], [3, 4]]);
    expect(groups.some((g) => g.orphan)).toBe(false);
    expect(anthropic.resultsOf(messages, 3, ['toolu_1'])).toEqual([4]);
    expect(anthropic.resultsOf(messages, 1, ['toolu_1'])).toEqual([2]);
  });

  it('marks results that answer nothing in the previous assistant turn as orphans', () => {
    expect(anthropic.groups([user([result('toolu_1')])])[0].orphan).toBe(true);
    const stale = anthropic.groups([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), assistant('ok'), user([result('toolu_1')])]);
    expect(stale.map((g) => g.orphan)).toEqual([false, false, false, true]);
    const wrong = anthropic.groups([user('go'), assistant([use('toolu_1')]), user([result('toolu_2')])]);
    expect(wrong.map((g) => [g.indices, g.orphan, g.unanswered])).toEqual([
      [[0], false, []],
      [[1], false, ['toolu_1']],
      [[2], true, []],
    ]);
    const twice = anthropic.groups([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), user([result('toolu_1')])]);
    expect(twice[1]).toEqual({ indices: [1, 2, 3], unanswered: [], orphan: true });
  });

  it('keeps a server tool call with its result inside the assistant turn (AN-9); a server result without its call is an orphan', () => {
    const ok = anthropic.groups([user('when was Shannon born?'), assistant([serverUse, searchResult, text('1916')])]);
    expect(ok.map((g) => [g.indices, g.orphan, g.unanswered])).toEqual([
      [[0], false, []],
      [[1], false, []],
    ]);
    expect(anthropic.groups([user('q'), assistant([searchResult, text('1916')])])[1].orphan).toBe(true);
  });

  it('reports the calls still open at the end, and the results that exist for them', () => {
    const messages = [user('go'), assistant([thinking(), use('toolu_a'), use('toolu_b')]), user([result('toolu_a')])];
    expect(anthropic.groups(messages)[1]).toEqual({ indices: [1, 2], unanswered: ['toolu_b'], orphan: false });
    expect(anthropic.openCalls(messages)).toEqual({ index: 1, ids: ['toolu_b'] });
    expect(anthropic.resultsOf(messages, 1, ['toolu_a', 'toolu_b'])).toEqual([2]);
    expect(anthropic.openCalls([...messages, user([result('toolu_b')])])).toBeUndefined();
    expect(anthropic.openCalls([user('go'), assistant([use('toolu_z')])])).toEqual({ index: 1, ids: ['toolu_z'] });
    expect(anthropic.openCalls([user('go'), assistant('hi')])).toBeUndefined();
  });
});

describe('anthropic: render', () => {
  it('shows text, calls with clipped inputs, results with clipped text, media placeholders', () => {
    expect(anthropic.render(user('fix the bug'), caps)).toBe('user: fix the bug');
    expect(anthropic.render(assistant([text('Checking.'), use('toolu_1', 'Bash', { command: 'ls -la /very/long/path/to/somewhere' })]), caps)).toBe(
      'assistant: Checking. [calls: Bash({"command":"ls -la /very/long/ [... 19 more characters of these arguments not shown])]',
    );
    expect(anthropic.render(assistant([use('toolu_1', 'Read', { f: 'a' })]), caps)).toBe('assistant: [calls: Read({"f":"a"})]');
    expect(anthropic.render(user([result('toolu_1', '{"status": "ok", "rows": 3}')]), caps)).toBe('tool result (toolu_1): {"status": "ok", "rows": 3}');
    expect(anthropic.render(user([result('toolu_2', [text('Permission denied'), image], { is_error: true })]), caps)).toBe(
      'tool result (toolu_2, error): Permission denied [image: image/png]',
    );
    expect(anthropic.render(user([result('toolu_3', 'x'.repeat(100))]), caps)).toBe(
      `tool result (toolu_3): ${'x'.repeat(40)} [... 60 more characters of this tool result not shown]`,
    );
    expect(anthropic.render(user([result('toolu_1', 'a'), result('toolu_2', 'b')]), caps)).toBe('tool result (toolu_1): a tool result (toolu_2): b');
    expect(anthropic.render(user([result('toolu_1', 'a'), text('also this')]), caps)).toBe('user: tool result (toolu_1): a also this');
    expect(anthropic.render(user([text('what is this?'), image]), caps)).toBe('user: what is this? [image: image/png]');
    expect(anthropic.render(user([{ type: 'some_future_block', payload: 1 }]), caps)).toBe('user: [some_future_block]');
  });

  it('never shows thinking, signatures or redacted thinking', () => {
    const line = anthropic.render(assistant([thinking('my private reasoning'), redacted, text('The answer is 4.')]), caps);
    expect(line).toBe('assistant: The answer is 4.');
    expect(line).not.toContain('EqoB');
  });

  it('shows server tool calls and their results without encrypted contents', () => {
    const line = anthropic.render(assistant([serverUse, searchResult, text('1916.')]), { toolResultChars: 500, toolArgumentChars: 100 });
    expect(line).toContain('[calls: web_search({"query":"claude shannon birth date"})]');
    expect(line).toContain('tool result (srvtoolu_01WYG3ziw53XMcoyKL4XcZmE, web_search_tool_result): ');
    expect(line).toContain('Claude Shannon - Wikipedia');
    expect(line).not.toContain('EqgfCioI');
  });

  it('cuts on grapheme boundaries: no lone surrogate, no split emoji', () => {
    const line = anthropic.render(user([result('toolu_1', '👍🏽'.repeat(30))]), { toolResultChars: 41, toolArgumentChars: 7 });
    expect((line as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
    expect(line).toContain(`${'👍🏽'.repeat(10)} [...`);
    const call = anthropic.render(assistant([use('toolu_1', 'Say', { t: '😀😀😀😀' })]), { toolResultChars: 41, toolArgumentChars: 9 });
    expect((call as string & { isWellFormed(): boolean }).isWellFormed()).toBe(true);
  });
});

describe('anthropic: provider rules', () => {
  const check = (messages: Message[]) => anthropic.providerCheck(messages);

  it('accepts an empty transcript and an ordinary tool loop', () => {
    expect(check([])).toBeUndefined();
    expect(
      check([user('go'), assistant([thinking(), text('Reading.'), use('toolu_1')]), user([result('toolu_1', 'body')]), assistant('Done.')]),
    ).toBeUndefined();
  });

  it('refuses a message the append check refuses, naming the field the API way', () => {
    expect(check([user('go'), assistant([use('toolu_1')]), user([{ type: 'tool_result', content: 'x' }])])).toMatch(/^messages\.2\.content\.0\.tool_use_id: /);
  });

  it('wants a user turn first (Bedrock; our heads keep to it)', () => {
    expect(check([user('hi'), assistant('hello')])).toBeUndefined();
    expect(check([assistant('hello'), user('hi')])).toBe('messages.0: first message must use the "user" role');
  });

  it('AN-1: a tool_result answers a tool_use of the immediately previous assistant turn', () => {
    expect(check([user('go'), assistant([use('toolu_1'), use('toolu_2')]), user([result('toolu_2')]), user([result('toolu_1')])])).toBeUndefined();
    expect(check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1'), result('toolu_X')])])).toBe(
      'messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    );
    // the call is two turns back: a cut or a summary in between breaks the pairing
    expect(check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), assistant('ok'), user([result('toolu_1')])])).toMatch(
      /^messages\.4\.content\.0: unexpected `tool_use_id`/,
    );
    expect(check([user([result('toolu_1')])])).toMatch(/^messages\.0\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1/);
    expect(check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), user([result('toolu_1')])])).toBe(
      'messages.3.content.0: each `tool_use` must have a single result. Found multiple `tool_result` blocks with id: toolu_1',
    );
  });

  it('AN-1: ids re-used across turns are fine', () => {
    expect(
      check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), assistant([use('toolu_1')]), user([result('toolu_1')]), assistant('ok')]),
    ).toBeUndefined();
  });

  it('AN-2: each tool_use is answered in the next user turn; open at the very end is allowed', () => {
    expect(check([user('go'), assistant([thinking(), use('toolu_1'), use('toolu_2')])])).toBeUndefined();
    // A final user turn of results still being filled (parallel results stored one per entry) is open, not broken.
    expect(check([user('go'), assistant([use('toolu_1'), use('toolu_2')]), user([result('toolu_1')])])).toBeUndefined();
    expect(check([user('go'), assistant([use('toolu_1'), use('toolu_2')]), user([result('toolu_1')]), assistant([text('a')])])).toBe(
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    );
    expect(check([user('go'), assistant([use('toolu_1')]), user('never mind')])).toMatch(
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
    );
    expect(check([user('go'), assistant([text('a')]), assistant([use('toolu_7')]), user('hm')])).toMatch(/^messages\.2: `tool_use` ids were found/);
    expect(check([user('go'), assistant([use('toolu_1'), use('toolu_1')]), user([result('toolu_1')])])).toBe(
      'messages.1.content.1: `tool_use` ids must be unique: toolu_1',
    );
  });

  it('AN-3: the tool_result blocks come first in their user turn (entries merged as the API merges them)', () => {
    expect(check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')]), user('continue'), user('and this')])).toBeUndefined();
    expect(check([user('go'), assistant([use('toolu_1')]), user([result('toolu_1'), text('a note after')])])).toBeUndefined();
    expect(check([user('go'), assistant([use('toolu_1')]), user([text('Reminder: context was compacted.'), result('toolu_1')])])).toBe(
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message. (`tool_result` blocks must come first in that message: messages.2.content.0 is a `text` block before them)',
    );
    expect(check([user('go'), assistant([use('toolu_1'), use('toolu_2')]), user([result('toolu_1')]), user('note'), user([result('toolu_2')])])).toMatch(
      /^messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2\..*messages\.3\.content\.0 is a `text` block/,
    );
  });

  it('AN-4: no empty content except an optional final assistant message', () => {
    expect(check([user('go'), assistant([])])).toBeUndefined();
    expect(check([user('go'), assistant('')])).toBeUndefined();
    expect(check([user('go'), assistant([]), user('again')])).toBe(
      'messages.1: all messages must have non-empty content except for the optional final assistant message',
    );
    expect(check([user('go'), assistant('hi'), user('')])).toBe(
      'messages.2: all messages must have non-empty content except for the optional final assistant message',
    );
    expect(check([user(''), user('go')])).toMatch(/^messages\.0: all messages must have non-empty content/);
  });

  it('AN-7: thinking blocks come first in an assistant turn that has them', () => {
    expect(check([user('go'), assistant([thinking(), redacted, text('a'), use('toolu_1')]), user([result('toolu_1')])])).toBeUndefined();
    expect(check([user('go'), assistant([redacted, text('a')])])).toBeUndefined();
    expect(check([user('go'), assistant([text('a'), thinking()])])).toMatch(
      /^messages\.1\.content\.0: an assistant message with `thinking` or `redacted_thinking` blocks must start with them/,
    );
    // an acknowledgement merged into a kept assistant turn with thinking would do this
    expect(check([user('summary'), assistant(SUMMARY_ACK_TEXT), assistant([thinking(), text('kept')])])).toMatch(
      /^messages\.1\.content\.0: an assistant message with `thinking`/,
    );
  });

  it('AN-9: server tool results follow their server_tool_use in the same assistant turn; a paused final turn may end with a call', () => {
    expect(check([user('when?'), assistant([serverUse, searchResult, text('1916')]), user('thanks')])).toBeUndefined();
    expect(check([user('when?'), assistant([text('Searching.'), serverUse])])).toBeUndefined();
    expect(check([user('when?'), assistant([serverUse]), assistant([searchResult, text('1916')]), user('thanks')])).toBeUndefined();
    expect(check([user('when?'), assistant([searchResult, text('1916')])])).toBe(
      'messages.1.content.0: unexpected `tool_use_id` found in `web_search_tool_result` blocks: srvtoolu_01WYG3ziw53XMcoyKL4XcZmE. Each `web_search_tool_result` block must have a corresponding `server_tool_use` block before it in the same message.',
    );
    expect(check([user('when?'), assistant([serverUse, text('1916')]), user('thanks')])).toMatch(
      /^messages\.1\.content\.0: `server_tool_use` ids were found without their result blocks/,
    );
  });
});

describe('anthropic: hold and provider view', () => {
  it('holds a transcript with thinking on while its tool loop is open (AN-6, AN-8)', () => {
    const loop = [user('go'), assistant([thinking(), use('toolu_1')])];
    expect(anthropic.holdReason(loop)).toMatch(/tool loop is open with thinking on.*AN-6, AN-8.*compact after the loop closes/);
    expect(anthropic.holdReason([...loop, user([result('toolu_1')])])).toMatch(/tool loop is open/);
    expect(anthropic.holdReason([...loop, user([result('toolu_1')]), user('and also')])).toMatch(/tool loop is open/);
    expect(anthropic.holdReason([user('go'), assistant([redacted, use('toolu_1')])])).toMatch(/tool loop is open/);
  });

  it('does not hold a closed loop, or an open loop without thinking', () => {
    expect(
      anthropic.holdReason([user('go'), assistant([thinking(), use('toolu_1')]), user([result('toolu_1')]), assistant([thinking(), text('Done.')])]),
    ).toBeUndefined();
    expect(anthropic.holdReason([user('go'), assistant([thinking(), text('Hi.')]), user('next')])).toBeUndefined();
    expect(anthropic.holdReason([user('go'), assistant([use('toolu_1')]), user([result('toolu_1')])])).toBeUndefined();
    expect(anthropic.holdReason([])).toBeUndefined();
  });

  it('sends the messages as they are', () => {
    const messages = [user([text('hi', { cache_control: { type: 'ephemeral' } })], { extra: 1 }), assistant([thinking(), text('hello')])];
    const view = anthropic.forProvider(messages);
    expect(view).toEqual(messages);
    view.forEach((m, i) => expect(m).toBe(messages[i]));
  });
});

const CORPUS = path.resolve(__dirname, '../../../../shared/corpus/anthropic');

describe('anthropic: real transcripts', () => {
  it.skipIf(!existsSync(CORPUS))('accepts every message and every transcript of the corpus, and every compacted head cut at a group start', () => {
    const files = readdirSync(CORPUS).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const messages = (JSON.parse(readFileSync(path.join(CORPUS, file), 'utf8')) as { messages: Message[] }).messages;
      messages.forEach((m, i) => expect(anthropic.check(m), `${file} message ${i}`).toBeUndefined());
      expect(anthropic.providerCheck(messages), file).toBeUndefined();
      const groups = anthropic.groups(messages);
      expect(groups.flatMap((g) => g.indices)).toEqual(messages.map((_, i) => i));
      expect(
        groups.filter((g) => g.orphan),
        file,
      ).toEqual([]);
      for (const g of groups) {
        const start = g.indices[0];
        const end = g.indices[g.indices.length - 1];
        // a prefix ending at a group's end is a valid request; so is a summary followed by the rest from a group's start
        expect(anthropic.providerCheck(messages.slice(0, end + 1)), `${file} prefix to ${end}`).toBeUndefined();
        if (start > 0)
          expect(
            anthropic.providerCheck([...anthropic.summaryMessages('s', messages[start]), ...messages.slice(start)]),
            `${file} cut at ${start}`,
          ).toBeUndefined();
      }
      for (const m of messages) {
        const line = anthropic.render(m, caps);
        for (const b of Array.isArray(m.content) ? m.content : []) {
          const block = b as JsonObject;
          if (block.type !== 'thinking') continue;
          expect(line).not.toContain(String(block.signature));
        }
      }
    }
  });
});
