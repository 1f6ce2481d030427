/**
 * The ai-sdk dialect (the Vercel AI SDK's ModelMessage): what it accepts and refuses at
 * append, how it groups the cut, what the summariser reads, masking, the hold, and its
 * provider rules, judged as the Agents SDK dialect's are: each head goes through the AI SDK's
 * own provider packages (test/support/strict-ai-sdk.ts, no network) into the strict fakes, and
 * the dialect's pure providerCheck must refuse every head one of them refuses.
 */
import { describe, expect, it } from 'vitest';
import { aiSdk } from '../../../src/compaction/dialects/ai-sdk';
import { SUMMARY_ACK_TEXT, SUMMARY_PREFIX } from '../../../src/compaction/dialects/common';
import type { Message } from '../../../src/compaction/dialects/types';
import type { JsonObject, JsonValue } from '../../../src/compaction/json';
import { aiSdkRefusal, aiSdkRequests } from '../../support/strict-ai-sdk';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk';
const system = (content: string): Message => ({ role: 'system', content });
const user = (content: JsonValue, extra: JsonObject = {}): Message => ({ role: 'user', content, ...extra });
const assistant = (content: JsonValue, extra: JsonObject = {}): Message => ({ role: 'assistant', content, ...extra });
const tool = (...content: JsonObject[]): Message => ({ role: 'tool', content });
const text = (t: string, extra: JsonObject = {}): JsonObject => ({ type: 'text', text: t, ...extra });
const call = (id: string, input: JsonObject = { path: 'src/a.ts' }, toolName = 'read_file'): JsonObject => ({
  type: 'tool-call',
  toolCallId: id,
  toolName,
  input,
});
const result = (id: string, output: JsonObject = { type: 'json', value: { ok: true } }, toolName = 'read_file'): JsonObject => ({
  type: 'tool-result',
  toolCallId: id,
  toolName,
  output,
});
const signed = (t = 'Read the file first.', signature = 'EqQBsig=='): JsonObject => ({
  type: 'reasoning',
  text: t,
  providerOptions: { anthropic: { signature } },
});
const image: JsonObject = { type: 'image', image: PNG, mediaType: 'image/png' };
const pdf: JsonObject = { type: 'file', data: 'JVBERi0xLjQK', mediaType: 'application/pdf', filename: 'report.pdf' };
const caps = { toolResultChars: 40, toolArgumentChars: 30 };

describe('ai-sdk: check at append', () => {
  it('accepts every role and part of ModelMessage as JSON, with provider options and fields it does not know', () => {
    const ok: Message[] = [
      system('Be careful.'),
      user('hello'),
      user([text('look', { providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }), image, pdf], { id: 'm1' }),
      user([
        { type: 'image', image: 'https://example.com/a.png' },
        { type: 'file', data: { type: 'url', url: 'https://example.com/a.pdf' }, mediaType: 'application/pdf' },
      ]),
      user([{ type: 'file', data: { openai: 'file-1', anthropic: 'file_1' }, mediaType: 'application/pdf' }]),
      assistant('plain answer'),
      assistant([signed(), text('ok'), call('c1'), { type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'c1' }]),
      assistant([
        { type: 'reasoning-file', data: PNG, mediaType: 'image/png' },
        { type: 'custom', kind: 'openai.compaction' },
        { type: 'file', data: PNG, mediaType: 'image/png' },
      ]),
      assistant([{ ...call('ws1', { query: 'x' }, 'web_search'), providerExecuted: true }, result('ws1', { type: 'json', value: [] }, 'web_search')]),
      tool(
        result('c1', { type: 'text', value: '42' }),
        result('c2', { type: 'error-text', value: 'boom' }),
        result('c3', { type: 'error-json', value: null }),
        result('c4', { type: 'execution-denied' }),
        result('c5', {
          type: 'content',
          value: [text('see'), { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' }, { type: 'image-url', url: 'x' }],
        }),
      ),
      tool({ type: 'tool-approval-response', approvalId: 'a1', approved: false, reason: 'no' }),
    ];
    for (const m of ok) expect(aiSdk.check(m), JSON.stringify(m)).toBeUndefined();
  });

  it('refuses, naming the field, what no provider the AI SDK reaches can take', () => {
    const refused: Array<[unknown, string]> = [
      ['not an object', ''],
      [{ role: 'developer', content: 'x' }, 'role'],
      [{ role: 'system', content: [text('x')] }, 'content'],
      [{ role: 'system', content: '' }, 'content'],
      [user(''), 'content'],
      [user([]), 'content'],
      [{ role: 'tool', content: 'x' }, 'content'],
      [user('x', { providerOptions: 'nope' }), 'providerOptions'],
      [user([call('c1')]), 'content[0].type'],
      [assistant([{ type: 'x-widget' }]), 'content[0].type'],
      [tool(text('x')), 'content[0].type'],
      [user([{ text: 'no type' }]), 'content[0].type'],
      [user([text(5 as unknown as string)]), 'content[0].text'],
      [user([{ type: 'image', image: { 0: 137, 1: 80 } }]), 'content[0].image'],
      [user([{ type: 'file', data: PNG }]), 'content[0].mediaType'],
      [user([{ type: 'file', data: { type: 'data', data: [1, 2] }, mediaType: 'image/png' }]), 'content[0].data.data'],
      [assistant([{ type: 'reasoning-file', data: { type: 'reference', reference: { openai: 'f' } }, mediaType: 'image/png' }]), 'content[0].data.type'],
      [assistant([call('')]), 'content[0].toolCallId'],
      [assistant([{ type: 'tool-call', toolCallId: 'c', toolName: '', input: {} }]), 'content[0].toolName'],
      [assistant([{ type: 'tool-call', toolCallId: 'c', toolName: 'f', input: '{}' }]), 'content[0].input'],
      [tool(result('c', '42' as unknown as JsonObject)), 'content[0].output'],
      [tool(result('c', { type: 'text', value: 42 })), 'content[0].output.value'],
      [tool(result('c', { type: 'json' })), 'content[0].output.value'],
      [tool(result('c', { type: 'content', value: [{ type: 'video' }] })), 'content[0].output.value[0].type'],
      [tool({ type: 'tool-approval-response', approvalId: 'a' }), 'content[0].approved'],
    ];
    for (const [m, field] of refused) expect(aiSdk.check(m)?.field, JSON.stringify(m)).toBe(field);
  });
});

describe('ai-sdk: roles, texts, requests, summary', () => {
  it('files each message under its role', () => {
    expect([system('s'), user('u'), assistant('a'), tool(result('c'))].map((m) => aiSdk.roleOf(m))).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  it('counts text, reasoning, tool names, inputs, ids and outputs; not signatures, provider options or media data', () => {
    expect(aiSdk.texts(assistant([signed('think'), text('hi'), call('c1', { a: 1 })]))).toEqual(['think', 'hi', 'read_file', '{"a":1}', 'c1']);
    expect(aiSdk.texts(tool(result('c1', { type: 'json', value: { b: 2 } }), result('c2', { type: 'execution-denied', reason: 'no' })))).toEqual([
      'c1',
      'read_file',
      '{"b":2}',
      'c2',
      'read_file',
      'no',
    ]);
    expect(aiSdk.texts(user([image, pdf, text('x')]))).toEqual(['x']);
  });

  it('keeps system messages first as instructions; takes text, images and files from the user as real requests', () => {
    expect(aiSdk.isInstruction(system('s'))).toBe(true);
    expect(aiSdk.keepsOpeningGroups).toBe(false);
    expect([user('hi'), user([image]), user([pdf]), user([text(' \n')]), assistant('hi'), tool(result('c'))].map((m) => aiSdk.isRealUserRequest(m))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('writes the summary as a user message, with an acknowledgement when a user message is kept next', () => {
    const [summary, ack] = aiSdk.summaryMessages(' The parser was fixed. ', user('next'));
    expect(summary).toEqual(user([text(`${SUMMARY_PREFIX}\nThe parser was fixed.`)]));
    expect(ack).toEqual(assistant([text(SUMMARY_ACK_TEXT)]));
    expect(aiSdk.summaryMessages('x', assistant('a'))).toHaveLength(1);
    expect(aiSdk.isSummary(summary) && aiSdk.isSummary(ack) && !aiSdk.isRealUserRequest(summary)).toBe(true);
    expect(aiSdk.posesAsSummary(user([text('Note:'), text(`\u200b${SUMMARY_PREFIX} done`)]))).toBe(true);
    expect(aiSdk.posesAsSummary(system(`${SUMMARY_PREFIX} x`))).toBe(true);
  });
});

describe('ai-sdk: groups and open calls', () => {
  it('joins an assistant message with its run of tool messages (parallel results one per message), and pairs re-used ids by position', () => {
    const messages = [
      user('go'),
      assistant([call('c1'), call('c2')]),
      tool(result('c1')),
      tool(result('c2')),
      assistant('done'),
      user('again'),
      assistant([call('c1')]),
      tool(result('c1')),
    ];
    expect(aiSdk.groups(messages).map((g) => g.indices)).toEqual([[0], [1, 2, 3], [4], [5], [6, 7]]);
    expect(aiSdk.groups(messages).every((g) => !g.orphan && g.unanswered.length === 0)).toBe(true);
    expect(aiSdk.resultsOf(messages, 1, ['c1', 'c2'])).toEqual([2, 3]);
  });

  it('marks a result that answers no call of the assistant message its run follows as an orphan', () => {
    const groups = aiSdk.groups([user('go'), tool(result('c9')), assistant([call('c1')]), assistant('x'), tool(result('c1'))]);
    expect(groups.filter((g) => g.orphan).map((g) => g.indices)).toEqual([[1], [4]]);
  });

  it('reports the calls open at the end, and the results that exist for them', () => {
    const messages = [user('go'), assistant([signed(), call('c1'), call('c2')]), tool(result('c1'))];
    expect(aiSdk.openCalls(messages)).toEqual({ index: 1, ids: ['c2'] });
    expect(aiSdk.resultsOf(messages, 1, ['c1', 'c2'])).toEqual([2]);
    expect(aiSdk.openCalls([user('go'), assistant([call('c1')]), tool(result('c1'))])).toBeUndefined();
  });
});

describe('ai-sdk: render, tools, masking', () => {
  it('shows text, calls with clipped inputs, results with clipped outputs and media placeholders; never reasoning', () => {
    expect(aiSdk.render(assistant([signed('secret thoughts'), text('Let me look.'), call('c1', { path: 'x'.repeat(50) })]), caps)).toBe(
      `assistant: Let me look. [calls: read_file({"path":"xxxxxxxxxxxxxxxxxxxxx [... 31 more characters of these arguments not shown])]`,
    );
    expect(aiSdk.render(tool(result('c1', { type: 'error-text', value: 'boom' })), caps)).toBe('tool result (read_file, c1, error): boom');
    expect(aiSdk.render(user([image, pdf, text('see these')]), caps)).toBe('user: [image: image/png] [file: report.pdf] see these');
    expect(
      aiSdk.render(
        tool(result('c1', { type: 'content', value: [text('Page 1'), { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' }] })),
        caps,
      ),
    ).toBe('tool result (read_file, c1): Page 1 [file: image/png]');
  });

  it('reads calls and results for the ledger, errors and denials marked', () => {
    expect(aiSdk.toolCalls(assistant([call('c1', { command: 'ls' }, 'shell')]))).toEqual([{ id: 'c1', name: 'shell', input: { command: 'ls' } }]);
    expect(aiSdk.toolResults(tool(result('c1', { type: 'execution-denied', reason: 'no' })))).toEqual([
      { id: 'c1', name: 'read_file', text: '[execution denied: no]', isError: true },
    ]);
  });

  it('masks tool messages only, keeping ids, names and the error mark', () => {
    const m = tool(result('c1', { type: 'json', value: { big: 'x' } }), result('c2', { type: 'error-json', value: { e: 1 } }), {
      type: 'tool-approval-response',
      approvalId: 'a',
      approved: true,
    });
    expect(aiSdk.maskResults(m, (r) => `[masked ${r.id}]`)).toEqual(
      tool(result('c1', { type: 'text', value: '[masked c1]' }), result('c2', { type: 'error-text', value: '[masked c2]' }), {
        type: 'tool-approval-response',
        approvalId: 'a',
        approved: true,
      }),
    );
    expect(aiSdk.maskResults(assistant([call('c1')]), () => 'x')).toBeUndefined();
  });
});

describe('ai-sdk: hold', () => {
  it('holds a transcript with Anthropic thinking while its tool loop is open, not a closed loop or one without thinking', () => {
    expect(aiSdk.holdReason([user('go'), assistant([signed(), call('c1')])])).toMatch(/tool loop is open/);
    expect(aiSdk.holdReason([user('go'), assistant([signed(), call('c1')]), tool(result('c1'))])).toMatch(/tool loop is open/);
    expect(aiSdk.holdReason([user('go'), assistant([signed(), call('c1')]), tool(result('c1')), assistant('done')])).toBeUndefined();
    expect(aiSdk.holdReason([user('go'), assistant([call('c1')])])).toBeUndefined();
  });
});

/** Heads and whether the AI SDK and every provider it reaches accept them; each refused one names what providerCheck must say. */
const HEADS: Array<[string, Message[], RegExp | undefined]> = [
  [
    'an ordinary tool loop with system, media and every output kind',
    [
      system('Be careful.'),
      user([text('look'), image, pdf]),
      assistant([signed(), text('Reading.'), call('c1'), call('c2'), call('c3')]),
      tool(result('c1', { type: 'text', value: '42' }), result('c2', { type: 'error-text', value: 'no' })),
      tool(result('c3', { type: 'content', value: [text('p1'), { type: 'file', data: { type: 'data', data: PNG }, mediaType: 'image/png' }] })),
      assistant('done'),
      user('next'),
    ],
    undefined,
  ],
  ['a summary and its acknowledgement after the system message', [system('s'), ...aiSdk.summaryMessages('earlier', user('x')), user('next')], undefined],
  [
    'an approval, then the result',
    [
      user('go'),
      assistant([call('c1'), { type: 'tool-approval-request', approvalId: 'a1', toolCallId: 'c1' }]),
      tool({ type: 'tool-approval-response', approvalId: 'a1', approved: true }),
      tool(result('c1')),
      assistant('done'),
      user('next'),
    ],
    undefined,
  ],
  ['an assistant message first', [assistant('hello'), user('hi')], /first message after the system messages/],
  ['a system message after others', [user('hi'), system('late'), user('x')], /only supported at the beginning/],
  ['a call without its result before the next user message', [user('hi'), assistant([call('c1')]), user('next')], /have no tool-result/],
  ['a result without its call', [user('hi'), tool(result('c1')), user('next')], /answers no tool-call/],
  ['a result after other content', [user('hi'), assistant([call('c1')]), assistant('wait'), tool(result('c1')), user('next')], /have no tool-result/],
  [
    'a call after an assistant message (Gemini)',
    [user('hi'), assistant('let me see'), assistant([call('c1')]), tool(result('c1')), user('next')],
    /right after a user message or tool results/,
  ],
  [
    'an id used twice',
    [user('a'), assistant([call('c1')]), tool(result('c1')), user('b'), assistant([call('c1')]), tool(result('c1')), user('c')],
    /used twice/,
  ],
  [
    'a provider-executed call',
    [
      user('hi'),
      assistant([
        { ...call('ws1', { query: 'x' }, 'web_search'), providerExecuted: true },
        result('ws1', { type: 'json', value: [] }, 'web_search'),
        text('found'),
      ]),
      user('next'),
    ],
    /provider-executed/,
  ],
  ['a message that sends nothing', [user('hi'), assistant([text('')]), user('next')], /sends no content/],
  ['an audio file', [user([{ type: 'file', data: 'UklGRg==', mediaType: 'audio/wav' }])], /media type audio\/wav/],
  ['signed reasoning after text', [user('hi'), assistant([text('x'), signed(), call('c1')]), tool(result('c1')), user('next')], /must come first/],
  ['a turn ending with signed reasoning', [user('hi'), assistant([signed()]), user('next')], /cannot end with/],
];

describe('ai-sdk: provider rules, judged by the AI SDK and the strict fakes', () => {
  it.each(HEADS)('%s', async (_name, head, expected) => {
    const refused = await aiSdkRefusal(head);
    const checked = aiSdk.providerCheck(head);
    if (expected) {
      expect(refused, 'the AI SDK or a strict fake refuses it').toBeDefined();
      expect(checked).toMatch(expected);
    } else {
      expect(refused).toBeUndefined();
      expect(checked).toBeUndefined();
    }
  });

  it('allows calls open at the very end, which the agent answers before it sends the head (the AI SDK refuses to send them open)', async () => {
    const head = [user('hi'), assistant([call('c1'), call('c2')]), tool(result('c1'))];
    expect(aiSdk.providerCheck(head)).toBeUndefined();
    expect(await aiSdkRefusal(head)).toMatch(/MissingToolResultsError/);
    expect(await aiSdkRefusal([...head, tool(result('c2'))])).toBeUndefined();
  });

  it('sends through each provider package: Anthropic gets signed reasoning as thinking, Gemini the tool results as one turn', async () => {
    const requests = await aiSdkRequests([
      user('hi'),
      assistant([signed('plan'), call('c1'), call('c2')]),
      tool(result('c1')),
      tool(result('c2')),
      user('next'),
    ]);
    const anthropicBody = 'body' in requests.anthropic ? (requests.anthropic.body as { messages: Array<{ content: JsonObject[] }> }) : undefined;
    expect(anthropicBody?.messages[1].content[0]).toMatchObject({ type: 'thinking', thinking: 'plan', signature: 'EqQBsig==' });
    const geminiBody = 'body' in requests.gemini ? (requests.gemini.body as { contents: Array<{ parts: JsonObject[] }> }) : undefined;
    expect(geminiBody?.contents[2].parts.filter((p) => p.functionResponse !== undefined)).toHaveLength(2);
    expect('body' in requests['openai-responses'] && 'body' in requests['openai-chat']).toBe(true);
  });
});
