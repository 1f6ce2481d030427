/**
 * lineageMiddleware (src/adapters/langchain/middleware.ts): LangChain v1's `createAgent` over a
 * lineage, on the real stack. A scripted chat model (no network, test/support/langchain-agent.ts)
 * runs many turns with parallel and single tool calls; the lineage compacts at a low threshold
 * and, forced from inside a tool, in the middle of a turn's tool loop; a second agent in another
 * process continues the conversation. Every request the model receives, converted as
 * `@langchain/openai` sends it, is accepted by the strict fake of the OpenAI chat API; every user
 * input is in the lineage; the second agent's model is handed the compacted head; the audit
 * finds no fork.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { lineageMiddleware, toChatMessage } from '../../src/adapters/langchain';
import { PROJECT_ROOT } from '../../src/config';
import { auditRows, sessionMessages } from '../../src/db/session-store';
import { isSummary, type Request, runTurns } from '../support/langchain-agent';
import { uniqueId, useTestStack } from '../support/stack';
import { validateChatRequest } from '../support/strict-provider';

const stack = useTestStack();

describe('lineageMiddleware on createAgent', () => {
  it('stores a step run again once (its append key is its messages ids), and the head it put in the state never again', async () => {
    const id = uniqueId('lc-retry');
    const middleware = lineageMiddleware({ sessions: stack().client, sessionId: id });
    const beforeModel = middleware.beforeModel as (state: { messages: BaseMessage[] }, runtime: unknown) => Promise<{ messages: BaseMessage[] }>;
    const step = [new HumanMessage({ id: 'h-1', content: 'What changed?' })];
    await beforeModel({ messages: step }, {});
    const again = await beforeModel({ messages: step }, {});
    const head = await stack().client.transcript(id);
    expect(head.messages).toEqual([{ role: 'user', content: 'What changed?' }]);
    // The state becomes the head: messages the middleware knows the lineage holds.
    expect(again.messages.slice(1).map(toChatMessage)).toEqual(head.messages);
    // Passed again with a new message (a previous result's messages, then the next input),
    // the head's messages are known by their ids: only the new one is stored.
    const next = await beforeModel({ messages: [...again.messages.slice(1), new HumanMessage({ id: 'h-2', content: 'And then?' })] }, {});
    expect((await stack().client.transcript(id)).messages).toEqual([...head.messages, { role: 'user', content: 'And then?' }]);
    // The head's ids are the same on every read while its messages stay.
    expect(next.messages[1].id).toBe(again.messages[1].id);
  });

  it('runs many turns with tool calls, compactions mid-loop and a second agent in another process: no request rejected, every input kept, no fork', async () => {
    const id = uniqueId('lc-agent');
    const compactAt = 3_000;
    let forceOnTurn = false;
    const forced: string[] = [];
    const compactNow = async () => {
      if (!forceOnTurn) return;
      forceOnTurn = false;
      // Against the head; a threshold compaction that committed first makes it stale: once more against the new head.
      for (let attempt = 0; attempt < 3; attempt++) {
        const result = await stack().client.compact((await stack().client.lineage(id)).headSessionId, { force: true });
        forced.push(`${result.outcome} ${result.reason ?? ''}`);
        if (result.outcome !== 'stale') return;
      }
    };
    const started = Date.now();

    const first = await runTurns(stack().client, id, {
      label: 'first',
      turns: 10,
      compactAt,
      compactNow,
      beforeTurn: (turn) => (forceOnTurn = turn % 3 === 0),
    });
    // A second agent, in another process with its own client, continues the conversation.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(PROJECT_ROOT, 'test/support/langchain-agent.ts'), id, 'second', '3', String(compactAt)],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, ...stack().env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    expect(await new Promise<number | null>((resolve) => child.once('exit', resolve)), output).toBe(0);
    const second = JSON.parse(output.trim().split('\n').at(-1)!) as Awaited<ReturnType<typeof runTurns>>;
    const inputs = [...first.inputs, ...second.inputs];

    const requests = [...first.requests, ...second.requests];
    const rejected = requests.filter((r) => r.rejection !== null);
    expect(rejected.map((r) => r.rejection)).toEqual([]);
    // And the strict fake does refuse a broken request (so 0 could have been otherwise).
    expect(validateChatRequest({ model: 'agent-model', messages: [{ role: 'tool', tool_call_id: 'call_9', content: '{}' }] })).not.toBeNull();
    expect(first.requests).toHaveLength(30);
    expect(second.requests).toHaveLength(9);

    // Compactions landed while the agents ran, some inside a turn's tool loop: a request that
    // holds a summary the turn's previous request did not (it landed between two model calls of one turn).
    expect(forced.filter((o) => o.startsWith('compacted')).length, forced.join()).toBe(3);
    const compactions = (await auditRows(stack().db.db, id)).filter((r) => r.outcome === 'compacted');
    expect(compactions.length).toBeGreaterThanOrEqual(3);
    expect(compactions.every((r) => r.startedAt.getTime() > started)).toBe(true);
    const summaryOf = (r: Request) => r.messages.find(isSummary)?.content ?? null;
    const midLoop = first.requests.filter((r, i) => i > 0 && r.messages.at(-1)?.role === 'tool' && summaryOf(r) !== summaryOf(first.requests[i - 1]));
    expect(midLoop.length).toBeGreaterThanOrEqual(1);
    // The second agent's model was handed the compacted head from its first request: the
    // summary, not the first agent's whole history.
    expect(second.requests[0].messages.some(isSummary)).toBe(true);
    expect(second.requests[0].messages.filter((m) => m.role === 'user').length).toBeLessThan(first.inputs.length);

    // Every user input is in the lineage (live or archived by a compaction), verbatim.
    const lineage = await stack().client.lineage(id);
    const stored = (await Promise.all(lineage.sessions.map((s) => sessionMessages(stack().db.db, s.sessionId, { includeArchived: true })))).flat();
    const said = new Set(
      stored
        .map((m) => m.body)
        .filter((b) => b.role === 'user')
        .map((b) => b.content),
    );
    expect(inputs.filter((input) => !said.has(input))).toEqual([]);
    // The head ends with the second agent's last answer (named after the agent's node, as
    // createAgent names its model's messages); it is one the provider takes.
    const head = (await stack().client.transcript(id)).messages;
    expect(head.at(-1)).toEqual({ role: 'assistant', content: `Done: ${inputs.at(-1)}`, name: 'model' });
    expect(validateChatRequest({ model: 'agent-model', messages: head })).toBeNull();

    const audit = await stack().client.operator.auditLineage(id);
    expect([audit.forks, audit.orphans, audit.lostMessages, audit.duplicatedMessages, audit.sequenceGaps]).toEqual([0, 0, 0, 0, 0]);
    console.log(
      `langchain-middleware: 10+3 turns (two processes), ${first.requests.length}+${second.requests.length} model requests, ${compactions.length} compactions ` +
        `(${midLoop.length} landed mid-loop, ${forced.filter((o) => o.startsWith('compacted')).length} forced from a tool), ${rejected.length} rejected, ${audit.forks} forks`,
    );
  });
});
