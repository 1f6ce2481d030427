/**
 * The strict fake providers of the other dialects (OpenAI Responses, Anthropic Messages,
 * Gemini) are only worth something if they refuse what the real providers refuse: each rule
 * of provider-rules.md they check is shown with an accepted request and a refused one, sent
 * through the provider's real SDK, with the provider's status and message. A short loop of
 * the scripted agent, fed its own answers and tool results, is then accepted every turn.
 *
 * No Temporal, no Postgres: only local HTTP servers.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, ContentBlockParam, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { ApiError, type Content, GoogleGenAI, type Part } from '@google/genai';
import OpenAI from 'openai';
import type { ResponseFunctionToolCall, ResponseInputItem, ResponseOutputItem, ResponseReasoningItem } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  emptyContent,
  FIRST_MESSAGE_USER,
  invalidSignature,
  startStrictAnthropic,
  type StrictAnthropicProvider,
  thinkingDisabledFinal,
  thinkingFirst,
  thinkingLast,
  thinkingModified,
  thinkingNotFirst,
  toolUseWithoutResult,
  unexpectedToolUseId,
  validateAnthropicRequest,
} from '../support/strict-anthropic';
import {
  CALL_AFTER_USER,
  CORRUPTED_SIGNATURE,
  missingSignature,
  RESPONSE_AFTER_CALL,
  RESPONSE_COUNT,
  startStrictGemini,
  type StrictGeminiProvider,
  validateGeminiRequest,
} from '../support/strict-gemini';
import { notPersisted, startStrictResponses, type StrictResponsesProvider, validateResponsesRequest } from '../support/strict-responses';

/** The error a call fails with; fails the test when the call succeeds. */
async function failure(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('the provider accepted a request it should refuse');
}

/** JSON text tool outputs as real tools return them, and a longer log. */
const TOOL_OUTPUTS = ['42', '{"status": "ok"}', '[1, 2, 3]', 'PASS src/parser.test.ts\n  12 tests passed'];

describe('the strict Responses provider, through the real openai client', () => {
  let provider: StrictResponsesProvider;
  let client: OpenAI;
  beforeAll(async () => {
    provider = await startStrictResponses({ seed: 11 });
    client = new OpenAI({ apiKey: 'test', baseURL: provider.url, maxRetries: 0 });
  });
  afterAll(() => provider.close());

  const user = (text = 'fix the parser'): ResponseInputItem => ({ role: 'user', content: text });
  const call = (callId: string, name = 'read_file'): ResponseInputItem => ({
    type: 'function_call',
    call_id: callId,
    name,
    arguments: '{"target":"src/a.ts"}',
  });
  const output = (callId: string, text = '42'): ResponseInputItem => ({ type: 'function_call_output', call_id: callId, output: text });
  const ask = (input: ResponseInputItem[], extra: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming> = {}) =>
    client.responses.create({ model: 'agent-model', input, store: false, include: ['reasoning.encrypted_content'], ...extra });
  /** Output items fed back as input, as agents do (`input.push(...response.output)`). */
  const fed = (items: readonly ResponseOutputItem[]) => items as unknown as ResponseInputItem[];
  const outputsFor = (items: readonly object[]): ResponseInputItem[] =>
    items
      .filter((i): i is ResponseFunctionToolCall => (i as { type?: unknown }).type === 'function_call')
      .map((c, k) => output(c.call_id, TOOL_OUTPUTS[k % TOOL_OUTPUTS.length]));

  async function refused(input: ResponseInputItem[], status: number, message: string, rule: string, extra = {}) {
    const before = provider.rejections.length;
    const error = await failure(ask(input, extra));
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
    expect((error as Error).message).toContain(message);
    expect(provider.rejections).toHaveLength(before + 1);
    expect(provider.rejections.at(-1)).toMatchObject({ rule, status, error: { error: { message, type: 'invalid_request_error' } } });
    return error as InstanceType<typeof OpenAI.APIError>;
  }

  /** A first agent turn: a reasoning item and its function calls. */
  async function firstTurn(text = 'start the work') {
    const response = await ask([user(text)]);
    const [reasoning, ...calls] = response.output;
    expect(reasoning.type).toBe('reasoning');
    expect(calls.length).toBeGreaterThan(0);
    return { input: [user(text)], reasoning: reasoning as ResponseReasoningItem, calls: calls as ResponseFunctionToolCall[], output: fed(response.output) };
  }

  /** Turns of the agent until it answers with a message: returns the whole input and that answer. */
  async function untilAnswer() {
    const { input, output: first } = await firstTurn('finish the task');
    let items: ResponseInputItem[] = [...input, ...first, ...outputsFor(first)];
    for (let turn = 0; turn < 40; turn++) {
      const response = await ask(items);
      if (response.output.some((i) => i.type === 'message')) return { input: items, answer: fed(response.output) };
      items = [...items, ...fed(response.output), ...outputsFor(response.output)];
    }
    throw new Error('the script never answered');
  }

  it('answers the agent with a reasoning item followed by function calls, and the summariser with a summary', async () => {
    const { reasoning, calls } = await firstTurn();
    expect(reasoning).toMatchObject({ id: expect.stringMatching(/^rs_/), summary: [], encrypted_content: expect.any(String) });
    for (const c of calls) expect(c).toMatchObject({ id: expect.stringMatching(/^fc_/), call_id: expect.stringMatching(/^call_/), type: 'function_call' });
    for (const c of calls) expect(() => JSON.parse(c.arguments) as unknown).not.toThrow();
    const { answer } = await untilAnswer();
    expect(answer.map((i) => i.type)).toEqual(['reasoning', 'message']);
    expect(answer[1]).toMatchObject({ id: expect.stringMatching(/^msg_/), role: 'assistant' });

    const summary = await client.responses.create({
      model: 'gpt-summary',
      instructions: 'You compact the transcript of a long-running AI agent session.',
      input: [user('Messages to summarise: ...')],
    });
    expect(summary.output_text).toMatch(/^Goal: /);
    expect(provider.requests.at(-1)?.caller).toBe('summariser');
  });

  it('RS-1: refuses a function_call_output with no earlier function_call', async () => {
    await expect(ask([user(), call('call_a'), output('call_a')])).resolves.toBeDefined();
    await refused([user(), output('call_zzz')], 400, 'No tool call found for function call output with call_id call_zzz.', 'RS-1');
    // The output before its call does not count either.
    await refused([user(), output('call_b'), call('call_b')], 400, 'No tool call found for function call output with call_id call_b.', 'RS-1');
  });

  it('RS-2: refuses a function_call whose output is missing when the model is asked again', async () => {
    await expect(ask([user(), call('call_a'), call('call_b'), output('call_b'), output('call_a')])).resolves.toBeDefined();
    await refused([user(), call('call_a')], 400, 'No tool output found for function call call_a.', 'RS-2');
    await refused([user(), call('call_a'), call('call_b'), output('call_a')], 400, 'No tool output found for function call call_b.', 'RS-2');
  });

  it('RS-3: refuses a reasoning item without the item it belongs to after it', async () => {
    const { input, reasoning, output: items } = await firstTurn();
    await expect(ask([...input, ...items, ...outputsFor(items)])).resolves.toBeDefined();
    const text = `Item '${reasoning.id}' of type 'reasoning' was provided without its required following item.`;
    await refused([...input, reasoning], 400, text, 'RS-3');
    await refused([...input, reasoning, user('next')], 400, text, 'RS-3');
  });

  it('RS-4: refuses a message or function_call that keeps its id without its reasoning item; accepts it with the id stripped', async () => {
    const { input, reasoning, calls, output: items } = await firstTurn();
    const results = outputsFor(items);
    await expect(ask([...input, ...items, ...results])).resolves.toBeDefined();
    await refused(
      [...input, ...calls, ...results],
      400,
      `Item '${calls[0].id}' of type 'function_call' was provided without its required 'reasoning' item: '${reasoning.id}'.`,
      'RS-4',
    );
    // The reasoning summarised away: with the provider ids stripped the calls stand alone.
    const stripped = calls.map(({ id: _id, ...rest }) => rest);
    await expect(ask([...input, ...stripped, ...results])).resolves.toBeDefined();

    const { input: before, answer } = await untilAnswer();
    const [answerReasoning, message] = answer as unknown as [ResponseReasoningItem, OpenAI.Responses.ResponseOutputMessage];
    await expect(ask([...before, ...answer, user('thanks')])).resolves.toBeDefined();
    await refused(
      [...before, message, user('thanks')],
      400,
      `Item '${message.id}' of type 'message' was provided without its required 'reasoning' item: '${answerReasoning.id}'.`,
      'RS-4',
    );
  });

  it('RS-5: with store:false refuses an item_reference (404); with store on, a reference resolves', async () => {
    const stored = await client.responses.create({ model: 'agent-model', input: [user('stored work')] });
    const ids = stored.output.map((i) => (i as { id: string }).id);
    const references: ResponseInputItem[] = ids.map((id) => ({ type: 'item_reference', id }));
    await expect(
      client.responses.create({ model: 'agent-model', input: [user('stored work'), ...references, ...outputsFor(stored.output)] }),
    ).resolves.toBeDefined();

    const error = await refused([user('stored work'), ...references, ...outputsFor(stored.output)], 404, notPersisted(ids[0]), 'RS-5');
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(notPersisted('rs_1')).toContain("Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.");
    // A reasoning item sent without its encrypted content must be looked up: the same refusal.
    const { input, reasoning, output: items } = await firstTurn();
    const { encrypted_content: _dropped, ...bare } = reasoning;
    await refused([...input, bare, ...items.slice(1), ...outputsFor(items)], 404, notPersisted(reasoning.id), 'RS-5');
  });

  it('RS-6: refuses an item id that appears twice', async () => {
    const { input, reasoning, output: items } = await firstTurn();
    const results = outputsFor(items);
    await refused(
      [...input, ...items, ...results, ...items, ...results],
      400,
      `Duplicate item found with id ${reasoning.id}. Remove duplicate items from your input and try again.`,
      'RS-6',
    );
  });

  it('RS-7: refuses encrypted content that is not byte-identical, or sent to another model', async () => {
    const { input, reasoning, output: items } = await firstTurn();
    const results = outputsFor(items);
    const text = `The encrypted content for item ${reasoning.id} could not be verified.`;
    const changed = { ...reasoning, encrypted_content: `${reasoning.encrypted_content!.slice(0, -2)}AA` };
    const error = await refused([...input, changed, ...items.slice(1), ...results], 400, text, 'RS-7');
    expect(error.code).toBe('invalid_encrypted_content');
    await refused([...input, ...items, ...results], 400, text, 'RS-7', { model: 'other-model' });
    await expect(ask([...input, ...items, ...results])).resolves.toBeDefined();
  });

  it('RS-8: refuses a reasoning item without its summary (even an empty one is required)', async () => {
    const { input, reasoning, output: items } = await firstTurn();
    const { summary: _summary, ...withoutSummary } = reasoning;
    const error = await refused(
      [...input, withoutSummary as ResponseReasoningItem, ...items.slice(1), ...outputsFor(items)],
      400,
      "Missing required parameter: 'input[1].summary'.",
      'RS-8',
    );
    expect(error.param).toBe('input[1].summary');
    expect(reasoning.summary).toEqual([]);
  });

  it('follows previous_response_id with the stored context, and refuses an unknown one', async () => {
    const first = await client.responses.create({ model: 'agent-model', input: [user('chained')] });
    await expect(client.responses.create({ model: 'agent-model', previous_response_id: first.id, input: outputsFor(first.output) })).resolves.toBeDefined();
    // The calls of the previous response still need their outputs.
    const error = await failure(client.responses.create({ model: 'agent-model', previous_response_id: first.id, input: [user('ignore that')] }));
    expect((error as Error).message).toContain('No tool output found for function call call_');
    const unknown = await failure(client.responses.create({ model: 'agent-model', previous_response_id: 'resp_nope', input: [user()] }));
    expect((unknown as Error).message).toContain("Previous response with id 'resp_nope' not found.");
  });

  it('streams the same output it would send whole', async () => {
    const { input, output: items } = await firstTurn();
    const final = await client.responses.stream({ model: 'agent-model', input: [...input, ...items, ...outputsFor(items)], store: false }).finalResponse();
    // The SDK adds its parse results (`parsed`, `parsed_arguments`) to what the server sent.
    expect(final.output).toMatchObject(provider.agentReplies.at(-1)!.output);
    expect(provider.requests.at(-1)?.stream).toBe(true);
  });

  it('validates without a server too (the pure function)', () => {
    expect(validateResponsesRequest({ model: 'm', input: 'hello' })).toBeNull();
    expect(validateResponsesRequest({ model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] })).toMatchObject({
      status: 400,
      rule: 'RS-1',
    });
    expect(validateResponsesRequest({ input: 'x' })?.body.error.code).toBe('missing_required_parameter');
  });

  it('accepts every turn of a multi-turn loop of the scripted agent fed its own output and tool results', async () => {
    const loop = await startStrictResponses({ seed: 3, largeArgumentsChance: 0.5 });
    try {
      const c = new OpenAI({ apiKey: 'test', baseURL: loop.url, maxRetries: 0 });
      let items: ResponseInputItem[] = [user('REQUEST-1: make the build green')];
      let requests = 1;
      for (let turn = 0; turn < 12; turn++) {
        const response = await c.responses.create({ model: 'agent-model', input: items, store: false, include: ['reasoning.encrypted_content'] });
        items = [...items, ...fed(response.output)];
        const results = outputsFor(response.output);
        items.push(...(results.length > 0 ? results : [user(`REQUEST-${++requests}: next task`)]));
      }
      expect(loop.rejections).toEqual([]);
      expect(loop.requests.filter((r) => r.caller === 'agent' && r.status === 200)).toHaveLength(12);
      expect(loop.agentReplies.some((r) => r.kind === 'calls' && r.output.length > 2)).toBe(true);
    } finally {
      await loop.close();
    }
  });
});

describe('the strict Anthropic provider, through the real @anthropic-ai/sdk client', () => {
  let provider: StrictAnthropicProvider;
  let client: Anthropic;
  beforeAll(async () => {
    provider = await startStrictAnthropic({ seed: 21 });
    client = new Anthropic({ apiKey: 'test', baseURL: provider.url, maxRetries: 0 });
  });
  afterAll(() => provider.close());

  const THINKING = { type: 'enabled', budget_tokens: 1024 } as const;
  const user = (content: string | ContentBlockParam[] = 'fix the parser'): MessageParam => ({ role: 'user', content });
  const assistant = (content: string | ContentBlockParam[]): MessageParam => ({ role: 'assistant', content });
  const use = (id: string, name = 'read_file'): ContentBlockParam => ({ type: 'tool_use', id, name, input: { target: 'src/a.ts' } });
  const result = (id: string, content = '42'): ContentBlockParam => ({ type: 'tool_result', tool_use_id: id, content });
  const ask = (messages: MessageParam[], thinking = false) =>
    client.messages.create({ model: 'agent-model', max_tokens: 2048, messages, ...(thinking ? { thinking: THINKING } : {}) });
  /** Results for the tool_use blocks of a reply: JSON text and logs as strings, or (`asBlocks`) as text blocks. */
  const resultsFor = (content: ContentBlock[], asBlocks = false): ContentBlockParam[] =>
    content
      .filter((b) => b.type === 'tool_use')
      .map((b, k) =>
        asBlocks
          ? { type: 'tool_result', tool_use_id: b.id, content: [{ type: 'text', text: TOOL_OUTPUTS[k % TOOL_OUTPUTS.length] }] }
          : result(b.id, TOOL_OUTPUTS[k % TOOL_OUTPUTS.length]),
      );

  async function refused(messages: MessageParam[], message: string, rule: string, thinking = false) {
    const before = provider.rejections.length;
    const error = await failure(ask(messages, thinking));
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const e = error as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    expect(e.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message } });
    expect(e.message).toContain(JSON.stringify(message).slice(1, -1));
    expect(provider.rejections).toHaveLength(before + 1);
    expect(provider.rejections.at(-1)).toMatchObject({ rule, status: 400 });
  }

  /** A first agent turn with thinking on: [thinking, tool_use...]. */
  async function thinkingTurn(text = 'start the work') {
    const reply = await ask([user(text)], true);
    expect(reply.content[0].type).toBe('thinking');
    expect(reply.stop_reason).toBe('tool_use');
    return { messages: [user(text)], content: reply.content };
  }

  it('answers the agent with thinking and tool_use blocks, and the summariser with a summary', async () => {
    const { content } = await thinkingTurn();
    expect(content[0]).toMatchObject({ type: 'thinking', thinking: expect.any(String), signature: expect.any(String) });
    for (const block of content.slice(1)) expect(block).toMatchObject({ type: 'tool_use', id: expect.stringMatching(/^toolu_/) });
    const plain = await ask([user('no thinking')]);
    expect(plain.content.every((b) => b.type !== 'thinking')).toBe(true);
    const summary = await client.messages.create({
      model: 'claude-summary',
      max_tokens: 1024,
      system: 'You compact the transcript of a long-running AI agent session.',
      messages: [user('Messages to summarise: ...')],
    });
    expect(summary.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^Goal: /) });
    expect(provider.requests.at(-1)?.caller).toBe('summariser');
  });

  it('AN-1: refuses a tool_result that answers no tool_use of the previous assistant turn', async () => {
    await expect(ask([user(), assistant([use('toolu_a')]), user([result('toolu_a')])])).resolves.toBeDefined();
    await refused([user(), assistant('sure'), user([result('toolu_x')])], unexpectedToolUseId(2, 0, 'toolu_x'), 'AN-1');
    await refused([user(), assistant([use('toolu_a')]), user([result('toolu_a'), result('toolu_b')])], unexpectedToolUseId(2, 1, 'toolu_b'), 'AN-1');
    expect(unexpectedToolUseId(2, 0, 'toolu_x')).toBe(
      'messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    );
  });

  it('AN-2: refuses a tool_use not answered in the next user turn', async () => {
    await expect(ask([user(), assistant([use('toolu_a'), use('toolu_b')]), user([result('toolu_b'), result('toolu_a')])])).resolves.toBeDefined();
    await refused([user(), assistant([use('toolu_a'), use('toolu_b')]), user([result('toolu_a')])], toolUseWithoutResult(1, ['toolu_b']), 'AN-2');
    await refused([user(), assistant([use('toolu_a')]), user('what now?')], toolUseWithoutResult(1, ['toolu_a']), 'AN-2');
    await refused([user(), assistant([use('toolu_a')])], toolUseWithoutResult(1, ['toolu_a']), 'AN-2');
    expect(toolUseWithoutResult(1, ['toolu_a'])).toBe(
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    );
  });

  it('AN-3: refuses text before the tool_result blocks of the answering turn (the error reads as AN-2)', async () => {
    await expect(ask([user(), assistant([use('toolu_a')]), user([result('toolu_a'), { type: 'text', text: 'note after' }])])).resolves.toBeDefined();
    await refused(
      [user(), assistant([use('toolu_a')]), user([{ type: 'text', text: '[compaction note]' }, result('toolu_a')])],
      toolUseWithoutResult(1, ['toolu_a']),
      'AN-3',
    );
    // A note stored as its own entry before the results merges into the same turn: refused too.
    await refused([user(), assistant([use('toolu_a')]), user('[compaction note]'), user([result('toolu_a')])], toolUseWithoutResult(1, ['toolu_a']), 'AN-3');
  });

  it('AN-4: refuses empty content except on the final assistant message', async () => {
    await expect(ask([user('continue this'), assistant('')])).resolves.toBeDefined();
    await refused([user(''), assistant('hi'), user('go')], emptyContent(0), 'AN-4');
    await refused([user(), assistant([]), user('go')], emptyContent(1), 'AN-4');
    await refused([user([{ type: 'text', text: '' }])], 'messages: text content blocks must be non-empty', 'AN-4');
  });

  it('AN-5: merges consecutive same-role messages like the first-party API, and wants a user first', async () => {
    // Parallel results stored one per entry, and two user entries in a row: one turn each.
    await expect(
      ask([
        user('first part'),
        user('second part'),
        assistant([use('toolu_p1'), use('toolu_p2')]),
        user([result('toolu_p1')]),
        user([result('toolu_p2', '{"status": "ok"}')]),
      ]),
    ).resolves.toBeDefined();
    await refused([assistant('I will start.'), user()], FIRST_MESSAGE_USER, 'AN-5');
    expect(FIRST_MESSAGE_USER).toBe('messages: first message must use the "user" role');
  });

  it('AN-6: with thinking on and a tool loop open, the assistant turn of the loop starts with a thinking block', async () => {
    const { messages, content } = await thinkingTurn();
    const results = resultsFor(content);
    await expect(ask([...messages, assistant(content), user(results)], true)).resolves.toBeDefined();
    const withoutThinking = content.filter((b) => b.type !== 'thinking');
    await refused([...messages, assistant(withoutThinking), user(results)], thinkingFirst(1, 'tool_use'), 'AN-6', true);
    // Thinking off: the same transcript is fine.
    await expect(ask([...messages, assistant(withoutThinking), user(results)])).resolves.toBeDefined();
    // A summary (a user message) put inside the loop makes a later call the loop's first turn.
    await refused(
      [user('[summary of the earlier work]'), assistant([use('toolu_late')]), user([result('toolu_late')])],
      thinkingFirst(1, 'tool_use'),
      'AN-6',
      true,
    );
  });

  it('AN-7: thinking blocks come back byte-identical, signature included, first in their turn', async () => {
    const { messages, content } = await thinkingTurn();
    const [thinking, ...rest] = content as [Anthropic.ThinkingBlock, ...ContentBlock[]];
    const results = resultsFor(content);
    await refused(
      [...messages, assistant([{ ...thinking, thinking: `${thinking.thinking} (edited)` }, ...rest]), user(results)],
      invalidSignature(1, 0),
      'AN-7',
      true,
    );
    await refused(
      [...messages, assistant([{ ...thinking, signature: `${thinking.signature.slice(0, -4)}AAAA` }, ...rest]), user(results)],
      invalidSignature(1, 0),
      'AN-7',
      true,
    );
    await refused([...messages, assistant([...rest, thinking]), user(results)], thinkingNotFirst(1, 'tool_use'), 'AN-7', true);
    await refused([...messages, assistant([thinking]), user('go on')], thinkingLast(1), 'AN-7');
    await refused([...messages, assistant([thinking])], thinkingDisabledFinal(1, 0), 'AN-7');

    // Two responses merged into one assistant turn: the second thinking block is out of place.
    const second = await ask([...messages, assistant(content), user(results), user('and also the docs')], true);
    expect(second.content[0].type).toBe('thinking');
    await expect(
      ask([...messages, assistant(content), user(results), user('and also the docs'), assistant(second.content), user(resultsFor(second.content))], true),
    ).resolves.toBeDefined();
    await refused(
      [...messages, assistant(content), assistant(second.content), user([...results, ...resultsFor(second.content)])],
      thinkingModified(2, 0),
      'AN-7',
      true,
    );
  });

  it('streams the same message it would send whole', async () => {
    const { messages, content } = await thinkingTurn();
    const final = await client.messages
      .stream({ model: 'agent-model', max_tokens: 2048, thinking: THINKING, messages: [...messages, assistant(content), user(resultsFor(content))] })
      .finalMessage();
    expect(final.content).toEqual(provider.agentReplies.at(-1)!.content);
    expect(provider.requests.at(-1)?.stream).toBe(true);
  });

  it('validates without a server too (the pure function)', () => {
    expect(validateAnthropicRequest({ model: 'm', max_tokens: 10, messages: [user()] })).toBeNull();
    expect(validateAnthropicRequest({ model: 'm', max_tokens: 10, messages: [] })).toMatchObject({ status: 400, rule: 'shape' });
    // A signature the server never issued is a forgery.
    const forged = { type: 'thinking', thinking: 'x', signature: 'Eqforged' };
    expect(
      validateAnthropicRequest({ model: 'm', max_tokens: 10, messages: [user(), { role: 'assistant', content: [forged, use('t')] }, user([result('t')])] })
        ?.rule,
    ).toBe('AN-7');
  });

  it('accepts every turn of a multi-turn loop of the scripted agent with thinking on', async () => {
    const loop = await startStrictAnthropic({ seed: 5, largeArgumentsChance: 0.5 });
    try {
      const c = new Anthropic({ apiKey: 'test', baseURL: loop.url, maxRetries: 0 });
      const messages: MessageParam[] = [user('REQUEST-1: make the build green')];
      let requests = 1;
      for (let turn = 0; turn < 12; turn++) {
        const reply = await c.messages.create({ model: 'agent-model', max_tokens: 2048, thinking: THINKING, messages });
        messages.push(assistant(reply.content));
        // Tool results as strings or as text blocks, JSON text among them.
        const results = resultsFor(reply.content, turn % 3 === 1);
        if (results.length > 0) messages.push(user(results));
        else messages.push(user(`REQUEST-${++requests}: next task`));
      }
      expect(loop.rejections).toEqual([]);
      expect(loop.requests.filter((r) => r.caller === 'agent' && r.status === 200)).toHaveLength(12);
      expect(loop.agentReplies.some((r) => r.content.filter((b) => b.type === 'tool_use').length > 1)).toBe(true);
      expect(loop.agentReplies.some((r) => r.content[0].type !== 'thinking')).toBe(true);
    } finally {
      await loop.close();
    }
  });
});

describe('the strict Gemini provider, through the real @google/genai client', () => {
  let provider: StrictGeminiProvider;
  let ai: GoogleGenAI;
  beforeAll(async () => {
    provider = await startStrictGemini({ seed: 31 });
    ai = new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: provider.url } });
  });
  afterAll(() => provider.close());

  const user = (text = 'fix the parser'): Content => ({ role: 'user', parts: [{ text }] });
  const model = (parts: Part[]): Content => ({ role: 'model', parts });
  const fc = (name: string, args: Record<string, unknown> = { target: 'src/a.ts' }): Part => ({ functionCall: { name, args } });
  const responses = (parts: Part[], outputs = TOOL_OUTPUTS): Content => ({
    role: 'user',
    parts: parts
      .filter((p) => p.functionCall)
      .map((p, k) => ({ functionResponse: { name: p.functionCall!.name, response: { output: outputs[k % outputs.length] } } })),
  });
  const ask = (contents: Content[], m = 'agent-model') => ai.models.generateContent({ model: m, contents });

  async function refused(contents: Content[], message: string, rule: string) {
    const before = provider.rejections.length;
    const error = await failure(ask(contents));
    expect(error).toBeInstanceOf(ApiError);
    const e = error as ApiError;
    expect(e.status).toBe(400);
    expect(JSON.parse(e.message)).toEqual({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } });
    expect(provider.rejections).toHaveLength(before + 1);
    expect(provider.rejections.at(-1)).toMatchObject({ rule, status: 400 });
  }

  /** An agent turn that calls tools (the script always does after a user text). */
  async function callTurn(text = 'start the work') {
    const response = await ask([user(text)]);
    const parts = response.candidates![0].content!.parts!;
    expect(parts[0].functionCall).toBeDefined();
    return { contents: [user(text)], parts };
  }

  /** An agent turn with parallel calls. */
  async function parallelTurn() {
    for (let k = 0; k < 30; k++) {
      const turn = await callTurn(`parallel ${k}`);
      if (turn.parts.length > 1) return turn;
    }
    throw new Error('the script never called tools in parallel');
  }

  it('answers the agent with functionCall parts (a thoughtSignature on the first) and the summariser with a summary', async () => {
    const { parts } = await parallelTurn();
    expect(parts[0].thoughtSignature).toEqual(expect.any(String));
    expect(parts.slice(1).every((p) => p.thoughtSignature === undefined && p.functionCall)).toBe(true);
    const summary = await ai.models.generateContent({
      model: 'gemini-summary',
      contents: [user('Messages to summarise: ...')],
      config: { systemInstruction: 'You compact the transcript of a long-running AI agent session.' },
    });
    expect(summary.text).toMatch(/^Goal: /);
    expect(provider.requests.at(-1)?.caller).toBe('summariser');
  });

  it('GM-1: refuses a function call turn that follows neither a user turn nor a function response turn', async () => {
    const { contents, parts } = await callTurn();
    await expect(ask([...contents, model(parts), responses(parts)])).resolves.toBeDefined();
    await refused([model([fc('read_file')]), responses([fc('read_file')])], CALL_AFTER_USER, 'GM-1');
    await refused([user(), model([{ text: 'Let me look.' }]), model([fc('read_file')]), responses([fc('read_file')])], CALL_AFTER_USER, 'GM-1');
    // After a function response turn: fine.
    await expect(ask([user(), model([fc('read_file')]), responses([fc('read_file')]), model([fc('grep')]), responses([fc('grep')])])).resolves.toBeDefined();
  });

  it('GM-2: refuses a function response turn that does not directly follow its call turn', async () => {
    await refused([user(), responses([fc('read_file')])], RESPONSE_AFTER_CALL, 'GM-2');
    await refused([user(), model([fc('read_file')]), user('wait'), responses([fc('read_file')])], RESPONSE_AFTER_CALL, 'GM-2');
    // Parallel responses split over two turns: the first one answers too few calls.
    await refused([user(), model([fc('read_file'), fc('grep')]), responses([fc('read_file')]), responses([fc('grep')])], RESPONSE_COUNT, 'GM-3');
  });

  it('GM-3: refuses a response turn with a different number of parts than its call turn', async () => {
    const { contents, parts } = await parallelTurn();
    await expect(ask([...contents, model(parts), responses(parts)])).resolves.toBeDefined();
    await refused([...contents, model(parts), responses(parts.slice(1))], RESPONSE_COUNT, 'GM-3');
  });

  it('GM-4: a generated functionCall part keeps its thoughtSignature exactly', async () => {
    const { contents, parts } = await parallelTurn();
    const name = parts[0].functionCall!.name!;
    const { thoughtSignature, ...unsigned } = parts[0];
    await refused([...contents, model([unsigned, ...parts.slice(1)]), responses(parts)], missingSignature(name, 2), 'GM-4');
    await refused(
      [...contents, model([{ ...parts[0], thoughtSignature: `${thoughtSignature!.slice(0, -4)}AAAA` }, ...parts.slice(1)]), responses(parts)],
      CORRUPTED_SIGNATURE,
      'GM-4',
    );
    // The documented bypass value is taken; the unsigned later parallel parts need none.
    await expect(
      ask([...contents, model([{ ...unsigned, thoughtSignature: 'skip_thought_signature_validator' }, ...parts.slice(1)]), responses(parts)]),
    ).resolves.toBeDefined();
    expect(missingSignature('shell', 2)).toBe(
      'Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:shell` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.',
    );
  });

  it('GM-4 in every turn by default; only in the current turn with signatureScope "current-turn", as Gemini does', async () => {
    const { contents, parts } = await callTurn('old work');
    const { thoughtSignature: _s, ...unsigned } = parts[0];
    const old = [...contents, model([unsigned, ...parts.slice(1)]), responses(parts), model([{ text: 'done' }]), user('new request')];
    await refused(old, missingSignature(parts[0].functionCall!.name!, 2), 'GM-4');
    const lenient = await startStrictGemini({ seed: 31, signatureScope: 'current-turn' });
    try {
      const c = new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: lenient.url } });
      const first = await c.models.generateContent({ model: 'agent-model', contents: [user('old work')] });
      const p = first.candidates![0].content!.parts!;
      const { thoughtSignature: _t, ...bare } = p[0];
      await expect(
        c.models.generateContent({
          model: 'agent-model',
          contents: [user('old work'), model([bare, ...p.slice(1)]), responses(p), model([{ text: 'done' }]), user('new')],
        }),
      ).resolves.toBeDefined();
      const error = await failure(c.models.generateContent({ model: 'agent-model', contents: [user('old work'), model([bare, ...p.slice(1)]), responses(p)] }));
      expect((error as ApiError).message).toContain('Function call is missing a thought_signature');
      expect(lenient.rejections.map((r) => r.rule)).toEqual(['GM-4']);
    } finally {
      await lenient.close();
    }
  });

  it('streams the same parts it would send whole', async () => {
    const { contents, parts } = await callTurn();
    const chunks: Part[] = [];
    for await (const chunk of await ai.models.generateContentStream({ model: 'agent-model', contents: [...contents, model(parts), responses(parts)] })) {
      chunks.push(...(chunk.candidates?.[0].content?.parts ?? []));
    }
    const reply = provider.agentReplies.at(-1)!;
    if (reply.kind === 'calls') expect(chunks).toEqual(reply.parts);
    else expect(chunks.map((p) => p.text).join('')).toBe(reply.parts[0].text);
    expect(provider.requests.at(-1)?.stream).toBe(true);
  });

  it('validates without a server too (the pure function)', () => {
    expect(validateGeminiRequest({ contents: [user()] })).toBeNull();
    expect(validateGeminiRequest({ contents: [] })).toMatchObject({ status: 400, rule: 'shape' });
    expect(validateGeminiRequest({ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] })?.body.error.message).toBe(
      'Please use a valid role: user, model.',
    );
  });

  it('accepts every turn of a multi-turn loop of the scripted agent fed its own parts and function responses', async () => {
    const loop = await startStrictGemini({ seed: 9, largeArgumentsChance: 0.5 });
    try {
      const c = new GoogleGenAI({ apiKey: 'test', httpOptions: { baseUrl: loop.url } });
      const contents: Content[] = [user('REQUEST-1: make the build green')];
      let requests = 1;
      for (let turn = 0; turn < 12; turn++) {
        const response = await c.models.generateContent({ model: 'agent-model', contents });
        const parts = response.candidates![0].content!.parts!;
        contents.push(model(parts));
        contents.push(parts.some((p) => p.functionCall) ? responses(parts) : user(`REQUEST-${++requests}: next task`));
      }
      expect(loop.rejections).toEqual([]);
      expect(loop.requests.filter((r) => r.caller === 'agent' && r.status === 200)).toHaveLength(12);
      expect(loop.agentReplies.some((r) => r.parts.length > 1)).toBe(true);
    } finally {
      await loop.close();
    }
  });
});

describe('the scripts of the strict providers', () => {
  it('give the same replies for the same seed and others for another seed', async () => {
    const replies = async (seed: number) => {
      const servers = [await startStrictResponses({ seed }), await startStrictAnthropic({ seed }), await startStrictGemini({ seed })];
      try {
        const openai = new OpenAI({ apiKey: 'k', baseURL: servers[0].url, maxRetries: 0 });
        const anthropic = new Anthropic({ apiKey: 'k', baseURL: servers[1].url, maxRetries: 0 });
        const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: servers[2].url } });
        for (let i = 0; i < 4; i++) {
          await openai.responses.create({ model: 'agent-model', input: `go ${i}` });
          await anthropic.messages.create({
            model: 'agent-model',
            max_tokens: 2048,
            thinking: { type: 'enabled', budget_tokens: 1024 },
            messages: [{ role: 'user', content: `go ${i}` }],
          });
          await ai.models.generateContent({ model: 'agent-model', contents: `go ${i}` });
        }
        return servers.map((s) => s.agentReplies);
      } finally {
        for (const s of servers) await s.close();
      }
    };
    const a = await replies(4);
    expect(await replies(4)).toEqual(a);
    const b = await replies(5);
    for (let k = 0; k < 3; k++) expect(b[k]).not.toEqual(a[k]);
  });
});
