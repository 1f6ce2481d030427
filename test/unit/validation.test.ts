/** Input validation: typed errors naming the field. Pure functions, no I/O. */
import { describe, expect, it } from 'vitest';
import { parseMessages } from '../../src/compaction/message-schema';
import { BackgroundCompactionRejectedError, InvalidInputError } from '../../src/errors';
import { checkCompactRequest, checkNewSessionId, checkSessionId } from '../../src/workflows/contract';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidInputError) return error.field;
    throw error;
  }
  return undefined;
}

describe('messages', () => {
  it('accepts the OpenAI chat format', () => {
    const messages = [
      { role: 'system', content: 'sys' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'image_url', image_url: { url: 'data:,' } },
        ],
      },
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'a', content: 'ok', name: 'f' },
    ];
    expect(parseMessages(messages)).toEqual(messages);
  });

  it('keeps fields it does not know, verbatim: what real SDKs and gateways add', () => {
    const messages = [
      { role: 'system', content: 'sys', cache_control: { type: 'ephemeral' } },
      { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }], metadata: { turn: 1, tags: ['a', 'b'] } },
      {
        role: 'assistant',
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }],
        x_gateway: { latency_ms: 12.5, cached: false, nothing: null },
      },
      { role: 'tool', tool_call_id: 'a', content: '{"ok":true}', name: 'f' },
    ];
    const copy = structuredClone(messages);
    const parsed = parseMessages(messages);
    expect(parsed).toEqual(copy);
    expect(parsed[2]).toStrictEqual(copy[2]);
  });

  it('accepts a tool-call id re-used by a later turn (real transcripts re-use ids; pairing is by position)', () => {
    const turn = (answer: string) => [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: answer },
    ];
    const messages = [{ role: 'user', content: 'go' }, ...turn('first'), ...turn('second')];
    expect(parseMessages(messages)).toEqual(messages);
  });

  it('measures sizes in code points, not UTF-16 units', () => {
    const limits = { maxMessageChars: 10, maxBatchMessages: 5, maxBatchChars: 100 };
    // Ten emoji are ten code points (twenty UTF-16 units).
    expect(fieldOf(() => parseMessages([{ role: 'user', content: '\u{1F600}'.repeat(10) }], limits))).toBeUndefined();
    expect(fieldOf(() => parseMessages([{ role: 'user', content: '\u{1F600}'.repeat(11) }], limits))).toBe('messages[0]');
  });

  it.each([
    [[{ role: 'wizard', content: 'x' }], 'messages[0].role'],
    [
      [
        { role: 'user', content: 'ok' },
        { role: 'tool', content: 'x' },
      ],
      'messages[1].tool_call_id',
    ],
    [[{ role: 'user', content: 5 }], 'messages[0].content'],
    [[{ role: 'user', content: 'x', tool_call_id: 'a' }], 'messages[0].tool_call_id'],
    [[{ role: 'user', content: 'x', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }] }], 'messages[0].tool_calls'],
    [[{ role: 'assistant', content: null, tool_calls: [] }], 'messages[0].tool_calls'],
    [
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'weird', function: { name: 'f', arguments: '{}' } }] }],
      'messages[0].tool_calls[0].type',
    ],
    [
      [{ role: 'assistant', content: null, tool_calls: [{ id: '', type: 'function', function: { name: 'f', arguments: '{}' } }] }],
      'messages[0].tool_calls[0].id',
    ],
    [[{ role: 'user', content: [{ text: 'no type' }] }], 'messages[0].content[0].type'],
    [[{ role: 'user', content: [{ type: 'text' }] }], 'messages[0].content[0].text'],
    [[{ role: 'user', content: [] }], 'messages[0].content'],
    [[{ role: 'user', content: 'x', name: '' }], 'messages[0].name'],
    [[{ role: 'user', content: 'x', extra: 'nul \u0000 in an unknown field' }], 'messages[0].extra'],
    [[{ role: 'user', content: 'x', ['bad\u0000key']: 1 }], 'messages[0]["bad\\u0000key"]'],
    ['not a message', 'messages'],
    [['not a message'], 'messages[0]'],
    [[{ role: 'user', content: null }], 'messages[0].content'],
    [
      [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f' } }] }],
      'messages[0].tool_calls[0].function.arguments',
    ],
    [[{ role: 'user', content: 'nul \u0000 byte' }], 'messages[0].content'],
    [[{ role: 'user', content: 'lone \ud800 surrogate' }], 'messages[0].content'],
    [[], 'messages'],
    ['not an array', 'messages'],
  ])('rejects %j naming %s', (raw, field) => {
    expect(fieldOf(() => parseMessages(raw))).toBe(field);
  });

  it('enforces the per-message and per-batch limits', () => {
    const limits = { maxMessageChars: 10, maxBatchMessages: 2, maxBatchChars: 15 };
    expect(fieldOf(() => parseMessages([{ role: 'user', content: 'x'.repeat(11) }], limits))).toBe('messages[0]');
    expect(
      fieldOf(() =>
        parseMessages(
          [
            { role: 'user', content: 'a' },
            { role: 'user', content: 'b' },
            { role: 'user', content: 'c' },
          ],
          limits,
        ),
      ),
    ).toBe('messages');
    expect(
      fieldOf(() =>
        parseMessages(
          [
            { role: 'user', content: 'x'.repeat(8) },
            { role: 'user', content: 'y'.repeat(8) },
          ],
          limits,
        ),
      ),
    ).toBe('messages');
  });
});

describe('session ids', () => {
  it('accept a safe charset and reject path, SQL and control characters', () => {
    expect(checkSessionId('discord:1234_abc.def-9')).toBe('discord:1234_abc.def-9');
    for (const bad of ['', '../etc/passwd', "x'; drop table sessions;--", 'a b', 'é', '-leading', 'x'.repeat(129), 42]) {
      expect(() => checkSessionId(bad)).toThrow(InvalidInputError);
    }
  });

  it('reserve the --gN suffix for compaction children', () => {
    expect(checkSessionId('chat--g3')).toBe('chat--g3');
    expect(() => checkNewSessionId('chat--g3')).toThrow(/reserved/);
  });
});

describe('compaction requests', () => {
  it('reject unknown fields, wrong types and background requests', () => {
    expect(checkCompactRequest({ sessionId: 's', focusTopic: 't', force: true, requestId: 'r' })).toMatchObject({ sessionId: 's', force: true });
    expect(fieldOf(() => checkCompactRequest({ sessionId: 's', colour: 'red' }))).toBe('colour');
    expect(fieldOf(() => checkCompactRequest({ sessionId: 's', force: 'yes' }))).toBe('force');
    expect(fieldOf(() => checkCompactRequest({ sessionId: 's', focusTopic: 'x'.repeat(1001) }))).toBe('focusTopic');
    expect(fieldOf(() => checkCompactRequest(null))).toBe('request');
    expect(() => checkCompactRequest({ sessionId: 's', background: true })).toThrow(BackgroundCompactionRejectedError);
  });
});
