/**
 * What an agent's workflow and its activities exchange (src/temporal/activities.ts runs them,
 * src/temporal/workflow.ts calls them): the lineage id in, and out only what the workflow must
 * decide on, the tool calls to run and the final output. The conversation itself never crosses
 * into workflow history: the activities read it from the lineage and append to it. Plain
 * types, no imports: the workflow bundle takes them as they are.
 */

/** One tool call the model asked for: what the workflow runs (its input is the model's output, so it is in history once). */
export interface AgentToolCall {
  /** The provider's call id (the tool result answers it). */
  readonly callId: string;
  readonly name: string;
  /** The call's arguments as the model gave them (parsed JSON when they parse, else the text). */
  readonly input: unknown;
}

/** What one model call returns to the workflow. */
export interface AgentModelStep {
  /** The tool calls to run next; empty when the model answered. */
  readonly toolCalls: readonly AgentToolCall[];
  /** The model's final text when it called no tool. */
  readonly output?: string;
  /** Input tokens the provider reported for this call, when it did. */
  readonly inputTokens?: number;
  /** The head's size in tokens as the service estimates them (about four characters a token): what compaction bounds. */
  readonly headTokens: number;
  /** Messages in the head the model was sent (after compaction). */
  readonly headMessages: number;
  /** True when this attempt found its batch already stored by an earlier attempt (the model was not called again). */
  readonly recovered: boolean;
}

/** What a tool call returns to the workflow: a receipt, not the output (that went to the lineage). */
export interface AgentToolReceipt {
  readonly callId: string;
  /** Bytes of the tool's output as appended (JSON text). */
  readonly bytes: number;
  /** True when an earlier attempt had already appended it (the tool was not run again). */
  readonly recovered: boolean;
}

export interface AgentModelCallInput {
  readonly lineageId: string;
}

export interface AgentToolCallInput {
  readonly lineageId: string;
  readonly call: AgentToolCall;
}

export interface AgentInputInput {
  readonly lineageId: string;
  /** The user's message, as text. */
  readonly text: string;
}

/**
 * The activities, by the names a worker registers them under (createAgentActivities) and the
 * workflow helper calls them by (proxyActivities).
 */
export interface AgentActivities {
  /** Reads the head, calls the model, appends what it returned (keyed), returns the step. */
  lineageAgentModelCall(input: AgentModelCallInput): Promise<AgentModelStep>;
  /** Runs one tool call and appends its result (keyed), returns a receipt. */
  lineageAgentToolCall(input: AgentToolCallInput): Promise<AgentToolReceipt>;
  /** Appends a user message (keyed). */
  lineageAgentInput(input: AgentInputInput): Promise<void>;
}
