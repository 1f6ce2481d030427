/**
 * A scripted coding agent for the agent-loop proof of the `openai-responses`, `anthropic`
 * and `gemini` dialects (test/stack/dialect-agent-loop.test.ts). Each turn it reads the head from
 * the service as the provider gets it (`transcript(id, { for: 'provider' })`), sends it with
 * the provider's real SDK (`openai` Responses API, `@anthropic-ai/sdk`, `@google/genai`) to
 * the strict fake provider, and appends the reply in the dialect's own shape exactly as the
 * SDK returned it (Responses: the output items; Anthropic: `{role: 'assistant', content}`;
 * Gemini: `candidates[0].content`). It then "runs the tools" and appends their results
 * (parallel ones; JSON text outputs such as `42` and `{"status":"ok"}`; some ~20 KB; for
 * Anthropic sometimes one result per user entry, as Claude Code stores them), and now and
 * then a new user request (sometimes an image-only one).
 *
 * It keeps its own ledger: every message it appended with the lineage sequence number the
 * append acknowledged, every user request, the calls open at any moment, and every
 * compaction answer it saw, so the test checks the service against the agent's record.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlock, MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { ApiError, type Content, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import type { SessionsClient } from '../../src/client';
import { type Dialect, dialectOf, type DialectName, type Message } from '../../src/compaction/dialects';
import { canonicalJson, jsonEqual, type JsonValue } from '../../src/compaction/json';
import { MASK_PREFIX } from '../../src/compaction/facts';
import { AgentRequestRejected } from './scripted-agent';
import { fillerText, seededRandom } from './strict-provider';

export { AgentRequestRejected };

/** The provider refused a request (a 4xx from the strict fake, through the SDK's own error type). */
export class ProviderRejected extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

export interface ToolCall {
  /** The call's id (Responses `call_id`, Anthropic `tool_use` id; Gemini: the function name, as Gemini pairs id-less calls). */
  id: string;
  name: string;
}

interface Reply {
  /** What to append, exactly as the SDK returned it. */
  messages: Message[];
  calls: ToolCall[];
}

/** How the agent lays out the results of one reply's calls (the adapter honours what its dialect allows). */
interface ResultStyle {
  /** Parallel results in two appends: the first alone, the rest later. */
  split: boolean;
  /** Anthropic: one user entry per result, each appended on its own (Claude Code). */
  perEntry: boolean;
  /** Anthropic: a result's content as text blocks rather than a string. */
  asBlocks: boolean;
}

interface ResultBatch {
  messages: Message[];
  /** Positions (in the reply's calls) of the calls this batch answers. */
  answers: number[];
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

/** One provider API as the agent speaks it, through the provider's real SDK. */
export interface DialectAdapter {
  readonly dialect: DialectName;
  /** Sends the head; throws ProviderRejected when the provider refuses it. */
  ask(head: Message[], rand: () => number): Promise<Reply>;
  userText(text: string): Message;
  userImage(pngBase64: string): Message;
  /** The batches to append the results of `calls` in (outputs[i] answers calls[i]), each with the positions of the calls it answers. */
  results(calls: ToolCall[], outputs: string[], style: ResultStyle): ResultBatch[];
  /** Calls left open at the end of a head (called, no result in the head), by the test's own reading of the dialect. */
  openCalls(head: readonly Message[]): string[];
  /** A result answering a call that was never made: what a bad cut leaves behind. */
  orphanResult(): Message;
}

/** The SDK's 4xx as ProviderRejected; anything else is not a refusal and is rethrown. */
function rejection(error: unknown): never {
  const status = (error as { status?: unknown }).status;
  const known = error instanceof OpenAI.APIError || error instanceof Anthropic.APIError || error instanceof ApiError;
  if (known && typeof status === 'number' && status >= 400 && status < 500) throw new ProviderRejected(status, (error as Error).message);
  throw error;
}

const isObject = (v: unknown): v is Record<string, JsonValue> => typeof v === 'object' && v !== null && !Array.isArray(v);

// ---------------------------------------------------------------------------------------------
// openai-responses

export function responsesAdapter(url: string, model: string): DialectAdapter {
  const openai = new OpenAI({ apiKey: 'test-key', baseURL: url, maxRetries: 0 });
  return {
    dialect: 'openai-responses',
    async ask(head) {
      try {
        // Stateless, as Codex CLI runs: store off, reasoning sent back by its encrypted content.
        const response = await openai.responses.create({
          model,
          input: head as unknown as ResponseInputItem[],
          store: false,
          include: ['reasoning.encrypted_content'],
        });
        const messages = response.output as unknown as Message[];
        const calls = response.output.flatMap((item) => (item.type === 'function_call' ? [{ id: item.call_id, name: item.name }] : []));
        return { messages, calls };
      } catch (error) {
        return rejection(error);
      }
    },
    userText: (text) => ({ role: 'user', content: text }),
    userImage: (png) => ({ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${png}`, detail: 'auto' }] }),
    results(calls, outputs, style) {
      const items: Message[] = calls.map((c, k) => ({ type: 'function_call_output', call_id: c.id, output: outputs[k] }));
      if (!style.split || items.length < 2) return [{ messages: items, answers: range(0, items.length) }];
      return [
        { messages: items.slice(0, 1), answers: [0] },
        { messages: items.slice(1), answers: range(1, items.length) },
      ];
    },
    openCalls(head) {
      const answered = new Set(head.filter((m) => m.type === 'function_call_output').map((m) => String(m.call_id)));
      return head.filter((m) => m.type === 'function_call' && !answered.has(String(m.call_id))).map((m) => String(m.call_id));
    },
    orphanResult: () => ({ type: 'function_call_output', call_id: 'call_never_made', output: '42' }),
  };
}

// ---------------------------------------------------------------------------------------------
// anthropic

export function anthropicAdapter(url: string, model: string, thinking: boolean): DialectAdapter {
  const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: url, maxRetries: 0 });
  const blocks = (m: Message): Record<string, JsonValue>[] => (Array.isArray(m.content) ? m.content.filter(isObject) : []);
  return {
    dialect: 'anthropic',
    async ask(head, rand) {
      const body: MessageCreateParamsNonStreaming = {
        model,
        max_tokens: 2048,
        messages: head as unknown as MessageParam[],
        ...(thinking ? { thinking: { type: 'enabled', budget_tokens: 1024 } } : {}),
      };
      try {
        // Some replies streamed, as Claude Code streams them: the SDK assembles the same message.
        const reply = rand() < 0.3 ? await anthropic.messages.stream(body).finalMessage() : await anthropic.messages.create(body);
        const content: ContentBlock[] = reply.content;
        const calls = content.flatMap((b) => (b.type === 'tool_use' ? [{ id: b.id, name: b.name }] : []));
        return { messages: [{ role: 'assistant', content } as unknown as Message], calls };
      } catch (error) {
        return rejection(error);
      }
    },
    userText: (text) => ({ role: 'user', content: text }),
    userImage: (png) => ({ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }] }),
    results(calls, outputs, style) {
      const results = calls.map((c, k) => ({
        type: 'tool_result',
        tool_use_id: c.id,
        content: style.asBlocks ? [{ type: 'text', text: outputs[k] }] : outputs[k],
      }));
      if (style.perEntry && results.length > 1) return results.map((r, k) => ({ messages: [{ role: 'user', content: [r] }], answers: [k] }));
      return [{ messages: [{ role: 'user', content: results }], answers: range(0, results.length) }];
    },
    openCalls(head) {
      const answered = new Set(
        head
          .flatMap((m) => blocks(m))
          .filter((b) => b.type === 'tool_result')
          .map((b) => String(b.tool_use_id)),
      );
      return head
        .filter((m) => m.role === 'assistant')
        .flatMap((m) => blocks(m))
        .filter((b) => b.type === 'tool_use' && !answered.has(String(b.id)))
        .map((b) => String(b.id));
    },
    orphanResult: () => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_never_made', content: '42' }] }),
  };
}

// ---------------------------------------------------------------------------------------------
// gemini

export function geminiAdapter(url: string, model: string): DialectAdapter {
  const ai = new GoogleGenAI({ apiKey: 'test-key', httpOptions: { baseUrl: url } });
  const parts = (m: Message): Record<string, JsonValue>[] => (Array.isArray(m.parts) ? m.parts.filter(isObject) : []);
  return {
    dialect: 'gemini',
    async ask(head) {
      try {
        const response = await ai.models.generateContent({ model, contents: head as unknown as Content[] });
        const content = response.candidates?.[0]?.content;
        if (!content) throw new Error('the provider answered no candidate');
        const calls = (content.parts ?? []).flatMap((p) =>
          p.functionCall ? [{ id: p.functionCall.id ?? p.functionCall.name!, name: p.functionCall.name! }] : [],
        );
        return { messages: [content as unknown as Message], calls };
      } catch (error) {
        return rejection(error);
      }
    },
    userText: (text) => ({ role: 'user', parts: [{ text }] }),
    userImage: (png) => ({ role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data: png } }] }),
    // One response turn for all the calls of a turn: Gemini takes no other layout (GM-2, GM-3).
    results: (calls, outputs) => [
      {
        messages: [{ role: 'user', parts: calls.map((c, k) => ({ functionResponse: { name: c.name, response: { output: outputs[k] } } })) }],
        answers: range(0, calls.length),
      },
    ],
    openCalls(head) {
      let at = -1;
      head.forEach((m, i) => {
        if (m.role === 'model' && parts(m).some((p) => p.functionCall !== undefined)) at = i;
      });
      if (at < 0) return [];
      const answered = head.slice(at + 1).some((m) => parts(m).some((p) => p.functionResponse !== undefined));
      return answered ? [] : parts(head[at]).flatMap((p) => (isObject(p.functionCall) ? [String(p.functionCall.id ?? p.functionCall.name)] : []));
    },
    orphanResult: () => ({ role: 'user', parts: [{ functionResponse: { name: 'never_called', response: { output: '42' } } }] }),
  };
}

// ---------------------------------------------------------------------------------------------
// the agent

export interface LedgerEntry {
  lineageSeq: number;
  /** The message as it went over the wire (JSON), which the service must give back JSON-equal. */
  message: Message;
  turn: number;
}

export interface CompactionAnswer {
  /** `wait`: the agent waited with calls open; `close`: it waited after the answer that closed a loop; `drain`: at the end; `second`: the second caller. */
  source: 'wait' | 'close' | 'drain' | 'second';
  outcome: string;
  reason?: string;
  generation: number;
  /** The agent had calls open for the whole time this request was in flight. */
  callOpen: boolean;
}

export interface DialectAgentOptions {
  client: SessionsClient;
  adapter: DialectAdapter;
  sessionId: string;
  seed: number;
  /** Chance to wait for a threshold compaction requested while a tool call is open. */
  waitWithOpenCallChance?: number;
  /** Chance to compact between turns: wait for the threshold compaction the answer closing a tool loop asked for, or ask for one. */
  waitAtLoopCloseChance?: number;
  /** The lineage's threshold: at a loop's close, a head at or above it is compacted. */
  compactAtTokens?: number;
  /** Chance that one result is large (~20 KB). */
  largeOutputChance?: number;
}

/** JSON text outputs as real tools return them. */
const JSON_OUTPUTS = ['42', '{"status":"ok"}', '[1, 2, 3]', '{"matches": 3, "files": ["src/a.ts", "src/b.ts"]}', 'true'];

const TASKS = ['fix the failing parser test', 'document the tokenizer', 'speed up the build', 'rename the session module', 'add a retry to the fetcher'];

/** Bytes that look like a PNG (its signature, then seeded bytes), base64: a unique image per request. */
function pngBase64(rand: () => number): string {
  const bytes = Buffer.alloc(96);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes);
  for (let i = 8; i < bytes.length; i++) bytes[i] = Math.floor(rand() * 256);
  return bytes.toString('base64');
}

/** The JSON the message becomes on the wire (what is stored and must come back JSON-equal). */
const wire = (m: Message): Message => JSON.parse(JSON.stringify(m)) as Message;

/** An item without its `id` (the Responses provider view strips the ids of turns whose reasoning was summarised away, RS-4). */
const withoutId = (m: Message): Message => {
  const { id: _id, ...rest } = m;
  return rest;
};

export class DialectAgent {
  readonly ledger: LedgerEntry[] = [];
  /** Canonical JSON of every message handed to append (acknowledged or still in flight). */
  private readonly submitted = new Set<string>();
  /** The same without `id` (for the Responses provider view). */
  private readonly submittedWithoutId = new Set<string>();
  /** What each appended message with tool results looks like with every output masked: a masked copy must match it. */
  private readonly submittedMasked = new Set<string>();
  /** Every real user request, in order, as appended. */
  readonly userRequests: Message[] = [];
  /** True while a user request is being appended. */
  userAppendInFlight = false;
  head: string;
  /** Calls whose call is acknowledged and whose result has not been handed to append yet, by a unique key. */
  readonly open = new Map<string, ToolCall>();
  readonly dialect: Dialect;
  readonly stats = {
    turns: 0,
    requests: 0,
    textRequests: 0,
    imageRequests: 0,
    callReplies: 0,
    parallelCallReplies: 0,
    answers: 0,
    largeOutputs: 0,
    jsonOutputs: 0,
    splitResults: 0,
    perEntryResults: 0,
    blockResults: 0,
    thresholdRequests: 0,
    /** Compactions the agent asked for itself between turns (the threshold's request still pending). */
    compactsAtClose: 0,
    compactionRequestErrors: [] as string[],
    /** Reads of the head that found it changed by a compaction since the agent's last read. */
    compactionsObservedOnRead: 0,
    /** Checks of "the latest user request is verbatim in the head". */
    userRequestChecks: 0,
    /** Checks of "every message in the head is one the agent appended, or the service's summary". */
    headChecks: 0,
    /** Items the Responses provider view sent without their stored id (RS-4). */
    idsStripped: 0,
    /** Messages of a head whose tool outputs the masking rung replaced (the rest of the message as appended). */
    masked: 0,
  };
  /** Compaction answers the agent and the second caller received. */
  readonly answers: CompactionAnswer[] = [];
  /** Invariant failures seen (a test asserts this stays empty). */
  readonly violations: string[] = [];
  private readonly pending: string[] = [];
  private readonly rand: () => number;
  private lastHeadKey = '';
  private lastReply: 'answer' | 'calls' | undefined;
  private callCounter = 0;
  private requestsAfterAnswer = 0;

  constructor(private readonly options: DialectAgentOptions) {
    this.head = options.sessionId;
    this.rand = seededRandom(options.seed * 7919 + 17);
    this.dialect = dialectOf(options.adapter.dialect);
  }

  get lastUserRequest(): Message | undefined {
    return this.userRequests.at(-1);
  }

  private async append(messages: Message[], turn: number) {
    for (const m of messages) {
      this.submitted.add(canonicalJson(wire(m)));
      this.submittedWithoutId.add(canonicalJson(withoutId(wire(m))));
      const masked = this.dialect.maskResults(wire(m), () => MASK_PREFIX);
      if (masked) this.submittedMasked.add(canonicalJson(masked));
    }
    const result = await this.options.client.append(this.head, messages);
    this.head = result.sessionId;
    if (result.count !== messages.length) this.violations.push(`turn ${turn}: an append of ${messages.length} was acknowledged as ${result.count}`);
    const first = result.lastLineageSeq - result.count + 1;
    messages.forEach((message, i) => this.ledger.push({ lineageSeq: first + i, message: wire(message), turn }));
    if (result.compactionRequestError) this.stats.compactionRequestErrors.push(result.compactionRequestError);
    if (result.compactionRequestId) this.stats.thresholdRequests++;
    return result;
  }

  /**
   * What must hold of any head the service hands out, after any compaction: the latest user
   * request is there verbatim (when it is well defined: no user request being appended), and
   * every message is JSON-equal to one the agent appended, or is the service's summary. With
   * `providerView`, a Responses item may come without its id (and only that).
   */
  checkHead(messages: readonly Message[], where: string, options: { providerView?: boolean; latestDefined?: boolean } = {}) {
    this.stats.headChecks++;
    const latest = this.lastUserRequest;
    if (latest !== undefined && options.latestDefined !== false) {
      this.stats.userRequestChecks++;
      if (!messages.some((m) => jsonEqual(m, wire(latest)))) {
        this.violations.push(`${where}: the latest user request ${canonicalJson(latest).slice(0, 80)} is not verbatim in the head`);
      }
    }
    for (const [i, m] of messages.entries()) {
      const key = canonicalJson(m);
      if (this.submitted.has(key) || this.dialect.isSummary(m)) continue;
      // A masked copy: every output a placeholder, every other field as the agent appended it.
      const results = this.dialect.toolResults(m);
      const shape = this.dialect.maskResults(m, () => MASK_PREFIX);
      if (results.length > 0 && results.every((r) => r.text.startsWith(MASK_PREFIX)) && shape && this.submittedMasked.has(canonicalJson(shape))) {
        this.stats.masked++;
        continue;
      }
      if (options.providerView && this.options.adapter.dialect === 'openai-responses' && this.submittedWithoutId.has(key)) {
        this.stats.idsStripped++;
        continue;
      }
      this.violations.push(`${where}: message ${i} of the head is neither one the agent appended nor a summary: ${key.slice(0, 160)}`);
    }
  }

  /** Reads the head as the provider gets it, and checks it. */
  private async readHead(turn: number): Promise<Message[]> {
    const transcript = await this.options.client.transcript(this.head, { for: 'provider' });
    this.head = transcript.sessionId;
    const firstSummary = transcript.messages.find((m) => this.dialect.isSummary(m));
    const key = `${transcript.sessionId}:${transcript.seqs[0] ?? 0}:${firstSummary ? canonicalJson(firstSummary) : ''}`;
    if (this.lastHeadKey && key !== this.lastHeadKey) {
      this.stats.compactionsObservedOnRead++;
      // A compaction happened since the last read: check the head as stored too, strictly.
      const stored = await this.options.client.transcript(this.head);
      this.checkHead(stored.messages, `turn ${turn} (stored head ${stored.sessionId} after a compaction)`);
    }
    this.lastHeadKey = key;
    this.checkHead(transcript.messages, `turn ${turn} (provider view of ${transcript.sessionId})`, { providerView: true });
    return transcript.messages;
  }

  /** Records a compaction answer (a compacted one's head is checked by whoever got it). */
  record(answer: CompactionAnswer) {
    this.answers.push(answer);
  }

  /**
   * Waits for a threshold compaction and checks the head it left: with calls open, those
   * calls must be there verbatim and still open; when the loop has just closed (`close`), it
   * is where a compaction lands between two turns.
   */
  private async waitFor(requestId: string, source: 'wait' | 'close', callMessages: Message[], turn: number) {
    const openBefore = [...this.open.values()].map((c) => c.id);
    const result = await this.options.client.waitForResult(this.head, requestId);
    this.record({ source, outcome: result.outcome, reason: result.reason, generation: result.generation, callOpen: openBefore.length > 0 });
    if (result.outcome !== 'compacted') return;
    const stored = await this.options.client.transcript(this.head);
    this.head = stored.sessionId;
    this.checkHead(stored.messages, `turn ${turn} (head ${stored.sessionId} right after compaction ${requestId})`);
    for (const m of callMessages) {
      if (!stored.messages.some((h) => jsonEqual(h, wire(m))))
        this.violations.push(`turn ${turn}: the message with open calls ${openBefore.join(', ')} is not verbatim in head ${stored.sessionId}`);
    }
    const open = this.options.adapter.openCalls(stored.messages);
    for (const id of openBefore) if (!open.includes(id)) this.violations.push(`turn ${turn}: call ${id} is not open at the end of head ${stored.sessionId}`);
  }

  /** Compacts between turns, the loop closed and the head at or above the threshold. */
  private async compactAtClose(turn: number) {
    this.stats.compactsAtClose++;
    const result = await this.options.client.compact(this.head);
    this.record({ source: 'close', outcome: result.outcome, reason: result.reason, generation: result.generation, callOpen: false });
    if (result.outcome !== 'compacted') return;
    this.head = result.sessionId;
    this.checkHead(result.messages, `turn ${turn} (head ${result.sessionId} compacted between turns)`);
  }

  private userRequest(turn: number, image: boolean): Message {
    const n = this.userRequests.length + 1;
    if (image) {
      this.stats.imageRequests++;
      return this.options.adapter.userImage(pngBase64(this.rand));
    }
    this.stats.textRequests++;
    const task = TASKS[Math.floor(this.rand() * TASKS.length)];
    return this.options.adapter.userText(
      `REQUEST-${this.options.seed}-${n} (turn ${turn}): please ${task}; ticket ${Math.floor(this.rand() * 1e9).toString(36)}`,
    );
  }

  private output(call: ToolCall, turn: number): string {
    const r = this.rand();
    if (r < (this.options.largeOutputChance ?? 0.1)) {
      this.stats.largeOutputs++;
      return `LOG of ${call.name} (${call.id}, turn ${turn})\n${fillerText(this.rand, 18_000 + Math.floor(this.rand() * 4_000), `log-${turn}`)}`;
    }
    if (r < 0.55) {
      this.stats.jsonOutputs++;
      return JSON_OUTPUTS[Math.floor(this.rand() * JSON_OUTPUTS.length)];
    }
    return `PASS ${call.name} (${call.id}, turn ${turn})\n${fillerText(this.rand, 150 + Math.floor(this.rand() * 500), `out-${turn}`)}`;
  }

  /** One agent turn. Throws AgentRequestRejected when the provider refuses the head. */
  async turn(turn: number): Promise<void> {
    this.stats.turns++;
    if (turn === 0 || this.lastReply === 'answer' || this.rand() < 0.08) {
      // Every fourth request made after an answer shows an image and says nothing else.
      const image = this.lastReply === 'answer' && ++this.requestsAfterAnswer % 4 === 2;
      const request = this.userRequest(turn, image);
      this.userAppendInFlight = true;
      try {
        const appended = await this.append([request], turn);
        this.userRequests.push(request);
        if (appended.compactionRequestId) this.pending.push(appended.compactionRequestId);
      } finally {
        this.userAppendInFlight = false;
      }
    }

    const head = await this.readHead(turn);
    let reply: Reply;
    try {
      this.stats.requests++;
      reply = await this.options.adapter.ask(head, this.rand);
    } catch (error) {
      if (error instanceof ProviderRejected) throw new AgentRequestRejected(turn, error.status, error.message);
      throw error;
    }
    const replyAppend = await this.append(reply.messages, turn);
    if (reply.calls.length === 0) {
      this.lastReply = 'answer';
      this.stats.answers++;
      // The loop closed: an agent compacts between turns (Claude Code does), so it mostly waits
      // here for the compaction its answer asked for, or (the threshold's request is still
      // pending from inside the loop, where it may be held) asks for one itself.
      const closeWait = this.rand() < (this.options.waitAtLoopCloseChance ?? 0.85);
      if (replyAppend.compactionRequestId) {
        if (closeWait) await this.waitFor(replyAppend.compactionRequestId, 'close', [], turn);
        else this.pending.push(replyAppend.compactionRequestId);
      } else if (closeWait && this.options.compactAtTokens !== undefined && replyAppend.headTokens >= this.options.compactAtTokens) {
        await this.compactAtClose(turn);
      }
      return;
    }

    this.lastReply = 'calls';
    this.stats.callReplies++;
    if (reply.calls.length > 1) this.stats.parallelCallReplies++;
    const keys = reply.calls.map((c) => `${turn}:${++this.callCounter}:${c.id}`);
    reply.calls.forEach((c, k) => this.open.set(keys[k], c));
    const waitChance = this.options.waitWithOpenCallChance ?? 0.85;
    if (replyAppend.compactionRequestId) {
      if (this.rand() < waitChance) await this.waitFor(replyAppend.compactionRequestId, 'wait', reply.messages, turn);
      else this.pending.push(replyAppend.compactionRequestId);
    }

    // "Run the tools", then append their results.
    const outputs = reply.calls.map((c) => this.output(c, turn));
    const style: ResultStyle = { split: this.rand() < 0.5, perEntry: this.rand() < 0.5, asBlocks: this.rand() < 0.3 };
    const batches = this.options.adapter.results(reply.calls, outputs, style);
    if (batches.length > 1) this.stats[this.options.adapter.dialect === 'anthropic' ? 'perEntryResults' : 'splitResults']++;
    if (this.options.adapter.dialect === 'anthropic' && style.asBlocks) this.stats.blockResults++;
    for (const [b, batch] of batches.entries()) {
      for (const k of batch.answers) this.open.delete(keys[k]);
      const appended = await this.append(batch.messages, turn);
      if (!appended.compactionRequestId) continue;
      const stillOpen = b < batches.length - 1;
      if (stillOpen && this.rand() < waitChance) await this.waitFor(appended.compactionRequestId, 'wait', reply.messages, turn);
      else this.pending.push(appended.compactionRequestId);
    }
  }

  /** Waits for every threshold request the loop did not wait for. */
  async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const requestId = this.pending.shift()!;
      const result = await this.options.client.waitForResult(this.head, requestId);
      // Not waited for while open: whether a call was open when the job ran is not known here.
      this.record({ source: 'drain', outcome: result.outcome, reason: result.reason, generation: result.generation, callOpen: false });
    }
  }
}
