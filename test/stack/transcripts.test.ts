/**
 * The data plane: appends go to Postgres and always land in the head, never into an ended
 * session; writes made while a summary is in flight are carried into the new head; in-place
 * mode; validation; and an audit that really detects loss. (The threshold policy: auto-compaction.test.ts.)
 */
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dialectOf, type Message } from '../../src/compaction/dialects';
import type { GateReport } from '../../src/compaction/gates';
import { beginJob, commitCompaction } from '../../src/db/session-store';
import { InvalidInputError, SessionConflictError, SessionNotFoundError } from '../../src/errors';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { AppendLedger, ledgerProblems } from '../support/ledger';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();

const rowsOf = async (query: ReturnType<typeof sql>) => (await stack().db.db.execute(query)).rows as Array<Record<string, any>>;

describe('transcripts stay out of workflow history', () => {
  it('a 10,000-message session compacts with the same history size as a 100-message one', async () => {
    const sizes: number[] = [];
    for (const [id, count] of [
      ['size-a', 100],
      ['size-b', 10_000],
    ] as const) {
      await stack().client.createSession({ sessionId: id });
      const all = Array.from({ length: count }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `message ${i}: ${'lorem ipsum '.repeat(6)}` }));
      for (let i = 0; i < all.length; i += 1000) await stack().client.append(id, all.slice(i, i + 1000));
      stack().llm.script({ text: 'Goal: keep going. Completed: a great deal.' });
      expect((await stack().client.compact(id, { requestId: 'same-length-id' })).outcome).toBe('compacted');
      const history = await stack().temporal.workflow.getHandle(lineageWorkflowId(id)).fetchHistory();
      sizes.push(historyToJSON(history).length);
    }
    // Only the digits of counts in the result (messages and tokens before) may differ.
    expect(Math.abs(sizes[1] - sizes[0])).toBeLessThan(100);
  });
});

/** Writers append continuously while compactions run; returns every acknowledged marker. */
async function appendWhileCompacting(root: string, compactions: number, ledger: AppendLedger) {
  const acked: string[] = [];
  let writing = true;
  const writer = async (w: number) => {
    for (let n = 0; writing; n++) {
      const marker = `w${w}-${n}`;
      const batch = [
        { role: 'user', content: `${marker} please continue` },
        { role: 'assistant', content: `ack ${marker}` },
      ];
      ledger.record(root, batch, await stack().client.append(root, batch));
      acked.push(marker);
    }
  };
  const writers = [0, 1, 2].map(writer);
  let committed = 0;
  for (let i = 0; i < compactions * 3 && committed < compactions; i++) {
    const head = (await stack().client.transcript(root)).sessionId;
    const result = await stack().client.compact(head, { force: true });
    if (result.outcome === 'compacted') committed++;
  }
  writing = false;
  await Promise.all(writers);
  return { acked, committed };
}

async function expectNothingLost(root: string, acked: string[], ledger: AppendLedger) {
  // The test's own ledger: every acknowledged message live once in the head, or inside a
  // committed summarised range and sent to the summariser.
  const own = await ledger.check(stack().db.pool, { prompts: AppendLedger.prompts(stack().llm.requests) });
  expect(ledgerProblems(own)).toEqual([]);
  expect(own.summarised).toBeGreaterThan(0);
  const report = await stack().client.operator.audit();
  expect(report).toMatchObject({ lostMessages: 0, duplicatedMessages: 0, sequenceGaps: 0, forks: 0, orphans: 0, writesAfterEnd: 0 });
  // Independently of the audit: each acknowledged append is in the database exactly once as
  // an appended row, and the head's carried or appended rows are in append order.
  const appended = await rowsOf(sql`
    select m.body->>'content' as content from messages m join sessions s on s.id = m.session_id
    where s.lineage_id = ${root} and m.written_by_compaction is null and m.role = 'user'`);
  const markers = appended.map((r) => String(r.content).split(' ')[0]).filter((m) => /^w\d+-\d+$/.test(m));
  expect(new Set(markers).size).toBe(markers.length);
  for (const marker of acked) expect(markers).toContain(marker);
  const head = await rowsOf(sql`
    select m.lineage_seq from messages m join lineages g on g.head_session_id = m.session_id
    where g.id = ${root} and m.archived_at is null and m.lineage_seq is not null order by m.seq`);
  const seqs = head.map((r) => Number(r.lineage_seq));
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
}

describe('no lost write', () => {
  it.each(['rotate', 'in_place'] as const)('appends during many compactions (%s) are all kept, once, in order', async (mode) => {
    const root = uniqueId(`nl-${mode}`);
    await stack().client.createSession({ sessionId: root, mode });
    const ledger = new AppendLedger();
    const history = conversation(10);
    ledger.record(root, history, await stack().client.append(root, history));
    stack().llm.setDefault({ delayMs: 150 }); // summaries take long enough for appends to land meanwhile
    const { acked, committed } = await appendWhileCompacting(root, 6, ledger);
    expect(committed).toBe(6);
    expect(acked.length).toBeGreaterThan(20);
    // The watermark path was exercised: some commit carried appends made during its summary.
    const carried = await rowsOf(
      sql`select count(*)::int as n from messages m join sessions s on s.id = m.session_id where s.lineage_id = ${root} and m.origin_message_id is not null`,
    );
    expect(carried[0].n).toBeGreaterThan(0);
    await expectNothingLost(root, acked, ledger);
  });
});

describe('the test ledger itself', () => {
  it('catches a lost, a duplicated and an altered message, a range that covers nothing, and a message the summariser never saw', async () => {
    const root = uniqueId('ledger');
    await stack().client.createSession({ sessionId: root });
    const ledger = new AppendLedger();
    const history = conversation(10);
    ledger.record(root, history, await stack().client.append(root, history));
    const { sessionId: head } = await stack().client.compact(root);
    const later = [{ role: 'user', content: 'after the commit' }];
    ledger.record(root, later, await stack().client.append(head, later));
    const prompts = AppendLedger.prompts(stack().llm.requests);
    const clean = await ledger.check(stack().db.pool, { prompts });
    expect(ledgerProblems(clean)).toEqual([]);
    expect(clean.summarised).toBeGreaterThan(0);
    expect(clean.live).toBeGreaterThan(0);

    // Each fault in a transaction of its own, rolled back; the ledger reads through it.
    const client = await stack().db.pool.connect();
    const withFault = async (fault: string, check: (report: Awaited<ReturnType<AppendLedger['check']>>) => void, options = { prompts }) => {
      await client.query('begin');
      try {
        await client.query(fault, [head]);
        check(await ledger.check(client as unknown as import('pg').Pool, options));
      } finally {
        await client.query('rollback');
      }
    };
    try {
      const last = `(select max(seq) from messages where session_id = $1)`;
      await withFault(`delete from messages where session_id = $1 and seq = ${last}`, (r) => expect(r.lost).toHaveLength(1));
      await withFault(
        `insert into messages (session_id, seq, role, body, token_estimate, lineage_seq)
         select session_id, seq + 1000, role, body, token_estimate, lineage_seq from messages where session_id = $1 and seq = ${last}`,
        (r) => expect(r.duplicated).toHaveLength(1),
      );
      await withFault(`update messages set body = jsonb_set(body, '{content}', '"tampered"') where session_id = $1 and seq = ${last}`, (r) =>
        expect(r.altered).toHaveLength(1),
      );
      // The whole body counts: a field added (or dropped) is an alteration too, not only the content.
      await withFault(`update messages set body = body || '{"extra": true}' where session_id = $1 and seq = ${last}`, (r) => expect(r.altered).toHaveLength(1));
      await withFault(`update compactions set summarised_to_seq = summarised_from_seq - 1 where child_session_id = $1`, (r) =>
        expect(r.lost).toHaveLength(clean.summarised),
      );
      await withFault('select $1::text', (r) => expect(r.unseenBySummariser.length).toBeGreaterThan(0), { prompts: [] });
    } finally {
      client.release();
    }
  });
});

describe('in-place mode', () => {
  it('keeps the session id, archives the old rows and advances the generation', async () => {
    const id = uniqueId('ip');
    await stack().client.createSession({ sessionId: id, mode: 'in_place' });
    await stack().client.append(id, conversation(12));
    const before = await stack().client.transcript(id);
    const result = await stack().client.compact(id);
    expect(result).toMatchObject({ outcome: 'compacted', sessionId: id, generation: 1 });
    expect(result.previousSessionId).toBeUndefined();
    const after = await stack().client.transcript(id, { includeArchived: true });
    expect(after.messages.length).toBeLessThan(before.messages.length);
    // The archived rows: the whole old head, each message as appended, at its old position.
    expect(after.archived!.map((a) => a.message)).toEqual(before.messages);
    expect(after.archived!.map((a) => a.seq)).toEqual(before.seqs);
    expect(after.archived!.every((a) => !Number.isNaN(Date.parse(a.archivedAt)))).toBe(true);
    // The new rows follow the archived ones in the same session.
    expect(after.seqs[0]).toBeGreaterThan(before.seqs.at(-1)!);
    expect((await stack().client.transcript(id)).messages).toEqual(after.messages);
    const [session] = await rowsOf(sql`select generation, ended_at from sessions where id = ${id}`);
    expect(session).toMatchObject({ generation: 1, ended_at: null });
    expect((await stack().client.lineage(id)).sessions).toHaveLength(1);
  });

  it('a retried commit of the same job writes nothing more', async () => {
    const id = uniqueId('ip');
    await stack().client.createSession({ sessionId: id, mode: 'in_place' });
    await stack().client.append(id, conversation(6));
    const job = { jobId: `${id}/retry-test`, lineageId: id, parentSessionId: id, generation: 0, requestIds: ['r'], trigger: 'update' };
    const input = {
      job,
      mode: 'in_place' as const,
      dialect: dialectOf('openai-chat'),
      watermarkSeq: 5,
      snapshotRows: 5,
      compacted: [{ message: { role: 'user' as const, content: 'compacted' }, tokens: 10 }],
      stats: { tokensBefore: 100, messagesBefore: 25 },
    };
    // The job opens its audit row first, as every job does (a commit without one is stale: an erase removed it).
    await beginJob(stack().db.db, job, 'fake-model', 1);
    const first = await commitCompaction(stack().db.db, input);
    const count = async () => (await rowsOf(sql`select count(*)::int as n from messages where session_id = ${id}`))[0].n;
    const rowsAfterFirst = await count();
    const second = await commitCompaction(stack().db.db, input);
    expect(first).toMatchObject({ outcome: 'compacted', alreadyCommitted: false, carried: 20 });
    expect(second).toMatchObject({ outcome: 'compacted', alreadyCommitted: true });
    expect(await count()).toBe(rowsAfterFirst);
  });
});

describe('the one-statement commit', () => {
  const pass: GateReport['results'] = {
    providerValid: 'pass',
    latestUserRequest: 'pass',
    openToolCalls: 'pass',
    facts: 'pass',
    smaller: 'pass',
    noForgedSummary: 'pass',
  };
  /** A job on a fresh lineage of six messages, then two more appended after its snapshot: the gates have not seen those. */
  async function jobWithLateAppends(mode: 'rotate' | 'in_place') {
    const id = uniqueId('late');
    await stack().client.createSession({ sessionId: id, mode });
    await stack().client.append(id, conversation(3));
    const { seqs } = await stack().client.transcript(id);
    const late = [
      { role: 'user' as const, content: 'late 1: {"status":"ok","items":[1,2]}' },
      { role: 'assistant' as const, content: 'late 2' },
    ];
    await stack().client.append(id, late);
    const job = { jobId: `${id}/late`, lineageId: id, parentSessionId: id, generation: 0, requestIds: ['r'], trigger: 'update' };
    // The job opens its audit row first, as every job does (a commit without one is stale: an erase removed it).
    await beginJob(stack().db.db, job, 'fake-model', 1);
    return {
      id,
      late,
      input: {
        job,
        mode,
        dialect: dialectOf('openai-chat'),
        watermarkSeq: seqs.at(-1)!,
        snapshotRows: seqs.length,
        compacted: [{ message: { role: 'user' as const, content: 'the compacted head' }, tokens: 10 }],
        stats: { tokensBefore: 100, messagesBefore: seqs.length },
      },
    };
  }

  it('finds rows the gates did not see, writes nothing, and commits only after gating the head with them', async () => {
    for (const mode of ['rotate', 'in_place'] as const) {
      const { id, late, input } = await jobWithLateAppends(mode);
      const seen: Message[][] = [];
      const result = await commitCompaction(stack().db.db, {
        ...input,
        verify: (carried) => {
          seen.push(carried.map((c) => c.message));
          return { results: pass };
        },
      });
      // The first statement named no appended rows; it found two, wrote nothing, and returned them.
      expect(seen).toEqual([[], late]);
      expect(result).toMatchObject({ outcome: 'compacted', carried: 2, commitRetries: 1 });
      const head = await stack().client.transcript(id);
      expect(head.messages).toEqual([{ role: 'user', content: 'the compacted head' }, ...late]);
      const [audit] = await rowsOf(sql`select commit_retries, reason from compactions where id = ${input.job.jobId}`);
      expect(audit.commit_retries).toBe(1);
      expect(audit.reason).toContain('carried 2 message(s)');
    }
  });

  it('a gate that refuses the head with the late rows writes nothing', async () => {
    const { id, input } = await jobWithLateAppends('rotate');
    const before = (await stack().client.transcript(id)).messages;
    let calls = 0;
    const result = await commitCompaction(stack().db.db, {
      ...input,
      verify: (carried) => {
        calls++;
        return carried.length === 0 ? { results: pass } : { results: { ...pass, smaller: 'too big' }, failed: { gate: 'smaller' as const, reason: 'too big' } };
      },
    });
    expect(calls).toBe(2);
    expect(result).toMatchObject({ outcome: 'refused', gate: 'smaller' });
    const [lineage] = await rowsOf(sql`select head_session_id, generation from lineages where id = ${id}`);
    expect(lineage).toEqual({ head_session_id: id, generation: 0 });
    expect(await rowsOf(sql`select id from sessions where parent_session_id = ${id}`)).toEqual([]);
    expect((await stack().client.transcript(id)).messages).toEqual(before);
  });

  it('a gate refusing a head that is no longer the lineage head answers stale, not refused', async () => {
    const { id, input } = await jobWithLateAppends('rotate');
    const refuse = () => ({ results: { ...pass, smaller: 'too big' }, failed: { gate: 'smaller' as const, reason: 'too big' } });
    // The lineage is at generation 0; a job that believes it is at 3 is stale, whatever the gates say.
    const moved = await commitCompaction(stack().db.db, { ...input, job: { ...input.job, generation: 3 }, verify: refuse });
    expect(moved).toMatchObject({ outcome: 'stale', reason: expect.stringContaining('moved on') });
    // The same refusal on the real head is a refusal, and writes nothing.
    const refused = await commitCompaction(stack().db.db, { ...input, verify: refuse });
    expect(refused).toMatchObject({ outcome: 'refused', gate: 'smaller' });
    const [lineage] = await rowsOf(sql`select generation from lineages where id = ${id}`);
    expect(lineage.generation).toBe(0);
  });

  it('appends landing before every statement: the last try holds the lineage lock, and commits the head it gated', async () => {
    const { id, late, input } = await jobWithLateAppends('rotate');
    const racing = late.map((_, i) => ({ role: 'user' as const, content: `racing ${i}` }));
    racing.push({ role: 'user' as const, content: `racing ${racing.length}` });
    const db = stack().db.db;
    let statements = 0;
    // Each statement sent without the lock is preceded by an append it has not seen.
    const appendFirst = new Proxy(db, {
      get(target, key) {
        if (key !== 'execute') return Reflect.get(target, key);
        return async (query: Parameters<typeof db.execute>[0]) => {
          await stack().client.append(id, [racing[statements++]]);
          return target.execute(query);
        };
      },
    });
    const seen: number[] = [];
    const result = await commitCompaction(appendFirst, {
      ...input,
      verify: (carried) => {
        seen.push(carried.length);
        return { results: pass };
      },
    });
    expect(statements).toBe(3);
    expect(seen).toEqual([0, 2 + 1, 2 + 2, 2 + 3]);
    expect(result).toMatchObject({ outcome: 'compacted', carried: 5, commitRetries: 3 });
    expect((await stack().client.transcript(id)).messages).toEqual([{ role: 'user', content: 'the compacted head' }, ...late, ...racing]);
  });
});

describe('validation', () => {
  it('creating a session is idempotent with the same parameters and a conflict otherwise', async () => {
    const id = uniqueId('v');
    await stack().client.createSession({ sessionId: id, source: 'slack' });
    await expect(stack().client.createSession({ sessionId: id, source: 'slack' })).resolves.toMatchObject({ sessionId: id });
    await expect(stack().client.createSession({ sessionId: id, source: 'discord' })).rejects.toBeInstanceOf(SessionConflictError);
    await expect(stack().client.createSession({ sessionId: id, source: 'slack', mode: 'in_place' })).rejects.toBeInstanceOf(SessionConflictError);
  });

  it('a batch with one bad message writes nothing; an unknown session is not found', async () => {
    const id = uniqueId('v');
    await stack().client.createSession({ sessionId: id });
    const batch = [
      { role: 'user', content: 'fine' },
      { role: 'tool', content: 'no call id' },
    ];
    await expect(stack().client.append(id, batch)).rejects.toMatchObject({ name: 'InvalidInputError', field: 'messages[1].tool_call_id' });
    expect((await stack().client.transcript(id)).messages).toEqual([]);
    await expect(stack().client.append('nobody', [{ role: 'user', content: 'x' }])).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(stack().client.append('../etc', [{ role: 'user', content: 'x' }])).rejects.toBeInstanceOf(InvalidInputError);
  });
});

describe('the audit', () => {
  it('detects a lost carried message and a duplicated one', async () => {
    const root = uniqueId('sab');
    await stack().client.createSession({ sessionId: root });
    await stack().client.append(root, conversation(10));
    stack().llm.setDefault({ delayMs: 300 });
    const pending = stack().client.compact(root);
    await stack().llm.waitForRequests(1);
    await stack().client.append(root, [{ role: 'user', content: 'sent during the summary' }]);
    const { sessionId: head } = await pending;
    const [copy] = await rowsOf(
      sql`select id from messages where session_id = ${head} and body->>'content' = 'sent during the summary' and origin_message_id is not null`,
    );
    expect(copy).toBeDefined();
    // The system prompt, kept verbatim at the head of the new session.
    const [kept] = await rowsOf(sql`select id from messages where session_id = ${head} and lineage_seq = 1`);
    expect(kept).toBeDefined();

    const before = await stack().client.operator.audit();
    // Sabotage: the carried copy vanishes, then a kept copy, and an appended row is written twice.
    await stack().db.db.execute(sql`delete from messages where id = ${copy.id}`);
    expect((await stack().client.operator.audit()).lostMessages).toBe(before.lostMessages + 1);
    await stack().db.db.execute(sql`delete from messages where id = ${kept.id}`);
    expect((await stack().client.operator.audit()).lostMessages).toBe(before.lostMessages + 2);
    const appended = await stack().client.append(head, [{ role: 'user', content: 'appended once' }]);
    await stack().db.db.execute(sql`
      insert into messages (session_id, seq, role, body, token_estimate, lineage_seq)
      select session_id, seq + 1000, role, body, token_estimate, lineage_seq from messages
      where session_id = ${head} and seq = ${appended.lastSeq}`);
    const tampered = await stack().client.operator.audit();
    expect(tampered.duplicatedMessages).toBe(before.duplicatedMessages + 1);
  });

  it('counts a keyed batch stored twice, and a resent keyed batch is stored once', async () => {
    const id = uniqueId('key');
    await stack().client.createSession({ sessionId: id });
    const batch = [
      { role: 'user', content: 'keyed one' },
      { role: 'assistant', content: 'keyed two' },
    ];
    const first = await stack().client.append(id, batch, { appendKey: 'batch-1' });
    const again = await stack().client.append(id, batch, { appendKey: 'batch-1' }); // a resend after a lost answer
    expect(again).toMatchObject({ lastLineageSeq: first.lastLineageSeq, replayed: true });
    expect((await stack().client.transcript(id)).messages).toHaveLength(2);
    const before = await stack().client.operator.audit();
    expect(before.duplicatedByKey).toBe(0);
    // A writer past the function stores the batch's first row again under the same key.
    await stack().db.db.execute(sql`
      insert into messages (session_id, seq, role, body, token_estimate, lineage_seq, append_key)
      select session_id, seq + 1000, role, body, token_estimate, lineage_seq + 1000, append_key from messages
      where session_id = ${id} and append_key = 'batch-1' and seq = 1`);
    expect((await stack().client.operator.audit()).duplicatedByKey).toBe(1);
    expect((await stack().client.operator.auditLineage(id)).duplicatedByKey).toBe(1);
  });
});
