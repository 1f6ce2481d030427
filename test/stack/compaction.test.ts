/**
 * The core compaction path against the real Temporal dev server and real Postgres:
 * one workflow per lineage, rotation in one transaction, stale callers, refusals, focus
 * and force reaching the summariser, background requests that can never compact, audit rows.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundCompactionRejectedError, InvalidInputError, SessionNotFoundError } from '../../src/errors';
import { auditRows } from '../../src/db/session-store';
import { compactUpdate, lineageWorkflowId, stateQuery } from '../../src/workflows/contract';
import { openaiChat } from '../../src/compaction/dialects/openai-chat';
import { type ChatMessage, SUMMARY_MESSAGE_NAME } from '../../src/compaction/messages';
import { CompactionCount, SessionHead, SessionLineage, SessionSource } from '../../src/workflows/search-attributes';
import { childrenOf, conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

async function sessionWith(turns: number, options: { mode?: 'rotate' | 'in_place' } = {}) {
  const sessionId = uniqueId('s');
  await stack().client.createSession({ sessionId, source: 'discord', mode: options.mode });
  await stack().client.append(sessionId, conversation(turns));
  return sessionId;
}

describe('one workflow per lineage', () => {
  it('rotates the head into exactly one child, linked to its ended parent, in one transaction', async () => {
    const root = await sessionWith(12);
    const result = await stack().client.compact(root);

    expect(result.outcome).toBe('compacted');
    expect(result.previousSessionId).toBe(root);
    expect(result.sessionId).toBe(`${root}--g1`);
    expect(await childrenOf(stack(), root)).toEqual([result.sessionId]);

    const lineage = await stack().client.lineage(result.sessionId);
    expect(lineage.sessions.map((s) => s.sessionId)).toEqual([root, result.sessionId]);
    expect(lineage.sessions[0]).toMatchObject({ parentSessionId: null, endReason: 'compression' });
    expect(lineage.sessions[0].endedAt).not.toBeNull();
    expect(lineage.sessions[1]).toMatchObject({ parentSessionId: root, endedAt: null, endReason: null });
    // The compacted head holds the summary and is smaller than the parent.
    expect(result.messages.filter((m) => m.name === SUMMARY_MESSAGE_NAME)).toHaveLength(1);
    expect(result.messages.length).toBeLessThan(lineage.sessions[0].messageCount);
    const transcript = await stack().client.transcript(root);
    expect(transcript).toMatchObject({ sessionId: result.sessionId, dialect: 'openai-chat' });
    expect(result.messages).toEqual(transcript.messages);
    expect(transcript.seqs).toEqual(result.messages.map((_, i) => i + 1));
  });

  it('maps every session id of the lineage to the one workflow, which answers Updates and signals', async () => {
    const root = await sessionWith(12);
    const first = await stack().client.compact(root);
    const child = first.sessionId;
    expect((await stack().client.operator.workflowHandle(child)).workflowId).toBe(lineageWorkflowId(root));
    expect((await stack().client.operator.workflowHandle(root)).workflowId).toBe(lineageWorkflowId(root));

    await stack().client.append(root, conversation(12).slice(1)); // lands in the head
    const requestId = await stack().client.requestCompaction(child);
    const answer = await stack().client.waitForResult(child, requestId);
    expect(answer).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g2`, previousSessionId: child, requestId });
    const state = await (await stack().client.operator.workflowHandle(root)).query(stateQuery);
    expect(state).toMatchObject({ headSessionId: `${root}--g2`, generation: 2, compactions: 2, queue: [] });
  });

  it('answers a caller whose session is no longer the head with stale, the head and its transcript, without compacting', async () => {
    const root = await sessionWith(12);
    const first = await stack().client.compact(root);
    const callsBefore = stack().llm.requests.length;

    const stale = await stack().client.compact(root, { force: true });
    expect(stale.outcome).toBe('stale');
    expect(stale.sessionId).toBe(first.sessionId);
    expect(stale.messages).toEqual(first.messages);
    expect(stack().llm.requests.length).toBe(callsBefore);
    expect(await childrenOf(stack(), first.sessionId)).toEqual([]);
  });

  it('answers a retried request id with the first answer and never runs it twice', async () => {
    const root = await sessionWith(12);
    const requestId = uniqueId('req');
    const first = await stack().client.compact(root, { requestId });
    const again = await stack().client.compact(root, { requestId });
    expect(again).toMatchObject({ outcome: 'compacted', sessionId: first.sessionId, requestId });
    // compactAnswer is the same call without the read of the new head: the same answer, no transcript.
    const { messages, ...answer } = again;
    expect(messages.length).toBeGreaterThan(0);
    expect(await stack().client.compactAnswer(root, { requestId })).toEqual(answer);
    expect(stack().llm.requests).toHaveLength(1);
  });
});

describe('the Web UI view of a lineage', () => {
  it('is findable by search attributes and shows a summary, live details and described handlers', async () => {
    const root = await sessionWith(12);
    const { sessionId: child } = await stack().client.compact(root);
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(root));
    const description = await handle.describe();
    expect(await description.staticSummary()).toBe(`Session lineage ${root} (discord), rotate`);
    expect(description.typedSearchAttributes.get(SessionLineage)).toBe(root);
    expect(description.typedSearchAttributes.get(SessionHead)).toBe(child);
    expect(description.typedSearchAttributes.get(CompactionCount)).toBe(1);
    expect(description.typedSearchAttributes.get(SessionSource)).toBe('discord');

    // The UI's query box: visibility is eventually consistent, so poll briefly.
    let found: string[] = [];
    for (let i = 0; i < 50 && found.length === 0; i++) {
      found = [];
      for await (const wf of stack().temporal.workflow.list({ query: `SessionHead = "${child}" AND SessionSource = "discord"` })) found.push(wf.workflowId);
      if (found.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(found).toEqual([lineageWorkflowId(root)]);

    const metadata = (await handle.query('__temporal_workflow_metadata')) as {
      currentDetails: string;
      definition: { queryDefinitions: Array<{ name: string; description?: string }>; updateDefinitions: Array<{ name: string; description?: string }> };
    };
    expect(metadata.currentDetails).toContain(`**Head:** ${child} (generation 1, rotate)`);
    expect(metadata.currentDetails).toContain('**Queue:** 0 waiting');
    expect(metadata.currentDetails).toContain('**Last outcome:** compacted');
    expect(metadata.definition.queryDefinitions.find((q) => q.name === 'state')?.description).toMatch(/Head, generation, queue/);
    expect(metadata.definition.updateDefinitions.find((u) => u.name === 'compact')?.description).toBeTruthy();
  });
});

describe('refusals', () => {
  it('refuses a summary that does not shrink the transcript: no rotation, reason given', async () => {
    const root = await sessionWith(12);
    stack().llm.script({ text: 'an unhelpfully long summary. '.repeat(2000) });
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('refused');
    expect(result.reason).toMatch(/would not be smaller/);
    expect(result.sessionId).toBe(root);
    expect(await childrenOf(stack(), root)).toEqual([]);
    expect(result.messages).toHaveLength(1 + 12 * 4);
  });

  it('refuses when there is nothing between the kept head and tail', async () => {
    const root = uniqueId('s');
    await stack().client.createSession({ sessionId: root });
    await stack().client.append(root, [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);
    const result = await stack().client.compact(root);
    expect(result).toMatchObject({ outcome: 'refused', sessionId: root });
    expect(result.reason).toMatch(/nothing to summarise/);
    expect(stack().llm.requests).toHaveLength(0);
  });
});

describe('the summariser request', () => {
  it('passes focusTopic and force to the summariser', async () => {
    const root = await sessionWith(12);
    await stack().client.compact(root, { focusTopic: 'the billing migration', force: true });
    expect(stack().llm.requests).toHaveLength(1);
    const prompt = stack()
      .llm.requests[0].body.messages.map((m) => m.content)
      .join('\n');
    expect(prompt).toContain('Focus the summary on: the billing migration');
    expect(prompt).toContain('This compaction was forced by the caller');
  });

  it('keeps a real user message and whole tool groups even when the summary has none', async () => {
    const root = uniqueId('s');
    await stack().client.createSession({ sessionId: root });
    // One user request followed by a long agent loop of tool calls: the tail holds no user turn.
    const loop: Array<Record<string, unknown>> = [
      { role: 'system', content: 'agent' },
      { role: 'user', content: 'Migrate every module to the new logger, please.' },
    ];
    for (let i = 0; i < 30; i++) {
      loop.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'edit', arguments: `{"file":"m${i}.ts"}` } }],
      });
      loop.push({ role: 'tool', tool_call_id: `c${i}`, content: `m${i}.ts migrated. `.repeat(10) });
    }
    await stack().client.append(root, loop);
    stack().llm.script({ text: 'Goal: migrate modules. Completed: 28 modules.' });
    const result = await stack().client.compact(root, { force: true });
    expect(result.outcome).toBe('compacted');
    const users = result.messages.filter((m) => openaiChat.isRealUserRequest(m));
    expect(users).toEqual([{ role: 'user', content: 'Migrate every module to the new logger, please.' }]);
    for (let i = 1; i < result.messages.length; i++) {
      expect(result.messages[i].role === 'user' && result.messages[i - 1].role === 'user').toBe(false);
    }
    const messages = result.messages as ChatMessage[];
    const callIds = new Set(messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
    const resultIds = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
    expect([...resultIds].every((id) => callIds.has(id!))).toBe(true);
    expect([...callIds].every((id) => resultIds.has(id))).toBe(true);
  });
});

describe('background requests', () => {
  it('are rejected by the Update validator before they reach history', async () => {
    const root = await sessionWith(12);
    await expect(stack().client.compact(root, { background: true })).rejects.toBeInstanceOf(BackgroundCompactionRejectedError);
    // Straight to the workflow, past the client library's own check:
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(root));
    await expect(handle.executeUpdate(compactUpdate, { args: [{ sessionId: root, background: true }] })).rejects.toMatchObject({
      cause: { type: 'BackgroundCompactionRejectedError', message: expect.stringMatching(/background request may not compact/) },
    });
    const history = await handle.fetchHistory();
    const updateEvents = (history.events ?? []).filter(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes || e.workflowExecutionUpdateCompletedEventAttributes,
    );
    expect(updateEvents).toHaveLength(0);
    expect(stack().llm.requests).toHaveLength(0);
  });

  it('are ignored as signals and never compact', async () => {
    const root = await sessionWith(12);
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(root));
    await handle.signal('requestCompaction', { sessionId: root, background: true, requestId: 'bg-1' });
    await handle.signal('requestCompaction', { sessionId: 42 });
    // A normal request afterwards proves the workflow processed both signals first.
    const result = await stack().client.compact(root);
    expect(result.outcome).toBe('compacted');
    expect(stack().llm.requests).toHaveLength(1);
    expect(await handle.query('requestResult', 'bg-1')).toBeNull();
  });

  it('bad requests get typed errors and write nothing', async () => {
    await expect(stack().client.compact('no-such-session')).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(stack().client.compact('bad id!')).rejects.toBeInstanceOf(InvalidInputError);
    const root = await sessionWith(2);
    const handle = stack().temporal.workflow.getHandle(lineageWorkflowId(root));
    await expect(handle.executeUpdate(compactUpdate, { args: [{ sessionId: root, focusTopic: 7 } as never] })).rejects.toMatchObject({
      cause: { type: 'InvalidInputError', message: expect.stringMatching(/focusTopic/) },
    });
    await expect(handle.executeUpdate(compactUpdate, { args: [{ sessionId: 'other-lineage' }] })).rejects.toMatchObject({
      cause: { type: 'InvalidInputError', message: expect.stringMatching(/^invalid sessionId: session other-lineage does not belong to lineage /) },
    });
  });
});

describe('audit', () => {
  it('leaves one row per compaction attempt with its outcome and figures', async () => {
    const root = await sessionWith(12);
    stack().llm.script({ text: 'x '.repeat(20000) });
    await stack().client.compact(root, { requestId: 'r-refused' });
    const done = await stack().client.compact(root, { requestId: 'r-ok', focusTopic: 'tests' });
    await stack().client.compact(root, { requestId: 'r-stale' });

    const rows = await auditRows(stack().db.db, root);
    expect(rows.map((r) => r.outcome)).toEqual(['refused', 'compacted']);
    const [refused, compacted] = rows;
    expect(refused).toMatchObject({ lineageId: root, parentSessionId: root, requestIds: ['r-refused'], trigger: 'update', model: 'fake-model' });
    expect(refused.reason).toMatch(/not be smaller/);
    expect(compacted).toMatchObject({
      parentSessionId: root,
      childSessionId: done.sessionId,
      generation: 1,
      requestIds: ['r-ok'],
      messagesBefore: 49,
      attempts: 1,
    });
    expect(compacted.tokensAfter!).toBeLessThan(compacted.tokensBefore!);
    expect(compacted.messagesAfter).toBe(done.messages.length);
    // What the local LLM reported for the summary of this job (the last request it answered).
    expect(compacted.summariserPromptTokens).toBe(stack().llm.requests.at(-1)!.usage.prompt_tokens);
    expect(compacted.finishedAt!.getTime()).toBeGreaterThanOrEqual(compacted.startedAt.getTime());
    expect(await stack().client.operator.audit()).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0 });
  });
});
