/**
 * The OpenAI Agents SDK's `Model` as an agent model (model.ts) for lineages of the
 * `openai-agents` dialect: `model.getResponse` inside the model activity, on the lineage's
 * head, with the tools' schemas (the workflow runs the tools, each an activity). The model is
 * any of the SDK's (`OpenAIResponsesModel`, `OpenAIChatCompletionsModel`, an `aisdk(...)`
 * model, or the default provider's `getModel()`), built in the worker.
 *
 *   agentsSdkAgentModel({ model: new OpenAIResponsesModel(openai, 'gpt-5'), instructions, tools: [readFile] })
 *
 * `@openai/agents-core` is loaded on the first call (for a trace around it when the call runs
 * outside the SDK's Runner: the SDK's models open a span, which needs one).
 */
import type { AgentInputItem, FunctionTool, Model, ModelSettings, SerializedTool } from '@openai/agents-core';
import type { Message } from '../compaction/dialects';
import { isJsonObject } from '../compaction/json';
import type { AgentToolCall } from './contract';
import { type AgentModel, parseArguments } from './model';

export interface AgentsSdkAgentModelOptions {
  model: Model;
  /** The agent's instructions, sent with every call as the system instructions (not stored). */
  instructions?: string;
  /** The function tools the model may call (their schemas are sent; the workflow runs them). */
  tools?: readonly (FunctionTool<any, any, any> | SerializedFunctionTool)[];
  modelSettings?: ModelSettings;
}

/** A function tool as the model is sent it. */
type SerializedFunctionTool = Extract<SerializedTool, { type: 'function' }>;

const serialized = (t: FunctionTool<any, any, any> | SerializedFunctionTool): SerializedFunctionTool => ({
  type: 'function',
  name: t.name,
  description: t.description,
  parameters: t.parameters,
  strict: t.strict,
});

/** Items as JSON, as the `openai-agents` dialect stores them (fields set to undefined are not kept). */
const asJson = (items: readonly unknown[]): Message[] => JSON.parse(JSON.stringify(items)) as Message[];

export function agentsSdkAgentModel(options: AgentsSdkAgentModelOptions): AgentModel {
  const tools = (options.tools ?? []).map(serialized);
  return {
    dialect: 'openai-agents',
    async call({ messages, signal }) {
      // The SDK's models open a span, which needs a trace: the Runner's when there is one, else one per call.
      const { getCurrentTrace, withTrace } = await import('@openai/agents-core');
      const inTrace = <T>(fn: () => Promise<T>) => (getCurrentTrace() ? fn() : withTrace('session-compaction agent model call', fn));
      const response = await inTrace(() =>
        options.model.getResponse({
          ...(options.instructions ? { systemInstructions: options.instructions } : {}),
          input: messages as unknown as AgentInputItem[],
          modelSettings: options.modelSettings ?? {},
          tools,
          outputType: 'text',
          handoffs: [],
          tracing: false,
          signal,
        }),
      );
      return { messages: asJson(response.output), inputTokens: response.usage.inputTokens };
    },
    readStep(items) {
      const toolCalls: AgentToolCall[] = [];
      const texts: string[] = [];
      for (const item of items) {
        if (!isJsonObject(item)) continue;
        if (item.type === 'function_call') toolCalls.push({ callId: String(item.callId), name: String(item.name), input: parseArguments(item.arguments) });
        if (item.type === 'message' && item.role === 'assistant' && Array.isArray(item.content)) {
          for (const part of item.content) if (isJsonObject(part) && part.type === 'output_text' && typeof part.text === 'string') texts.push(part.text);
        }
      }
      return toolCalls.length > 0 ? { toolCalls } : { toolCalls, output: texts.join('') };
    },
    toolResult(call, output) {
      const text = typeof output === 'string' ? output : JSON.stringify(output ?? null);
      return [
        { type: 'function_call_result', name: call.name, callId: call.callId, status: 'completed', output: { type: 'text', text } },
      ] as unknown as Message[];
    },
    userMessage: (text) => ({ type: 'message', role: 'user', content: text }) as unknown as Message,
  };
}
