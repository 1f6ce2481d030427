/**
 * A `SessionStore` for the Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`): the SDK's
 * transcript mirror, kept by this service in lineages, so that a session resumes on any host,
 * is audited, kept or pruned by retention, erased on request, and written by any number of
 * processes into one history without forking.
 *
 *   const store = new LineageSessionStore(client);
 *   for await (const message of query({ prompt, options: { sessionStore: store } })) { ... }
 *
 * The Claude Code process keeps its own transcript and compacts it itself; the store mirrors
 * it. So the lineages of this store have no compaction threshold (the service never compacts
 * them on its own), and `load` returns every entry exactly as appended (JSON-equal, in order).
 *
 * What the SDK asks of a store maps onto the data plane:
 * - a key (`projectKey`, `sessionId`, `subpath`) is one lineage, its id derived from the key
 *   (`lineageIdOf`): `<namespace>.<h(projectKey)>.<h(sessionId)>[.<h(subpath)>]`, each `h` a
 *   SHA-256 prefix, so any key (any length, any character) names a valid session id, and the
 *   namespace keeps stores that share a database apart;
 * - `append`: one append to the key's lineage (a batch is all or nothing; one larger than half
 *   the service's batch limits goes in parts, in order); a batch that holds an entry with a
 *   `uuid` is keyed by its content (`appendKey`), so the SDK's retry of a batch whose answer
 *   was lost, or an import replayed, stores it once (the dedup is per batch, not per entry: a
 *   replay cut into other batches is stored again);
 * - `load`: the lineage's head, unwrapped; `null` for a key never written (or erased);
 * - `delete`: the lineage erased (deleteLineage: every row, every workflow run), with its
 *   subagent lineages when the key is the main transcript's;
 * - `listSessions`, `listSubkeys`: the live lineages under a project or a session
 *   (`operator.listLineages`), named back by the project's key index (below).
 *
 * The entries are Claude Code transcript lines (`{type, uuid?, timestamp?, ...}`), not
 * Messages API turns, so the `anthropic` dialect would refuse them as they are. Each is
 * stored as one `anthropic` message holding the entry whole in a block of its own type
 * (`{role, content: [{type: 'claude_code_entry', entry}]}`, role `assistant` for assistant
 * entries, else `user`), a block type the dialect keeps as it came and never refuses. The
 * service counts, audits, retains and erases these messages like any other; it does not read
 * them as a conversation (a summary of them would be empty), which is why they are never
 * compacted. A `claude-code` dialect through the registry would let it (docs/dialects.md).
 *
 * The project's key index: a lineage `<namespace>.<h(projectKey)>` holding one
 * `claude_code_key` message per key ever written (`{sessionId, subpath?}`, appended once,
 * keyed), the only place the keys are kept in clear, since lineage ids hold their hashes.
 * Erasing a session leaves its key there (ids, no content); the listings skip keys without a
 * live lineage.
 *
 * `listSessions` reports a session's `mtime` as its lineage's creation time: the service keeps
 * no modification time that a client can list (the SDK only sorts by it).
 *
 * Only the SDK's types are imported: a service that does not use the SDK does not install it.
 */
import { createHash } from 'node:crypto';
import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { Message } from '../../compaction/dialects';
import { isJsonObject, type JsonObject } from '../../compaction/json';
import { HistoryMismatchError, InvalidInputError, SessionNotFoundError } from '../../errors';
import type { SessionsClient } from '../../client/sessions-client';

export interface LineageSessionStoreOptions {
  /**
   * The first part of every lineage id of this store (letters, digits, `_ : -`; 1 to 40
   * characters; default `claude-code`): stores with different namespaces never see each
   * other's sessions.
   */
  namespace?: string;
  /** The `source` of the lineages this store creates (default `claude-agent-sdk`), as the operator's listings filter them. */
  source?: string;
}

/** The block type an entry is stored in, and the one of the key index. */
const ENTRY_BLOCK = 'claude_code_entry';
const KEY_BLOCK = 'claude_code_key';
const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_:-]{0,39}$/;
/**
 * The largest append this store sends: half the service's default batch limits
 * (`MAX_BATCH_MESSAGES` 1,000, `MAX_BATCH_CHARS` 2,000,000), so that the SDK's batches (500
 * entries an import, of any size) fit. A larger batch goes in parts, in order.
 */
const MAX_PART_MESSAGES = 500;
const MAX_PART_CHARS = 1_000_000;
/** How many lineages a listing asks for at once (the operator's page maximum). */
const PAGE = 200;

/** A part of a key as a lineage id part: the first 96 bits of its SHA-256, in hex. */
const hashOf = (part: string) => createHash('sha256').update(part, 'utf8').digest('hex').slice(0, 24);

/**
 * The append key of a batch that holds an entry with a `uuid` (the SDK's idempotency key): the
 * hash of the whole batch, and the part's index. Such a batch is unique by that uuid, so the
 * same batch again is the SDK's retry, or an importSessionToStore() replay cut into the same
 * batches, and each of its parts is stored once. A batch of entries without uuids (titles,
 * tags) has none: appended without dedup.
 */
function batchKey(messages: readonly Message[], entries: readonly SessionStoreEntry[]): ((part: number) => string) | undefined {
  if (!entries.some((e) => typeof e.uuid === 'string' && e.uuid !== '')) return undefined;
  const hash = createHash('sha256').update(JSON.stringify(messages), 'utf8').digest('hex');
  return (part) => `batch:${hash}:${part}`;
}

/** The batch in parts of at most MAX_PART_MESSAGES messages and (but for a single larger message) MAX_PART_CHARS characters of JSON, in order. */
function partsOf(messages: readonly Message[]): Message[][] {
  const parts: Message[][] = [];
  let chars = 0;
  for (const message of messages) {
    const size = JSON.stringify(message).length;
    const last = parts.at(-1);
    if (last && last.length < MAX_PART_MESSAGES && chars + size <= MAX_PART_CHARS) {
      last.push(message);
      chars += size;
    } else {
      parts.push([message]);
      chars = size;
    }
  }
  return parts;
}

/** An entry as JSON (what is stored is what `load` returns: fields set to undefined are not kept), in its message. */
function wrap(entry: SessionStoreEntry): Message {
  if (!isJsonObject(entry) || typeof entry.type !== 'string') throw new InvalidInputError('entries', 'each entry must be an object with a string type');
  const json = JSON.parse(JSON.stringify(entry)) as JsonObject;
  return { role: entry.type === 'assistant' ? 'assistant' : 'user', content: [{ type: ENTRY_BLOCK, entry: json }] };
}

/** The block of a message this store wrote, or undefined for any other message. */
function blockOf(message: Message, type: string): Record<string, unknown> | undefined {
  const content = message.content;
  if (!Array.isArray(content) || content.length !== 1) return undefined;
  const block: unknown = content[0];
  return isJsonObject(block) && block.type === type ? block : undefined;
}

export class LineageSessionStore implements SessionStore {
  private readonly namespace: string;
  private readonly source: string;
  /** The lineages this store created or found (and indexed) already: the next append goes straight in. */
  private readonly ready = new Set<string>();

  constructor(
    private readonly client: SessionsClient,
    options: LineageSessionStoreOptions = {},
  ) {
    this.namespace = options.namespace ?? 'claude-code';
    if (!NAMESPACE_PATTERN.test(this.namespace))
      throw new InvalidInputError('namespace', 'must be 1 to 40 letters, digits, _ : or -, starting with a letter or digit');
    this.source = options.source ?? 'claude-agent-sdk';
  }

  /** The lineage id of a key: `<namespace>.<h(projectKey)>.<h(sessionId)>`, and `.<h(subpath)>` for a subagent's transcript. */
  lineageIdOf(key: SessionKey): string {
    checkKey(key);
    const session = `${this.projectPrefix(key.projectKey)}${hashOf(key.sessionId)}`;
    return key.subpath === undefined ? session : `${session}.${hashOf(key.subpath)}`;
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const lineageId = this.lineageIdOf(key);
    const messages = entries.map(wrap);
    await this.ensure(key, lineageId);
    const appendKey = batchKey(messages, entries);
    for (const [i, part] of partsOf(messages).entries()) await this.client.append(lineageId, part, { appendKey: appendKey?.(i) });
  }

  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const lineageId = this.lineageIdOf(key);
    const messages = await this.head(lineageId);
    if (messages.length === 0) return null;
    return messages.map((message, i) => {
      const block = blockOf(message, ENTRY_BLOCK);
      if (!block || !isJsonObject(block.entry))
        throw new HistoryMismatchError(
          lineageId,
          `message ${i} is not a Claude Code transcript entry (was the lineage compacted, or written by another client?)`,
        );
      return block.entry as SessionStoreEntry;
    });
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const keys = await this.indexedKeys(projectKey);
    const names = new Map(keys.filter((k) => k.subpath === undefined).map((k) => [hashOf(k.sessionId), k.sessionId]));
    const prefix = this.projectPrefix(projectKey);
    const sessions: Array<{ sessionId: string; mtime: number }> = [];
    for (const lineage of await this.liveLineages(prefix)) {
      const sessionId = names.get(lineage.lineageId.slice(prefix.length));
      if (sessionId !== undefined) sessions.push({ sessionId, mtime: Math.floor(Date.parse(lineage.createdAt)) });
    }
    return sessions;
  }

  async delete(key: SessionKey): Promise<void> {
    const lineageId = this.lineageIdOf(key);
    // The main transcript's key takes its subagents' transcripts with it (closed ones too: an erase stopped midway).
    const lineages = key.subpath === undefined ? [...(await this.lineagesUnder(`${lineageId}.`, false)).map((l) => l.lineageId), lineageId] : [lineageId];
    for (const id of lineages) {
      this.ready.delete(id);
      await this.client.deleteLineage(id).catch((error: unknown) => {
        // Never written, or erased already (by another process).
        if (!(error instanceof SessionNotFoundError)) throw error;
      });
    }
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const prefix = `${this.lineageIdOf(key)}.`;
    const keys = await this.indexedKeys(key.projectKey);
    const names = new Map(keys.filter((k) => k.sessionId === key.sessionId && k.subpath !== undefined).map((k) => [hashOf(k.subpath!), k.subpath!]));
    const subpaths: string[] = [];
    for (const lineage of await this.liveLineages(prefix)) {
      const subpath = names.get(lineage.lineageId.slice(prefix.length));
      if (subpath !== undefined) subpaths.push(subpath);
    }
    return subpaths;
  }

  /** `<namespace>.<h(projectKey)>.`: what every lineage id of the project starts with (the index is the same without the dot). */
  private projectPrefix(projectKey: string): string {
    return `${this.namespace}.${hashOf(projectKey)}.`;
  }

  /** The key's lineage, created (idempotently, without a compaction threshold) and its key indexed, once per store. */
  private async ensure(key: SessionKey, lineageId: string): Promise<void> {
    if (this.ready.has(lineageId)) return;
    const index = this.projectPrefix(key.projectKey).slice(0, -1);
    await this.client.createSession({ sessionId: index, dialect: 'anthropic', source: this.source });
    const entry = { type: KEY_BLOCK, sessionId: key.sessionId, ...(key.subpath === undefined ? {} : { subpath: key.subpath }) };
    // Indexed before it exists: a listing never meets a lineage it cannot name.
    await this.client.append(index, [{ role: 'user', content: [entry] }], { appendKey: `key:${lineageId.slice(index.length + 1)}` });
    await this.client.createSession({ sessionId: lineageId, dialect: 'anthropic', source: this.source });
    if (this.ready.size >= 10_000) this.ready.clear();
    this.ready.add(lineageId);
  }

  /** The head's messages, none for a lineage that does not exist. */
  private async head(lineageId: string): Promise<Message[]> {
    try {
      return (await this.client.transcript(lineageId)).messages;
    } catch (error) {
      if (error instanceof SessionNotFoundError) return [];
      throw error;
    }
  }

  /** The keys the project's index holds (each once). */
  private async indexedKeys(projectKey: string): Promise<Array<{ sessionId: string; subpath?: string }>> {
    const keys: Array<{ sessionId: string; subpath?: string }> = [];
    for (const message of await this.head(this.projectPrefix(projectKey).slice(0, -1))) {
      const block = blockOf(message, KEY_BLOCK);
      if (block && typeof block.sessionId === 'string')
        keys.push({ sessionId: block.sessionId, ...(typeof block.subpath === 'string' ? { subpath: block.subpath } : {}) });
    }
    return keys;
  }

  /** The live lineages whose id is `prefix` and one more part: a project's sessions, or a session's subagents. */
  private async liveLineages(prefix: string) {
    return (await this.lineagesUnder(prefix, true)).filter((l) => !l.lineageId.slice(prefix.length).includes('.'));
  }

  /** Every lineage whose id starts with `prefix` (live ones only, or closed ones too). */
  private async lineagesUnder(prefix: string, live: boolean) {
    const found = [];
    let after: string | undefined;
    do {
      const page = await this.client.operator.listLineages({
        search: prefix,
        limit: PAGE,
        ...(live ? { status: 'live' as const } : {}),
        ...(after ? { after } : {}),
      });
      found.push(...page.lineages.filter((l) => l.lineageId.startsWith(prefix)));
      after = page.next ?? undefined;
    } while (after !== undefined);
    return found;
  }
}

/** The SDK's key: a project and a session (non-empty strings), and a subpath that is absent or non-empty. */
function checkKey(key: { projectKey: unknown; sessionId: unknown; subpath?: unknown }): void {
  if (typeof key.projectKey !== 'string' || key.projectKey === '') throw new InvalidInputError('projectKey', 'must be a non-empty string');
  if (typeof key.sessionId !== 'string' || key.sessionId === '') throw new InvalidInputError('sessionId', 'must be a non-empty string');
  if (key.subpath !== undefined && (typeof key.subpath !== 'string' || key.subpath === ''))
    throw new InvalidInputError('subpath', 'must be a non-empty string, or absent for the main transcript');
}
