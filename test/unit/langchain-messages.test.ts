/**
 * LangChain messages to and from the `openai-chat` dialect (src/adapters/langchain/messages.ts):
 * each message type in the shape `@langchain/openai` sends it, back again without loss, and the
 * result accepted by the strict fake of the OpenAI chat API.
 */
import { AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { fromChatMessage, toChatMessage } from '../../src/adapters/langchain';
import { InvalidInputError } from '../../src/errors';
import { validateChatRequest } from '../support/strict-provider';

describe('toChatMessage and fromChatMessage', () => {
  const conversation = [
    new SystemMessage('Be brief.'),
    new HumanMessage({
      content: [
        { type: 'text', text: 'What is on this picture?' },
        { type: 'image_url', image_url: 'https://example.com/a.png' },
      ],
    }),
    new AIMessage({
      content: '',
      tool_calls: [
        { id: 'call_1', name: 'grep', args: { q: 'x' }, type: 'tool_call' },
        { id: 'call_2', name: 'read', args: { path: 'a.ts' }, type: 'tool_call' },
      ],
    }),
    new ToolMessage({ tool_call_id: 'call_1', content: 'no hits' }),
    new ToolMessage({ tool_call_id: 'call_2', content: [{ type: 'text', text: 'export {}' }] }),
    new AIMessage({ content: 'A cat.', name: 'model' }),
  ];
  const chat = conversation.map(toChatMessage);

  it('converts each type as @langchain/openai sends it', () => {
    expect(chat).toEqual([
      { role: 'system', content: 'Be brief.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is on this picture?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'grep', arguments: '{"q":"x"}' } },
          { id: 'call_2', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'no hits' },
      { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'export {}' }] },
      { role: 'assistant', content: 'A cat.', name: 'model' },
    ]);
    expect(validateChatRequest({ model: 'agent-model', messages: chat })).toBeNull();
  });

  it('converts back without loss, with the id it is given', () => {
    const back = chat.map((m, i) => fromChatMessage(m, `m-${i}`));
    expect(back.map((m) => m.id)).toEqual(chat.map((_, i) => `m-${i}`));
    expect(back.map((m) => m.getType())).toEqual(['system', 'human', 'ai', 'tool', 'tool', 'ai']);
    expect(back.map(toChatMessage)).toEqual(chat);
    expect((back[2] as AIMessage).tool_calls?.map((c) => c.args)).toEqual([{ q: 'x' }, { path: 'a.ts' }]);
  });

  it('keeps a call whose arguments are not JSON as the model wrote them', () => {
    const broken = { role: 'assistant', content: null, tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'grep', arguments: '{"q":' } }] };
    const message = fromChatMessage(broken, 'm-1') as AIMessage;
    expect(message.tool_calls).toEqual([]);
    expect(message.invalid_tool_calls?.map((c) => c.args)).toEqual(['{"q":']);
    expect(toChatMessage(message)).toEqual(broken);
  });

  it('refuses what has no form on the other side, with a typed error', () => {
    expect(() => toChatMessage(new RemoveMessage({ id: 'x' }))).toThrow(InvalidInputError);
    expect(() => fromChatMessage({ role: 'function', name: 'f', content: '{}' }, 'm-1')).toThrow(InvalidInputError);
  });
});
