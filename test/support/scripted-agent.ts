/**
 * A scripted coding agent for the agent-loop test. Each turn it reads the head transcript
 * from the service, sends it to the (strict) provider with the real `openai` client, and
 * appends what comes back: an assistant message with one or several parallel tool calls,
 * then, after "running the tools", their results (some of them 5-30 KB); sometimes a plain
 * answer; every few turns a new user request with a unique, recognisable text.
 *
 * It keeps its own ledger of everything it appended (the message and the lineage sequence
 * number the append returned), of every user request, and of every compaction it saw, so a
 * test can check the service against the agent's record rather than the service's.
 */
import OpenAI from 'openai';
import type { SessionsClient } from '../../src/client';
import type { ChatMessage } from '../../src/compaction/messages';
import type { CompactResult } from '../../src/workflows/contract';
import { fillerText, seededRandom } from './strict-provider';

export interface LedgerEntry {
  lineageSeq: number;
  message: ChatMessage;
  turn: number;
}

/**
 * Canonical JSON (keys sorted) of the whole message: jsonb reorders keys, but the service
 * returns every field exactly as appended, so nothing else may differ.
 */
export function canonical(message: object): string {
  const sortKeys = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sortKeys);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>)
          .filter(([, v]) => v !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, v]) => [k, sortKeys(v)]),
      );
    }
    return value;
  };
  return JSON.stringify(sortKeys(message));
}

/** The provider refused a request the agent built from the head transcript. */
export class AgentRequestRejected extends Error {
  constructor(
    readonly turn: number,
    readonly status: number | undefined,
    message: string,
  ) {
    super(`turn ${turn}: the provider refused the agent's request (HTTP ${status}): ${message}`);
  }
}

export interface ScriptedAgentOptions {
  client: SessionsClient;
  baseURL: string;
  sessionId: string;
  seed: number;
  model?: string;
  /** Chance to wait for a threshold compaction requested while a tool call is open. */
  waitWithOpenCallChance?: number;
  /** Chance that one result of a group is large (5-30 KB). */
  largeOutputChance?: number;
}

export interface CompactionSeen {
  requestId: string;
  generation: number;
  sessionId: string;
  /** Tool calls that were open (unanswered) in the head when the compaction was requested. */
  openCalls: string[];
}

export class ScriptedAgent {
  readonly ledger: LedgerEntry[] = [];
  readonly userRequests: string[] = [];
  /** True while a user request is being appended (its outcome not yet in the ledger). */
  userAppendInFlight = false;
  head: string;
  readonly stats = {
    turns: 0,
    toolCallMessages: 0,
    parallelCallMessages: 0,
    largeOutputs: 0,
    answers: 0,
    splitResults: 0,
    thresholdRequests: 0,
    compactionRequestErrors: [] as string[],
    waitedOutcomes: {} as Record<string, number>,
    /** Transcript reads that found the head changed by a compaction since the agent's last read. */
    compactionsObservedOnRead: 0,
    /** Checks of "the latest user request is verbatim in the head" (every transcript read). */
    userRequestChecks: 0,
  };
  /** Compacted answers to threshold requests the agent waited for with a tool call open. */
  readonly compactionsWithOpenCall: CompactionSeen[] = [];
  /** Compacted answers the agent received (waited or drained). */
  readonly compacted: CompactResult[] = [];
  /** Invariant failures the agent saw (a test asserts this stays empty). */
  readonly violations: string[] = [];
  /** Threshold requests not waited for during the loop; `drain` waits for them. */
  private readonly pending: string[] = [];
  private readonly openai: OpenAI;
  private readonly rand: () => number;
  private readonly model: string;
  private lastHeadKey = '';
  private resultCounter = 0;

  constructor(private readonly options: ScriptedAgentOptions) {
    this.head = options.sessionId;
    this.openai = new OpenAI({ apiKey: 'test-key', baseURL: options.baseURL, maxRetries: 0 });
    this.rand = seededRandom(options.seed * 7919 + 13);
    this.model = options.model ?? 'agent-model';
  }

  get lastUserRequest(): string | undefined {
    return this.userRequests.at(-1);
  }

  /** Appends a batch and records each message with the lineage sequence number it got. */
  private async append(messages: ChatMessage[], turn: number) {
    const result = await this.options.client.append(this.head, messages);
    this.head = result.sessionId;
    const first = result.lastLineageSeq - result.count + 1;
    messages.forEach((message, i) => this.ledger.push({ lineageSeq: first + i, message, turn }));
    if (result.compactionRequestError) this.stats.compactionRequestErrors.push(result.compactionRequestError);
    if (result.compactionRequestId) this.stats.thresholdRequests++;
    return result;
  }

  /**
   * Reads the head and checks what must hold after any compaction: the latest user request
   * is there verbatim. Returns the messages as the provider gets them.
   */
  async readHead(turn: number): Promise<ChatMessage[]> {
    const transcript = await this.options.client.transcript(this.head);
    this.head = transcript.sessionId;
    const key = `${transcript.sessionId}:${transcript.seqs[0] ?? 0}`;
    if (this.lastHeadKey && key !== this.lastHeadKey) this.stats.compactionsObservedOnRead++;
    this.lastHeadKey = key;
    const messages = transcript.messages as ChatMessage[];
    const latest = this.lastUserRequest;
    if (latest !== undefined) {
      this.stats.userRequestChecks++;
      if (!messages.some((m) => m.role === 'user' && m.content === latest)) {
        this.violations.push(`turn ${turn}: the latest user request ${JSON.stringify(latest.slice(0, 40))} is not verbatim in head ${transcript.sessionId}`);
      }
    }
    return messages;
  }

  private async ask(messages: ChatMessage[], turn: number): Promise<OpenAI.ChatCompletionMessage> {
    const body = { model: this.model, messages: messages as OpenAI.ChatCompletionMessageParam[] };
    try {
      if (this.rand() < 0.3) return (await this.openai.chat.completions.stream(body).finalChatCompletion()).choices[0].message;
      return (await this.openai.chat.completions.create(body)).choices[0].message;
    } catch (error) {
      if (error instanceof OpenAI.APIError && error.status === 400) throw new AgentRequestRejected(turn, error.status, error.message);
      throw error;
    }
  }

  /** Waits for a threshold compaction and records it; a call still open is noted. */
  private async waitForCompaction(requestId: string, openCalls: string[], turn: number) {
    const result = await this.options.client.waitForResult(this.head, requestId);
    this.stats.waitedOutcomes[result.outcome] = (this.stats.waitedOutcomes[result.outcome] ?? 0) + 1;
    if (result.outcome !== 'compacted') return;
    this.compacted.push(result);
    if (openCalls.length > 0) this.compactionsWithOpenCall.push({ requestId, generation: result.generation, sessionId: result.sessionId, openCalls });
    // Right after the compaction: the latest request is there (readHead checks), and so is
    // every call still open, verbatim, so that its results can follow it.
    const head = await this.readHead(turn);
    for (const id of openCalls) {
      if (!head.some((m) => m.role === 'assistant' && m.tool_calls?.some((c) => c.id === id))) {
        this.violations.push(`turn ${turn}: open tool call ${id} is missing from head ${this.head} right after compaction ${requestId}`);
      }
    }
  }

  private newUserRequest(turn: number): ChatMessage {
    const n = this.userRequests.length + 1;
    const tasks = [
      'fix the failing parser test',
      'document the tokenizer',
      'speed up the build',
      'rename the session module',
      'add a retry to the fetcher',
      'explain the crash in main.ts',
    ];
    const text = `REQUEST-${this.options.seed}-${n} (turn ${turn}): please ${tasks[Math.floor(this.rand() * tasks.length)]}; ticket ${Math.floor(this.rand() * 1e9).toString(36)}`;
    return { role: 'user', content: text };
  }

  private toolResult(call: { id: string; function: { name: string } }, turn: number): ChatMessage {
    this.resultCounter++;
    const large = this.rand() < (this.options.largeOutputChance ?? 0.2);
    if (large) this.stats.largeOutputs++;
    const size = large ? 5_000 + Math.floor(this.rand() * 25_000) : 200 + Math.floor(this.rand() * 600);
    const content = `OUTPUT ${call.id} of ${call.function.name} (turn ${turn}, #${this.resultCounter})\n${fillerText(this.rand, size, `out-${this.resultCounter}`)}`;
    return { role: 'tool', tool_call_id: call.id, content };
  }

  /** One agent turn. Throws AgentRequestRejected when the provider refuses the head. */
  async turn(turn: number): Promise<void> {
    this.stats.turns++;
    const last = this.ledger.at(-1)?.message;
    if (turn === 0 || (last?.role === 'assistant' && !last.tool_calls) || this.rand() < 0.1) {
      const request = this.newUserRequest(turn);
      this.userAppendInFlight = true;
      try {
        const appended = await this.append([request], turn);
        this.userRequests.push(request.content as string);
        if (appended.compactionRequestId) this.pending.push(appended.compactionRequestId);
      } finally {
        this.userAppendInFlight = false;
      }
    }

    const reply = await this.ask(await this.readHead(turn), turn);
    const calls = (reply.tool_calls ?? []).filter((c): c is OpenAI.ChatCompletionMessageFunctionToolCall => c.type === 'function');
    if (calls.length === 0) {
      this.stats.answers++;
      const appended = await this.append([{ role: 'assistant', content: reply.content ?? '' }], turn);
      if (appended.compactionRequestId) this.pending.push(appended.compactionRequestId);
      return;
    }

    this.stats.toolCallMessages++;
    if (calls.length > 1) this.stats.parallelCallMessages++;
    const assistant: ChatMessage = {
      role: 'assistant',
      content: reply.content ?? null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } })),
    };
    const waitChance = this.options.waitWithOpenCallChance ?? 0.7;
    const callAppend = await this.append([assistant], turn);
    const open = calls.map((c) => c.id);
    if (callAppend.compactionRequestId) {
      if (this.rand() < waitChance) await this.waitForCompaction(callAppend.compactionRequestId, open, turn);
      else this.pending.push(callAppend.compactionRequestId);
    }

    // "Run the tools", then append their results: all at once, or (parallel calls) the first
    // one alone and the rest later, leaving calls partly answered in between.
    const results = calls.map((c) => this.toolResult(c, turn));
    const batches = calls.length > 1 && this.rand() < 0.5 ? [results.slice(0, 1), results.slice(1)] : [results];
    if (batches.length > 1) this.stats.splitResults++;
    for (const [b, batch] of batches.entries()) {
      const appended = await this.append(batch, turn);
      for (const m of batch) open.splice(open.indexOf(m.tool_call_id!), 1);
      if (!appended.compactionRequestId) continue;
      if (b < batches.length - 1 && this.rand() < waitChance) await this.waitForCompaction(appended.compactionRequestId, [...open], turn);
      else this.pending.push(appended.compactionRequestId);
    }
  }

  /** Waits for every threshold request the loop did not wait for. */
  async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const requestId = this.pending.shift()!;
      const result = await this.options.client.waitForResult(this.head, requestId);
      this.stats.waitedOutcomes[result.outcome] = (this.stats.waitedOutcomes[result.outcome] ?? 0) + 1;
      if (result.outcome === 'compacted') this.compacted.push(result);
    }
  }
}
