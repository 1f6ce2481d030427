/**
 * The AI SDK (`ai`) as an agent model (model.ts) for lineages of the `ai-sdk` dialect: one
 * `generateText` step inside the model activity, on the lineage's head, with the tools'
 * schemas but not their `execute` (the workflow runs the tools, each an activity).
 *
 *   aiSdkAgentModel({ model: openai('gpt-5'), system: 'You are a coding agent.', tools: { read_file: tool({ inputSchema }) } })
 *
 * Needs the optional peer dependency `ai`, loaded on the first call.
 */
import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { Message } from '../compaction/dialects';
import { isJsonObject } from '../compaction/json';
import { toStoredMessages } from '../adapters/ai-sdk/messages';
import type { AgentToolCall } from './contract';
import { type AgentModel, parseArguments } from './model';

export interface AiSdkAgentModelOptions {
  model: LanguageModel;
  /** The system prompt, sent with every call (not stored in the lineage). */
  system?: string;
  /** The tools the model may call: their descriptions and input schemas are sent; `execute` is left out. */
  tools?: ToolSet;
  /** Passed to `generateText` as they are (maxOutputTokens, temperature, providerOptions, ...). */
  settings?: Record<string, unknown>;
}

const withoutExecute = (tools: ToolSet): ToolSet =>
  Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, { ...t, execute: undefined }])) as ToolSet;

export function aiSdkAgentModel(options: AiSdkAgentModelOptions): AgentModel {
  const tools = options.tools ? withoutExecute(options.tools) : undefined;
  return {
    dialect: 'ai-sdk',
    async call({ messages, signal }) {
      const { generateText } = await import('ai');
      const result = await generateText({
        ...options.settings,
        model: options.model,
        ...(options.system ? { system: options.system } : {}),
        ...(tools ? { tools } : {}),
        messages: messages as unknown as ModelMessage[],
        abortSignal: signal,
      });
      return { messages: toStoredMessages(result.response.messages), inputTokens: result.usage.inputTokens };
    },
    readStep(messages) {
      const calls: AgentToolCall[] = [];
      const answered = new Set<string>();
      const texts: string[] = [];
      for (const m of messages) {
        if (!isJsonObject(m)) continue;
        if (typeof m.content === 'string') {
          if (m.role === 'assistant') texts.push(m.content);
          continue;
        }
        if (!Array.isArray(m.content)) continue;
        for (const part of m.content) {
          if (!isJsonObject(part)) continue;
          // A call the SDK answered in the same step (a tool it was not given, input that did not
          // parse): its error result is already in the batch, so the workflow must not run it again.
          if (part.type === 'tool-result') answered.add(String(part.toolCallId));
          if (m.role !== 'assistant') continue;
          if (part.type === 'tool-call' && !part.providerExecuted)
            calls.push({ callId: String(part.toolCallId), name: String(part.toolName), input: parseArguments(part.input) });
          if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
        }
      }
      const toolCalls = calls.filter((call) => !answered.has(call.callId));
      if (toolCalls.length > 0) return { toolCalls };
      return calls.length > 0 ? { toolCalls, again: true } : { toolCalls, output: texts.join('') };
    },
    toolResult(call, output) {
      const value = typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: output ?? null };
      return [{ role: 'tool', content: [{ type: 'tool-result', toolCallId: call.callId, toolName: call.name, output: value }] }] as unknown as Message[];
    },
    userMessage: (text) => ({ role: 'user', content: text }) as unknown as Message,
  };
}
