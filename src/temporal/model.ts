/**
 * What the agent activities need of a model, whichever SDK calls it: one call on the
 * lineage's head, and the dialect's shapes of what is appended around it (the tool calls a
 * stored batch holds, a tool's result, a user message). src/temporal/ai-sdk-model.ts and
 * src/temporal/agents-sdk-model.ts are the two the package ships; any other is a few lines.
 */
import type { DialectName, Message } from '../compaction/dialects';
import type { AgentToolCall } from './contract';

export interface AgentModelRequest {
  /** The lineage's head as the provider is sent it (compacted by the service at its threshold). */
  readonly messages: Message[];
  /** Aborted when the activity is cancelled. */
  readonly signal: AbortSignal;
}

export interface AgentModelAnswer {
  /** What the model returned, in the lineage's dialect: appended as one batch. */
  readonly messages: Message[];
  /** The input tokens the provider reported, when it did. */
  readonly inputTokens?: number;
}

/** What a stored batch holds for the workflow (AgentModel.readStep). */
export interface AgentModelReading {
  /** The calls the workflow must run: those the batch does not answer itself. */
  toolCalls: AgentToolCall[];
  /** The model's final text, when the batch holds no call. */
  output?: string;
  /**
   * True when the batch answered its own calls and holds nothing for the workflow: the SDK
   * answered a call to a tool it was not given, or with input that did not parse (the AI SDK
   * appends its own error result). The model must read those results before anything is decided,
   * so the model activity calls it again.
   */
  again?: boolean;
}

export interface AgentModel {
  /** The dialect of the lineages this model reads and writes. */
  readonly dialect: DialectName;
  /** One model call: the head in, what the model returned out (tools are not run here). */
  call(request: AgentModelRequest): Promise<AgentModelAnswer>;
  /** The tool calls a batch the model returned holds and nobody answered yet, or its final text when it holds none. */
  readStep(messages: readonly Message[]): AgentModelReading;
  /** The messages that answer `call` with a tool's output (a string, or JSON). */
  toolResult(call: AgentToolCall, output: unknown): Message[];
  /** A user message holding `text`. */
  userMessage(text: string): Message;
}

/** A tool call's arguments as the workflow gets them: parsed JSON when they parse, else the text. */
export function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
