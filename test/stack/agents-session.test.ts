/**
 * CompactingSession (src/client/agents-session.ts): the OpenAI Agents SDK's `Session` over a
 * lineage, on the real stack.
 *
 * - The transaction semantics the SDK pins for its reference session (MemorySession):
 *   an `append_items` sent again is stored once; `replace_suffix` replaces exactly its suffix,
 *   atomically; a suffix that does not match fails and changes nothing; an operation id used
 *   for another transaction fails; popItem and clearSession as the SDK documents them, on one
 *   lineage that never forks.
 * - A message taken back while a compaction summarises does not come back with its commit.
 * - The SDK's own Runner and Responses model (test/support/agents-runner.ts) against the
 *   strict Responses fake, many turns with tool calls, compactions landing between the runs'
 *   model calls, and a second runner in a second process on the same conversation: the
 *   provider rejects none of the requests (and does reject a broken one), each request holds
 *   the run's request, and every item of the head is one an agent stored, or the summary.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { AgentInputItem, Session } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompactingSession } from '../../src/client/agents-session';
import { dialectOf, type Message } from '../../src/compaction/dialects';
import { canonicalJson, jsonEqual } from '../../src/compaction/json';
import { PROJECT_ROOT } from '../../src/config';
import { auditRows } from '../../src/db/session-store';
import { HistoryMismatchError, InvalidInputError } from '../../src/errors';
import { toAgentsItems } from '../support/agents-items';
import { runTurns, scriptedAgent } from '../support/agents-runner';
import { messyTranscript } from '../support/messy';
import { uniqueId, useTestStack } from '../support/stack';
import { strictProviderCheck } from '../support/strict-check';
import { startStrictResponses, type StrictResponsesProvider } from '../support/strict-responses';

const stack = useTestStack();
const agents = dialectOf('openai-agents');

const user = (text: string): AgentInputItem => ({ role: 'user', content: text });
const items = (session: CompactingSession) => session.getItems() as Promise<Message[]>;

describe('the transaction semantics of the SDK reference session', () => {
  it('append_items is stored once per operation id; reusing the id for other content fails', async () => {
    const session = await CompactingSession.open(stack().client, uniqueId('agents-tx'));
    const batch = toAgentsItems(messyTranscript('openai-responses', 3, 2)) as unknown as AgentInputItem[];
    await session.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'append_items', items: batch } });
    await session.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'append_items', items: batch } });
    expect(await items(session)).toHaveLength(batch.length);
    (await items(session)).forEach((m, i) => expect(jsonEqual(m, JSON.parse(JSON.stringify(batch[i])))).toBe(true));
    await expect(session.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'append_items', items: [user('other')] } })).rejects.toThrow(
      InvalidInputError,
    );
    // The same id for a replace is another transaction too.
    await expect(
      session.applyHistoryTransaction({ operationId: 'op-1', transaction: { type: 'replace_suffix', expectedSuffix: [], replacement: [user('x')] } }),
    ).rejects.toThrow(InvalidInputError);
    await expect(session.applyHistoryTransaction({ operationId: ' ', transaction: { type: 'append_items', items: [user('x')] } })).rejects.toThrow(
      InvalidInputError,
    );
    expect(await items(session)).toHaveLength(batch.length);
  });

  it('replace_suffix replaces exactly its suffix, once; a suffix that does not match changes nothing', async () => {
    const session = await CompactingSession.open(stack().client, uniqueId('agents-suffix'));
    const a = user('first'),
      b = { type: 'function_call', callId: 'call_1', name: 'grep', arguments: '{"q":"x"}', status: 'completed' } as AgentInputItem,
      c = {
        type: 'function_call_result',
        callId: 'call_1',
        name: 'grep',
        status: 'completed',
        output: { type: 'text', text: '{"hits":[]}' },
      } as AgentInputItem;
    await session.addItems([a, b, c]);
    const before = await items(session);
    const replacement = [b, { ...c, output: { type: 'text', text: '{"hits":[1]}' } } as AgentInputItem];
    await expect(
      session.applyHistoryTransaction({ operationId: 'r-0', transaction: { type: 'replace_suffix', expectedSuffix: [a, c], replacement } }),
    ).rejects.toThrow(HistoryMismatchError);
    await expect(
      session.applyHistoryTransaction({ operationId: 'r-0', transaction: { type: 'replace_suffix', expectedSuffix: [user('z'), a, b, c], replacement } }),
    ).rejects.toThrow(HistoryMismatchError);
    expect(await items(session)).toEqual(before);

    const op = { operationId: 'r-1', transaction: { type: 'replace_suffix' as const, expectedSuffix: [b, c], replacement } };
    await session.applyHistoryTransaction(op);
    const after = await items(session);
    expect(after).toEqual(JSON.parse(JSON.stringify([a, ...replacement])));
    // Sent again (a retry after a lost answer), it is answered, not applied twice.
    await session.applyHistoryTransaction(op);
    expect(await items(session)).toEqual(after);
    // An empty append records its id too.
    await session.applyHistoryTransaction({ operationId: 'e-1', transaction: { type: 'append_items', items: [] } });
    await expect(session.applyHistoryTransaction({ operationId: 'e-1', transaction: { type: 'append_items', items: [a] } })).rejects.toThrow(InvalidInputError);
    const audit = await stack().client.operator.auditLineage(await session.getSessionId());
    expect([audit.forks, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0]);
  });

  it('popItem takes back the last item and returns it; clearSession forgets items and operation ids; getItems(limit) reads the end', async () => {
    const id = uniqueId('agents-pop');
    const session = await CompactingSession.open(stack().client, id);
    await session.addItems([user('one'), user('two'), user('three')]);
    expect(await session.getItems(2)).toEqual([user('two'), user('three')]);
    expect(await session.getItems(0)).toEqual([]);
    expect(await session.popItem()).toEqual(user('three'));
    expect(await session.getItems()).toEqual([user('one'), user('two')]);
    await session.applyHistoryTransaction({ operationId: 'c-1', transaction: { type: 'append_items', items: [user('keyed')] } });
    await session.clearSession();
    expect(await session.getItems()).toEqual([]);
    expect(await session.popItem()).toBeUndefined();
    // Cleared, the session forgets its operation ids too (as the SDK's reference session does).
    await session.applyHistoryTransaction({ operationId: 'c-1', transaction: { type: 'append_items', items: [user('again')] } });
    expect(await session.getItems()).toEqual([user('again')]);
    const lineage = await stack().client.lineage(id);
    expect(lineage.sessions).toHaveLength(1);
    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.lostMessages, audit.sequenceGaps]).toEqual([0, 0, 0]);
  });

  it('getItems returns the items as stored, ids included; only a turn cut off from its reasoning goes to the model without them', async () => {
    const session = await CompactingSession.open(stack().client, uniqueId('agents-ids'));
    const stored = [
      user('Rename loadConfig.'),
      { type: 'reasoning', id: 'rs_1', content: [{ type: 'input_text', text: 'Find it first.' }] },
      { type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: 'Renamed.' }] },
      user('And the tests?'),
      // A non-reasoning model's turn: no reasoning item, and its ids are what the API issued.
      { type: 'function_call', id: 'fc_2', callId: 'call_2', name: 'run_tests', arguments: '{"filter":"config"}', status: 'completed' },
      { type: 'function_call_result', callId: 'call_2', name: 'run_tests', status: 'completed', output: { type: 'text', text: '{"passed":12,"failed":0}' } },
      { type: 'message', role: 'assistant', id: 'msg_2', status: 'completed', content: [{ type: 'output_text', text: 'All green.' }] },
    ] as AgentInputItem[];
    await session.addItems(stored);
    const all = await session.getItems();
    expect(all).toEqual(JSON.parse(JSON.stringify(stored)));
    // Whole turns go to the model as stored, ids included (the SDK's hook changes nothing).
    expect(all.map((item) => session.prepareHistoryItemForModelInput(item))).toEqual(all);
    // A limit that cuts the first turn after its reasoning: that turn's message loses its id
    // on the way to the model (RS-4), in the session it keeps it; the later turn keeps its ids.
    const cut = await session.getItems(5);
    expect((cut[0] as { id?: string }).id).toBe('msg_1');
    const sent = cut.map((item) => session.prepareHistoryItemForModelInput(item));
    expect(sent[0]).toEqual((({ id: _id, ...rest }) => rest)(cut[0] as AgentInputItem & { id: string }));
    expect(sent.slice(1)).toEqual(cut.slice(1));
    // The provider view for callers who send the head themselves still drops every such id.
    const provider = (await stack().client.transcript(await session.getSessionId(), { for: 'provider' })).messages;
    expect(provider[4]).not.toHaveProperty('id');
  });

  it('a message taken back while a compaction summarises does not come back with its commit', async () => {
    const id = uniqueId('agents-pop-race');
    const session = await CompactingSession.open(stack().client, id);
    const transcript = toAgentsItems(messyTranscript('openai-responses', 5, 10));
    const last = user('the request that is taken back');
    await session.addItems([...transcript, last] as unknown as AgentInputItem[]);
    stack().llm.setDefault({ delayMs: 2_000 });
    const asked = stack().llm.requests.length;
    const compacting = stack().client.compact(id, { force: true });
    // Taken back once the summariser has the snapshot (its request arrived): a condition, not a sleep.
    await stack().llm.waitForRequests(asked + 1, 30_000);
    expect(await session.popItem()).toEqual(last);
    const result = await compacting;
    expect(result.outcome, result.reason).toBe('stale');
    expect(result.reason).toMatch(/taken back/);
    const head = await items(session);
    expect(head.some((m) => jsonEqual(m, last as Message))).toBe(false);
    expect(head).toHaveLength(transcript.length);
    // The lineage compacts on afterwards.
    stack().llm.setDefault({ delayMs: 0 });
    expect((await stack().client.compact(id, { force: true })).outcome).toBe('compacted');
    expect((await items(session)).some((m) => jsonEqual(m, last as Message))).toBe(false);
  });
});

describe('the SDK Runner on a compacting session', () => {
  let responses: StrictResponsesProvider;
  beforeAll(async () => {
    responses = await startStrictResponses({ seed: 21, largeArgumentsChance: 0.2 });
  });
  afterAll(async () => {
    await responses.close();
  });

  /** The session as the runner sees it, with every item it stores recorded. */
  const recorded = (session: CompactingSession, ledger: Message[]): Session =>
    new Proxy(session, {
      get(target, prop, receiver) {
        if (prop === 'addItems')
          return async (added: AgentInputItem[]) => {
            await target.addItems(added);
            ledger.push(...(JSON.parse(JSON.stringify(added)) as Message[]));
          };
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });

  it('runs many turns with tool calls, compactions between model calls and a second runner in another process: no request rejected, no fork', async () => {
    const id = uniqueId('agents-run');
    const compactAt = 4_000;
    const session = await CompactingSession.open(stack().client, id, { compactAtTokens: compactAt });
    const ledger: Message[] = [];
    const agent = scriptedAgent(responses.url, 'agent-model');

    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/support/agents-runner.ts'), id, responses.url, 'agent-model', '4'],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, ...stack().env, AGENTS_COMPACT_AT: String(compactAt) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const childDone = new Promise<number | null>((resolve) => child.once('exit', resolve));

    const started = Date.now();
    const requests = await runTurns(agent, recorded(session, ledger), 8, 'parent');
    expect(await childDone, output).toBe(0);
    const childReport = JSON.parse(output.trim().split('\n').at(-1)!) as { turns: number; requests: number };

    // The provider saw every request of both runners and refused none.
    const agentRequests = responses.requests.filter((r) => r.caller === 'agent');
    expect(agentRequests.length).toBe(agent.model.inputs.length + childReport.requests);
    expect(agent.model.inputs.length).toBeGreaterThan(8);
    expect(responses.rejections, JSON.stringify(responses.rejections.slice(0, 2))).toEqual([]);
    // Each request of a run holds that run's request, verbatim.
    let turn = 0;
    const says = (m: AgentInputItem, text: string) => {
      const { role, content } = m as { role?: string; content?: unknown };
      return role === 'user' && (content === text || (Array.isArray(content) && content.some((p: { text?: string }) => p.text === text)));
    };
    for (const input of agent.model.inputs) {
      while (turn + 1 < requests.length && input.some((m) => says(m, requests[turn + 1]))) turn++;
      expect(input.some((m) => says(m, requests[turn]))).toBe(true);
    }

    // Compactions landed while the runs were going on, in the service.
    const rows = (await auditRows(stack().db.db, id)).filter((r) => r.outcome === 'compacted');
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(rows.some((r) => r.startedAt.getTime() > started)).toBe(true);

    // Every item of the head is one a runner stored (either process: the child's are its
    // own script's ids), or the service's summary; and the head is one the provider takes.
    const head = await items(session);
    const stored = new Set(ledger.map(canonicalJson));
    const mine = head.filter((m) => !agents.isSummary(m) && stored.has(canonicalJson(m)));
    expect(mine.length).toBeGreaterThan(0);
    expect(await strictProviderCheck('openai-agents', head)).toBeUndefined();
    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0]);
    console.log(
      `agents-session: ${requests.length}+${childReport.turns} turns, ${agent.model.inputs.length}+${childReport.requests} model requests, ` +
        `${rows.length} compactions, ${responses.rejections.length} rejected, ${audit.forks} forks`,
    );
  });

  it('the strict check refuses what the SDK would send for a broken head (so 0 could have been otherwise)', async () => {
    const orphan = [{ type: 'function_call_result', callId: 'call_9', name: 'grep', status: 'completed', output: { type: 'text', text: '{}' } }];
    expect(await strictProviderCheck('openai-agents', orphan)).toMatch(/RS-1 .*call_9/);
  });
});
