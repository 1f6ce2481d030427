/**
 * A dialect is one provider API's message format: how messages of a lineage are shaped,
 * checked at append, grouped for the cut, recognised as a real user request or a summary,
 * rendered for the summariser, checked the way that provider checks a request, and turned
 * into the provider-ready view the agent sends. Plain data and pure functions: safe for
 * workflow code. Messages are stored and returned exactly as appended (JSON-equal).
 */
import type { JsonObject, JsonValue } from '../json';
import { DIALECT_REGISTRY, type RegisteredDialectName } from './registry';

/** The dialect names, in the registry's order (./registry: one entry per dialect). */
export const DIALECT_NAMES = DIALECT_REGISTRY.map((entry) => entry.name) as readonly RegisteredDialectName[] as readonly [
  RegisteredDialectName,
  ...RegisteredDialectName[],
];
export type DialectName = RegisteredDialectName;
export const DEFAULT_DIALECT: DialectName = 'openai-chat';

/** A message of any dialect: the JSON object the caller appended. */
export type Message = JsonObject;

/** The role column every dialect's message is filed under (for listings and the inspector). */
export type StoredRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/**
 * A unit the cut never splits: one message, or a tool call with its results, or a
 * reasoning item with the items of its response, or the entries of one turn.
 */
export interface MessageGroup {
  /** Positions of the group's messages in the transcript, in order and contiguous. */
  indices: number[];
  /** Ids of the group's tool calls that no result in the group answers. */
  unanswered: string[];
  /** A result that answers no call, or another shape a provider rejects wherever it stands. */
  orphan: boolean;
}

/** Where a problem is: the field path of a batch message (`messages[3].content[1].id`) and why. */
export interface FieldProblem {
  field: string;
  detail: string;
}

/** A tool call as the ledger reads it: the tool's name and its input (arguments as sent: JSON text or an object). */
export interface ToolCall {
  id?: string;
  name: string;
  input: JsonValue;
}

/** A tool's result as the ledger and the masking rung read it. */
export interface ToolResult {
  /** The call it answers (by id; Gemini's id-less responses by function name). */
  id?: string;
  name?: string;
  /** Its text, as the summariser would read it (media as placeholders). */
  text: string;
  /** The provider's own error mark (`is_error`, a failed status). */
  isError: boolean;
}

/** Limits a renderer keeps to, in UTF-16 units of the rendered text. */
export interface RenderCaps {
  /** A tool result (or tool output item) is shown up to this many characters. */
  toolResultChars: number;
  /** Tool-call arguments are shown up to this many characters. */
  toolArgumentChars: number;
}

export interface Dialect {
  readonly name: DialectName;
  /** The message field a forged summary marker is reported at (`parts` for Gemini, `content` for the others). */
  readonly summaryMarkerField: 'content' | 'parts';
  /** A message `name` reserved for the summaries this service writes (openai-chat's `context_summary`), when the dialect has one. */
  readonly reservedName?: string;
  /**
   * Whether the compacted head keeps the first groups of the conversation verbatim before
   * the summary (chat-style APIs with instructions in the messages). Dialects whose first
   * turn must be the user's (Anthropic, Gemini) put the summary first instead.
   */
  readonly keepsOpeningGroups: boolean;
  /**
   * The structural problem of one appended message, or undefined. Only what is structurally
   * wrong for the dialect (what the cut and the gates rely on, what its provider refuses
   * wherever it stands) is a problem; fields the service does not know are kept, not refused.
   * `field` is relative to the message (`content[1].id`, or '' for the message itself).
   */
  check(message: unknown): FieldProblem | undefined;
  /** The role column the message is filed under. */
  roleOf(message: Message): StoredRole;
  /** Every piece of text a provider counts as tokens (for counts and estimates). */
  texts(message: Message): string[];
  /**
   * The strings the cheap token estimate (../tokens estimateTokens, SQL sc_estimate_message_tokens)
   * counts: openai-chat its texts, the other dialects every string value of the message.
   */
  estimateTexts(message: Message): string[];
  /** The message's human-readable text: what the summary marker checks and listings read. */
  textOf(message: Message): string;
  /** A system or developer instruction that stays first and byte-identical. */
  isInstruction(message: Message): boolean;
  /** Splits a transcript into the groups the cut never splits. */
  groups(messages: readonly Message[]): MessageGroup[];
  /** A request a person made: user role, not a tool result, not a summary (text, images or files). */
  isRealUserRequest(message: Message): boolean;
  /** A summary (or its acknowledgement) this service wrote. */
  isSummary(message: Message): boolean;
  /** Whether a message carries the summary marker or reserved name (used by noForgedSummary). */
  posesAsSummary(message: Message): boolean;
  /**
   * The messages a summary becomes in this dialect, given the kept message that will follow
   * it (so that it never merges into a kept turn of the same role).
   */
  summaryMessages(text: string, next: Message | undefined): Message[];
  /** What the summariser reads for a message: tool inputs and results, placeholders for media, no thinking text. */
  render(message: Message, caps: RenderCaps): string;
  /** The provider's rules a compacted head can break (provider-rules.md): why it would be refused, or undefined. */
  providerCheck(messages: readonly Message[]): string | undefined;
  /** The tool calls open at the end of a transcript (called, not yet answered), with the calling message's position. */
  openCalls(messages: readonly Message[]): { index: number; ids: string[] } | undefined;
  /** Results (their positions) that answer the given calls of the message at `index`. */
  resultsOf(messages: readonly Message[], index: number, ids: readonly string[]): number[];
  /**
   * Why this transcript must not be compacted now, or undefined: for example an Anthropic
   * tool loop still open with thinking on (its final assistant turn's thinking must stay
   * valid, and a compaction changes the prefix it depends on).
   */
  holdReason(messages: readonly Message[]): string | undefined;
  /** The tool calls the message makes, for the ledger. */
  toolCalls(message: Message): ToolCall[];
  /** The tool results the message carries, for the ledger and the masking rung. */
  toolResults(message: Message): ToolResult[];
  /**
   * The message with the content of each tool result replaced by `placeholder(result)`, ids,
   * names and error marks unchanged (so it still answers its call), every other field and
   * block as it was; undefined when it carries no result the masking rung may replace.
   */
  maskResults(message: Message, placeholder: (result: ToolResult) => string): Message | undefined;
  /** The provider-ready view of a head: what the agent sends on its next call. */
  forProvider(messages: readonly Message[]): Message[];
}
