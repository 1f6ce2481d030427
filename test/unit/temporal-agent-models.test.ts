/**
 * The agent models of session-compaction/temporal (src/temporal/ai-sdk-model.ts,
 * agents-sdk-model.ts) as pure shapes: the tool calls and the final text read from a stored
 * batch (what a retried model activity answers from), the tool result and the user message
 * they make, each accepted by its dialect's message schema, and the arguments parsed.
 */
import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/compaction/dialects';
import { parseMessages } from '../../src/compaction/message-schema';
import { agentsSdkAgentModel } from '../../src/temporal/agents-sdk-model';
import { aiSdkAgentModel } from '../../src/temporal/ai-sdk-model';
import { parseArguments } from '../../src/temporal/model';

const call = { callId: 'call_1', name: 'read_file', input: { path: 'a.ts' } };

describe('aiSdkAgentModel', () => {
  const model = aiSdkAgentModel({ model: 'unused' as never });

  it('reads the tool calls of a batch, or its text when it holds none', () => {
    const calls = [
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'thinking' },
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: { path: 'a.ts' } },
          { type: 'tool-call', toolCallId: 'call_2', toolName: 'grep', input: '{"q":"x"}' },
          { type: 'tool-call', toolCallId: 'ws_1', toolName: 'web_search', input: {}, providerExecuted: true },
        ],
      },
    ];
    expect(model.readStep(calls as never)).toEqual({
      toolCalls: [
        { callId: 'call_1', name: 'read_file', input: { path: 'a.ts' } },
        { callId: 'call_2', name: 'grep', input: { q: 'x' } },
      ],
    });
    expect(
      model.readStep([
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Done' },
            { type: 'text', text: '.' },
          ],
        },
      ] as never),
    ).toEqual({
      toolCalls: [],
      output: 'Done.',
    });
    expect(model.readStep([{ role: 'assistant', content: 'Plain.' }] as never)).toEqual({ toolCalls: [], output: 'Plain.' });
  });

  it('leaves out the calls the SDK answered in the same step, and asks for the model again when it answered all of them', () => {
    // What generateText (ai 7) returns when the model calls a tool it was not given: the call,
    // then its own error result in a tool message of the same batch.
    const sdkAnswered = {
      type: 'tool-result',
      toolCallId: 'call_9',
      toolName: 'run_tests',
      output: { type: 'error-text', value: 'Model tried to call unavailable tool' },
    };
    const mixed = [
      {
        role: 'assistant',
        content: [
          { type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: { path: 'a.ts' } },
          { type: 'tool-call', toolCallId: 'call_9', toolName: 'run_tests', input: {} },
        ],
      },
      { role: 'tool', content: [sdkAnswered] },
    ];
    expect(model.readStep(mixed as never)).toEqual({ toolCalls: [{ callId: 'call_1', name: 'read_file', input: { path: 'a.ts' } }] });
    const onlyAnswered = [
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Running the tests.' },
          { type: 'tool-call', toolCallId: 'call_9', toolName: 'run_tests', input: {} },
        ],
      },
      { role: 'tool', content: [sdkAnswered] },
    ];
    // Not a final answer: the model has not read the SDK's result yet.
    expect(model.readStep(onlyAnswered as never)).toEqual({ toolCalls: [], again: true });
  });

  it('makes tool results (text or JSON) and user messages the ai-sdk dialect accepts', () => {
    const dialect = dialectOf('ai-sdk');
    const text = model.toolResult(call, 'file text');
    const json = model.toolResult(call, { lines: 3 });
    expect((text[0] as any).content[0].output).toEqual({ type: 'text', value: 'file text' });
    expect((json[0] as any).content[0].output).toEqual({ type: 'json', value: { lines: 3 } });
    const batch = [
      model.userMessage('hi'),
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: {} }] },
      ...text,
    ];
    expect(parseMessages(batch, undefined, dialect)).toHaveLength(3);
  });
});

describe('agentsSdkAgentModel', () => {
  const model = agentsSdkAgentModel({ model: {} as never });

  it('reads the function calls of a batch, or its output text when it holds none', () => {
    const items = [
      { type: 'reasoning', id: 'rs_1', content: [] },
      { type: 'function_call', callId: 'call_1', name: 'read_file', arguments: '{"path":"a.ts"}' },
      { type: 'function_call', callId: 'call_2', name: 'grep', arguments: 'not json' },
    ];
    expect(model.readStep(items as never)).toEqual({
      toolCalls: [
        { callId: 'call_1', name: 'read_file', input: { path: 'a.ts' } },
        { callId: 'call_2', name: 'grep', input: 'not json' },
      ],
    });
    const answer = [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done.' }] }];
    expect(model.readStep(answer as never)).toEqual({ toolCalls: [], output: 'Done.' });
  });

  it('makes function call results and user messages the openai-agents dialect accepts', () => {
    const dialect = dialectOf('openai-agents');
    const result = model.toolResult(call, { lines: 3 });
    expect(result).toEqual([
      { type: 'function_call_result', name: 'read_file', callId: 'call_1', status: 'completed', output: { type: 'text', text: '{"lines":3}' } },
    ]);
    const batch = [model.userMessage('hi'), { type: 'function_call', callId: 'call_1', name: 'read_file', arguments: '{}' }, ...result];
    expect(parseMessages(batch, undefined, dialect)).toHaveLength(3);
  });
});

it('parseArguments: JSON text parsed, other text and values as they are', () => {
  expect(parseArguments('{"a":1}')).toEqual({ a: 1 });
  expect(parseArguments('{broken')).toBe('{broken');
  expect(parseArguments({ a: 1 })).toEqual({ a: 1 });
});
