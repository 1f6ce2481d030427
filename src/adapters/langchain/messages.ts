/**
 * LangChain messages (`@langchain/core`'s BaseMessage) to and from the `openai-chat` dialect,
 * the way `@langchain/openai` sends them (its ChatOpenAI is not a dependency): HumanMessage a
 * `user` message, AIMessage an `assistant` one with its tool calls as `tool_calls` (arguments
 * as JSON), ToolMessage a `tool` message answering its `tool_call_id`, SystemMessage `system`.
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { Message } from '../../compaction/dialects';
import { InvalidInputError } from '../../errors';

type Content = BaseMessage['content'];

/** A LangChain content block as an OpenAI chat content part: text and images as such, anything else kept as it is. */
function chatPart(block: unknown): unknown {
  if (typeof block === 'string') return { type: 'text', text: block };
  const b = block as { type?: string; text?: unknown; image_url?: unknown };
  if (b.type === 'text') return { type: 'text', text: b.text };
  if (b.type === 'image_url') return { type: 'image_url', image_url: typeof b.image_url === 'string' ? { url: b.image_url } : b.image_url };
  return block;
}

const chatContent = (content: Content): unknown => (typeof content === 'string' ? content : content.map(chatPart));

/** The text of a content (for the roles whose OpenAI content is text only when LangChain has blocks). */
const textOf = (content: Content): string =>
  typeof content === 'string'
    ? content
    : content.map((b) => (typeof b === 'string' ? b : (b as { type?: string }).type === 'text' ? String((b as { text?: unknown }).text ?? '') : '')).join('');

const withName = (m: BaseMessage, message: Record<string, unknown>): Message => (m.name ? { ...message, name: m.name } : message) as Message;

/** One LangChain message as an `openai-chat` message. */
export function toChatMessage(m: BaseMessage): Message {
  const type = m.getType();
  if (type === 'human') return withName(m, { role: 'user', content: chatContent(m.content) });
  if (type === 'system') return withName(m, { role: 'system', content: chatContent(m.content) });
  if (type === 'tool') return { role: 'tool', tool_call_id: (m as ToolMessage).tool_call_id, content: chatContent(m.content) } as Message;
  if (type === 'ai') {
    const ai = m as AIMessage;
    const calls = [
      ...(ai.tool_calls ?? []).map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } })),
      // A call whose arguments were not JSON: its text as the model wrote it.
      ...(ai.invalid_tool_calls ?? []).map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args ?? '' } })),
    ];
    const text = textOf(ai.content);
    if (calls.length === 0) return withName(m, { role: 'assistant', content: text });
    return withName(m, { role: 'assistant', content: text === '' ? null : text, tool_calls: calls });
  }
  throw new InvalidInputError('messages', `a ${type} message has no openai-chat form`);
}

interface ChatToolCall {
  id: string;
  function: { name: string; arguments: string };
}

/** One `openai-chat` message as a LangChain message (with `id`). */
export function fromChatMessage(message: Message, id: string): BaseMessage {
  const { role, name } = message as { role?: string; name?: string };
  const content = (message.content ?? '') as Content;
  const named = name === undefined ? {} : { name };
  switch (role) {
    case 'user':
      return new HumanMessage({ id, content, ...named });
    case 'system':
    case 'developer':
      return new SystemMessage({ id, content, ...named });
    case 'tool':
      return new ToolMessage({ id, content, tool_call_id: String(message.tool_call_id) });
    case 'assistant': {
      const calls = (message.tool_calls ?? []) as unknown as ChatToolCall[];
      const valid: { id: string; name: string; args: Record<string, unknown>; type: 'tool_call' }[] = [];
      const invalid: { id: string; name: string; args: string; error: string; type: 'invalid_tool_call' }[] = [];
      for (const call of calls) {
        try {
          valid.push({ id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) as Record<string, unknown>, type: 'tool_call' });
        } catch {
          invalid.push({ id: call.id, name: call.function.name, args: call.function.arguments, error: 'arguments are not JSON', type: 'invalid_tool_call' });
        }
      }
      return new AIMessage({ id, content: message.content === null ? '' : content, tool_calls: valid, invalid_tool_calls: invalid, ...named });
    }
    default:
      throw new InvalidInputError('messages', `an openai-chat message of role ${String(role)} has no LangChain form`);
  }
}
