/**
 * The adaptive commit path (src/db/commit.ts, CommitPaths): a lineage whose commit ran out of
 * optimistic tries takes the locks first at its next commit, sending no statement outside the
 * transaction, and what that commit writes and answers is what the optimistic path writes and
 * answers for the same lineage (only commitRetries, the wasted statements, differs).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/compaction/dialects';
import type { GateReport } from '../../src/compaction/gates';
import { beginJob, CommitPaths, commitCompaction } from '../../src/db/session-store';
import { conversation, uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();
const pass: GateReport['results'] = {
  providerValid: 'pass',
  latestUserRequest: 'pass',
  openToolCalls: 'pass',
  facts: 'pass',
  smaller: 'pass',
  noForgedSummary: 'pass',
};
const late = [
  { role: 'user' as const, content: 'late 1' },
  { role: 'assistant' as const, content: 'late 2' },
];

/** A lineage of six messages, a job that snapshot them, and two appends after its snapshot. */
async function jobWithLateAppends(prefix: string) {
  const id = uniqueId(prefix);
  await stack().client.createSession({ sessionId: id });
  await stack().client.append(id, conversation(3));
  const { seqs } = await stack().client.transcript(id);
  await stack().client.append(id, late);
  const job = { jobId: `${id}/job`, lineageId: id, parentSessionId: id, generation: 0, requestIds: ['r'], trigger: 'update' };
  await beginJob(stack().db.db, job, 'fake-model', 1);
  return {
    id,
    input: {
      job,
      mode: 'rotate' as const,
      dialect: dialectOf('openai-chat'),
      watermarkSeq: seqs.at(-1)!,
      snapshotRows: seqs.length,
      compacted: [{ message: { role: 'user' as const, content: 'the compacted head' }, tokens: 10 }],
      stats: { tokensBefore: 100, messagesBefore: seqs.length },
    },
  };
}

/** The database, counting the statements sent outside a transaction. */
function counting() {
  const db = stack().db.db;
  const counter = { outside: 0 };
  const proxy = new Proxy(db, {
    get(target, key) {
      if (key !== 'execute') return Reflect.get(target, key);
      return (query: Parameters<typeof db.execute>[0]) => {
        counter.outside++;
        return target.execute(query);
      };
    },
  });
  return { db: proxy, counter };
}

describe('the adaptive commit path', () => {
  it('a contended lineage locks first: one gating, no statement outside the transaction, the same head and audit row', async () => {
    const paths = new CommitPaths();
    const REGATES = /; committed after \d+ re-gate\(s\) of rows appended at commit/;
    const regates: boolean[] = [];
    const commitOne = async ({ id, input }: Awaited<ReturnType<typeof jobWithLateAppends>>) => {
      const lockFirst = paths.lockFirst(id);
      const seen: number[] = [];
      const { db, counter } = counting();
      const result = await commitCompaction(db, { ...input, verify: (carried) => (seen.push(carried.length), { results: pass }) }, paths);
      const head = await stack().client.transcript(id);
      const [audit] = (
        await stack().db.db.execute(
          sql`select outcome, generation, child_session_id, tokens_after, messages_after, gate_results, commit_retries, reason from compactions where id = ${input.job.jobId}`,
        )
      ).rows as Array<Record<string, unknown>>;
      // The lineage's id appears in the child's id: named alike, two lineages' answers compare. The
      // reason names the re-gates, as commitRetries counts them: what the paths differ in.
      const normal = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll(id, 'ID').replace(REGATES, '')) as Record<string, unknown>;
      const { commitRetries, ...answer } = normal(result);
      const { commit_retries: auditRetries, ...row } = normal(audit);
      regates.push(REGATES.test(JSON.stringify(result)));
      return {
        lockFirst,
        seen,
        outside: counter.outside,
        commitRetries,
        auditRetries,
        answer,
        row,
        head: JSON.parse(JSON.stringify(head).replaceAll(id, 'ID')),
      };
    };

    const optimistic = await commitOne(await jobWithLateAppends('opt'));
    // Optimistic: the first statement named no late rows, found two, wrote nothing; the second committed.
    expect(optimistic).toMatchObject({ lockFirst: false, seen: [0, 2], outside: 2, commitRetries: 1, auditRetries: 1 });

    const job = await jobWithLateAppends('lock');
    paths.record(job.id, 'exhausted'); // as an exhausted commit of this lineage marks it
    const lockedFirst = await commitOne(job);
    // Locked first: the gates ran once, on the head with the late rows; every statement went inside the transaction.
    expect(lockedFirst).toMatchObject({ lockFirst: true, seen: [2], outside: 0, commitRetries: 0, auditRetries: 0 });
    expect(lockedFirst.answer).toEqual(optimistic.answer);
    expect(lockedFirst.head).toEqual(optimistic.head);
    expect(lockedFirst.row).toEqual(optimistic.row);
    expect(regates).toEqual([true, false]);
  });

  it('an exhausted commit switches its lineage to locking first', async () => {
    const paths = new CommitPaths();
    const { id, input } = await jobWithLateAppends('race');
    const db = stack().db.db;
    let appended = 0;
    // Each statement sent without the lock is preceded by an append it has not seen.
    const appendFirst = new Proxy(db, {
      get(target, key) {
        if (key !== 'execute') return Reflect.get(target, key);
        return async (query: Parameters<typeof db.execute>[0]) => {
          await stack().client.append(id, [{ role: 'user', content: `racing ${appended++}` }]);
          return target.execute(query);
        };
      },
    });
    expect(paths.lockFirst(id)).toBe(false);
    const result = await commitCompaction(appendFirst, { ...input, verify: () => ({ results: pass }) }, paths);
    expect(result).toMatchObject({ outcome: 'compacted', commitRetries: 3 });
    expect(paths.lockFirst(id)).toBe(true);
  });
});
