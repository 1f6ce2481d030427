/**
 * The fork the reference agent suffered, attempted every way we can think of, against the
 * real Temporal server and Postgres: concurrent Updates and signals for one head, two
 * independent client processes racing, and writers that bypass the workflow entirely.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { SessionsClient } from '../src/client';
import { childrenOf, conversation, uniqueId, useTestStack } from './support/stack';

const stack = useTestStack();


async function newSession(): Promise<string> {
  const sessionId = uniqueId('c');
  await stack().client.createSession({ sessionId, source: 'slack' });
  await stack().client.append(sessionId, conversation(15));
  return sessionId;
}

describe('concurrent compactions of one head', () => {
  it('50 requests at once, Updates and signals mixed: one rotation, every caller gets the committed result', async () => {
    const root = await newSession();
    // A summary that takes a while, as a real one does: every request arrives while it runs.
    stack().llm.setDefault({ delayMs: 1500 });
    const updates: Array<Promise<Awaited<ReturnType<SessionsClient['compact']>>>> = [];
    const signalIds: Array<Promise<string>> = [];
    for (let i = 0; i < 50; i++) {
      if (i % 3 === 2) signalIds.push(stack().client.requestCompaction(root, { requestId: `sig-${i}` }));
      else updates.push(stack().client.compact(root, { requestId: `upd-${i}` }));
    }
    const answers = await Promise.all(updates);
    // More Updates than the server admits at once (10): the rest went by signal, unseen by callers.
    expect(stack().client.stats.updateLimitFallbacks).toBeGreaterThan(0);
    const child = `${root}--g1`;
    expect(answers).toHaveLength(34);
    for (const answer of answers) {
      expect(answer).toMatchObject({ outcome: 'compacted', sessionId: child, previousSessionId: root, generation: 1 });
    }
    expect(new Set(answers.map((a) => JSON.stringify(a.messages))).size).toBe(1);
    for (const requestId of await Promise.all(signalIds)) {
      expect(await stack().client.waitForResult(root, requestId)).toMatchObject({ outcome: 'compacted', sessionId: child });
    }
    expect(await childrenOf(stack(), root)).toEqual([child]);
    expect(stack().llm.requests).toHaveLength(1);
    expect(await stack().client.audit()).toMatchObject({ forks: 0, orphans: 0, writesAfterEnd: 0 });
  });

  it('two independent clients (the reference incident: main turn and review fork) rotate at most once', async () => {
    const root = await newSession();
    stack().llm.setDefault({ delayMs: 300 });
    const other = await SessionsClient.connect({ config: stack().config });
    try {
      const [a, b] = await Promise.all([stack().client.compact(root), other.compact(root)]);
      expect(a.sessionId).toBe(b.sessionId);
      expect(await childrenOf(stack(), root)).toEqual([a.sessionId]);
      expect([a.outcome, b.outcome]).toEqual(['compacted', 'compacted']);
    } finally {
      await other.close();
    }
  });

  it('requests for successive heads run one after another, each on the head it names', async () => {
    const root = await newSession();
    const first = await stack().client.compact(root);
    await stack().client.append(first.sessionId, conversation(15).slice(1));
    const [second, late] = await Promise.all([stack().client.compact(first.sessionId), stack().client.compact(root)]);
    expect(second).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g2`, previousSessionId: first.sessionId });
    expect(late.outcome).toBe('stale');
    expect(await childrenOf(stack(), root)).toEqual([first.sessionId]);
    expect(await childrenOf(stack(), first.sessionId)).toEqual([second.sessionId]);
  });
});

describe('writers that bypass the workflow', () => {
  it('cannot give a parent a second child', async () => {
    const root = await newSession();
    const { sessionId: child } = await stack().client.compact(root);
    await expect(
      stack().db.db.execute(sql`insert into sessions (id, lineage_id, parent_session_id, generation) values (${`${root}-rogue`}, ${root}, ${root}, 1)`),
    ).rejects.toMatchObject({ cause: { constraint: 'sessions_one_child_per_parent' } });
    expect(await childrenOf(stack(), root)).toEqual([child]);
  });

  it('cannot write into an ended session', async () => {
    const root = await newSession();
    await stack().client.compact(root);
    await expect(
      stack().db.db.execute(sql`insert into messages (session_id, seq, role, content, token_estimate) values (${root}, 1000, 'user', '"late"', 3)`),
    ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/has ended/) } });
  });

  it('an append addressed to the rotated parent lands in the head', async () => {
    const root = await newSession();
    const { sessionId: head } = await stack().client.compact(root);
    const appended = await stack().client.append(root, [{ role: 'user', content: 'written to the old id' }]);
    expect(appended.sessionId).toBe(head);
    expect((await stack().client.transcript(head)).messages.at(-1)).toMatchObject({ role: 'user', content: 'written to the old id' });
  });
});
