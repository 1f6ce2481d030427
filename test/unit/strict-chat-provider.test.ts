/**
 * The strict provider is only worth something if it refuses what OpenAI refuses: each rule
 * is shown with its valid case accepted and its broken case refused with OpenAI's message.
 * The last tests go through the real `openai` client, streamed and not.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALL_WITHOUT_RESULT, startStrictProvider, type StrictProvider, TOOL_WITHOUT_CALL, validateChatRequest } from '../support/strict-provider';

const call = (id: string, name = 'run_tests') => ({ id, type: 'function', function: { name, arguments: '{}' } });
const ask = (...messages: unknown[]) => validateChatRequest({ model: 'agent-model', messages });
const user = (content = 'fix the parser') => ({ role: 'user', content });
const assistantCalls = (...ids: string[]) => ({ role: 'assistant', content: null, tool_calls: ids.map((id) => call(id)) });
const result = (id: string, content = 'ok') => ({ role: 'tool', tool_call_id: id, content });

describe('the strict provider validates like the OpenAI chat API', () => {
  it('accepts a plain conversation, a summary message with a name, and answered single and parallel calls', () => {
    expect(ask({ role: 'system', content: 'you code' }, user(), { role: 'assistant', content: 'sure' })).toBeNull();
    expect(ask({ role: 'assistant', name: 'context_summary', content: '[CONTEXT SUMMARY] ...' }, user())).toBeNull();
    expect(ask(user(), assistantCalls('a'), result('a'), { role: 'assistant', content: 'done' })).toBeNull();
    expect(ask(user(), assistantCalls('a', 'b', 'c'), result('b'), result('a'), result('c'), user('next'))).toBeNull();
    expect(ask({ role: 'developer', content: 'rules' }, user([{ type: 'text', text: 'parts' }] as never))).toBeNull();
  });

  it("refuses a tool message that answers no preceding assistant message's tool_calls", () => {
    expect(ask(user(), result('a'))).toEqual({ message: TOOL_WITHOUT_CALL, type: 'invalid_request_error', param: 'messages.[1].role', code: null });
    // A result separated from its call by a user message no longer follows it.
    expect(ask(user(), assistantCalls('a'), result('a'), user('more'), result('a'))?.message).toBe(TOOL_WITHOUT_CALL);
    // An answer to an id that the preceding call does not hold.
    expect(ask(user(), assistantCalls('a'), result('a'), result('zzz'))).toMatchObject({ message: TOOL_WITHOUT_CALL, param: 'messages.[3].role' });
    expect(TOOL_WITHOUT_CALL).toBe("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.");
  });

  it('refuses an assistant tool call not answered before the next message or the end of the request', () => {
    const atEnd = ask(user(), assistantCalls('call_1'));
    expect(atEnd).toEqual({ message: `${CALL_WITHOUT_RESULT}call_1`, type: 'invalid_request_error', param: 'messages.[1].role', code: null });
    expect(atEnd?.message).toBe(
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
    );
    // Parallel calls, partly answered, then a user message.
    expect(ask(user(), assistantCalls('a', 'b', 'c'), result('b'), user('next'))).toMatchObject({
      message: `${CALL_WITHOUT_RESULT}a, c`,
      param: 'messages.[1].role',
    });
    // The result exists but comes after another message: it does not count.
    expect(ask(user(), assistantCalls('a'), { role: 'assistant', content: 'hm' }, result('a'))?.message).toBe(`${CALL_WITHOUT_RESULT}a`);
  });

  it('refuses duplicate tool_call ids and a call answered twice', () => {
    expect(ask(user(), assistantCalls('a'), result('a'), user('again'), assistantCalls('a'), result('a'))).toMatchObject({
      message: "Invalid parameter: Duplicate value for 'tool_calls[].id' of 'a', in messages[1] and messages[4].",
      param: 'messages.[4].tool_calls',
    });
    expect(ask(user(), assistantCalls('a', 'a'), result('a'))?.message).toContain("Duplicate value for 'tool_calls[].id' of 'a'");
    expect(ask(user(), assistantCalls('a', 'b'), result('a'), result('a'), result('b'))).toEqual({
      message: "Invalid parameter: Duplicate value for 'tool_call_id' of 'a', in messages[2] and messages[3].",
      type: 'invalid_request_error',
      param: 'messages.[3].tool_call_id',
      code: null,
    });
    expect(ask(user(), assistantCalls('a', 'b'), result('a'), result('b'))).toBeNull();
  });

  it('refuses null content except on an assistant message with tool_calls', () => {
    const nullContent = { message: "Invalid value for 'content': expected a string, got null.", type: 'invalid_request_error', code: null };
    expect(ask({ role: 'user', content: null })).toEqual({ ...nullContent, param: 'messages.[0].content' });
    expect(ask(user(), { role: 'assistant', content: null })).toEqual({ ...nullContent, param: 'messages.[1].content' });
    expect(ask(user(), assistantCalls('a'), { role: 'tool', tool_call_id: 'a', content: null })).toEqual({ ...nullContent, param: 'messages.[2].content' });
    expect(ask(user(), assistantCalls('a'), result('a'))).toBeNull();
  });

  it('refuses unknown roles, names OpenAI does not allow, tool messages without an id, and an empty or missing messages array', () => {
    expect(ask(user(), { role: 'robot', content: 'beep' })).toEqual({
      message: "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
      type: 'invalid_request_error',
      param: 'messages[1].role',
      code: 'invalid_value',
    });
    expect(ask(user(), assistantCalls('a'), { role: 'tool', content: 'x' })?.param).toBe('messages.[2].tool_call_id');
    expect(validateChatRequest({ model: 'agent-model', messages: [] })).toEqual({
      message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'empty_array',
    });
    expect(ask({ role: 'user', name: 'bad name', content: 'x' })).toEqual({
      message: "Invalid 'messages[0].name': string does not match pattern. Expected a string that matches the pattern '^[^\\s<|\\\\/>]+$'.",
      type: 'invalid_request_error',
      param: 'messages[0].name',
      code: 'invalid_value',
    });
    expect(ask({ role: 'user', name: 'context_summary', content: 'x' })).toBeNull();
    expect(validateChatRequest({ model: 'agent-model' })?.code).toBe('missing_required_parameter');
    expect(validateChatRequest({ messages: [user()] })?.message).toBe('you must provide a model parameter');
  });
});

describe('the strict provider over HTTP, through the real openai client', () => {
  let provider: StrictProvider;
  let openai: OpenAI;
  beforeAll(async () => {
    provider = await startStrictProvider({ seed: 7, summariserModel: 'summary-model' });
    openai = new OpenAI({ apiKey: 'test-key', baseURL: provider.baseURL, maxRetries: 0 });
  });
  afterAll(() => provider.close());

  it('answers a rejected transcript with HTTP 400 and records the rejection', async () => {
    const error = await openai.chat.completions
      .create({
        model: 'agent-model',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'tool', tool_call_id: 'x', content: 'orphan' },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400);
    expect((error as Error).message).toContain(TOOL_WITHOUT_CALL);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages.[1].role');
    expect(provider.rejections.at(-1)?.error?.message).toBe(TOOL_WITHOUT_CALL);
    expect(provider.rejections.at(-1)?.caller).toBe('agent');
  });

  it('answers the agent from its seeded script, streamed and not, and the summariser with a summary', async () => {
    const first = await openai.chat.completions.create({ model: 'agent-model', messages: [{ role: 'user', content: 'start' }] });
    // After a user request the script always calls tools.
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    const calls = first.choices[0].message.tool_calls ?? [];
    expect(calls.length).toBeGreaterThan(0);
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'start' },
      first.choices[0].message as OpenAI.ChatCompletionMessageParam,
      ...calls.map((c) => ({ role: 'tool' as const, tool_call_id: c.id, content: 'ok' })),
    ];
    const streamed = await openai.chat.completions.stream({ model: 'agent-model', messages }).finalChatCompletion();
    expect(streamed.choices[0].message).toEqual(expect.objectContaining({ role: 'assistant' }));
    const reply = provider.agentReplies.at(-1)!;
    if (reply.kind === 'tool_calls') {
      expect(streamed.choices[0].message.tool_calls?.map((c) => (c as { id: string; function: unknown }).function)).toEqual(
        reply.toolCalls.map((c) => c.function),
      );
    } else {
      expect(streamed.choices[0].message.content).toBe(reply.content);
    }
    const summary = await openai.chat.completions.create({
      model: 'summary-model',
      messages: [
        { role: 'system', content: 'You compact the transcript of a long-running AI agent session.' },
        { role: 'user', content: 'Messages to summarise: ...' },
      ],
    });
    expect(summary.choices[0].message.content).toMatch(/^Goal: /);
    expect(provider.requests.at(-1)?.caller).toBe('summariser');
  });

  it('gives the same script for the same seed', async () => {
    const again = await startStrictProvider({ seed: 7 });
    const other = await startStrictProvider({ seed: 8 });
    try {
      const ask = async (p: StrictProvider) => {
        const c = new OpenAI({ apiKey: 'k', baseURL: p.baseURL, maxRetries: 0 });
        for (let i = 0; i < 5; i++) await c.chat.completions.create({ model: 'agent-model', messages: [{ role: 'user', content: `go ${i}` }] });
        return p.agentReplies;
      };
      const [a, b] = [await ask(again), await ask(other)];
      const c = await startStrictProvider({ seed: 7 });
      try {
        expect(await ask(c)).toEqual(a);
      } finally {
        await c.close();
      }
      expect(b).not.toEqual(a);
    } finally {
      await again.close();
      await other.close();
    }
  });
});
