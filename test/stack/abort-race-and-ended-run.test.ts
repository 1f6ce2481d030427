/**
 * Two endings a caller must read right, each of which fails here if its handling is removed:
 * - An abort adopts a racing commit: when the summarise activity fails for good after a lost
 *   attempt committed, `recordAbortedCompaction` reads Postgres under the lineage lock and
 *   the workflow answers `compacted` with the committed head, not `aborted`.
 * - Polling stops when the run ends: waiting for a request whose workflow run completed
 *   ends in a typed error, not an endless poll.
 * (The attempt ticket, fencing by Temporal's attempt number, is proven in test/stack/lease.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { RequestLostError, SessionCompactionError } from '../../src/errors';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { AppendLedger, ledgerProblems } from '../support/ledger';
import { childrenOf, conversation, latestRunStatus, uniqueId, useTestStack, withClient } from '../support/stack';

const TTL_MS = 3000;
// One attempt only: when it loses its lease the activity has failed for good and the
// workflow records the abort.
const stack = useTestStack({ env: { COMPACTION_LEASE_TTL_MS: String(TTL_MS) }, settings: { maxAttempts: 1 } });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an abort adopts a commit that raced it', () => {
  it('the only attempt loses its lease mid-commit, the commit lands: callers get compacted, not aborted', async () => {
    const pool = stack().db.pool;
    // The first commit that creates a child sleeps inside its transaction (holding the
    // lineage lock) for longer than the lease: no heartbeat arrives meanwhile, Temporal times
    // the attempt out, and the workflow's abort has to wait for this commit.
    await pool.query(`
      create sequence slow_first_child_commit_once;
      create function slow_first_child_commit() returns trigger as $$
      begin
        if nextval('slow_first_child_commit_once') = 1 then perform pg_sleep(${(4 * TTL_MS) / 1000}); end if;
        return new;
      end $$ language plpgsql;
      create trigger slow_first_child_commit before insert on sessions
        for each row when (new.parent_session_id is not null) execute function slow_first_child_commit();
      -- The trigger runs as the commit function's owner (sc_owner: sc_compaction_commit is SECURITY
      -- DEFINER), which this test's sequence is not granted to otherwise.
      grant usage on sequence slow_first_child_commit_once to sc_owner;`);
    const root = uniqueId('ab');
    const ledger = new AppendLedger();
    await stack().client.createSession({ sessionId: root });
    const history = conversation(15);
    ledger.record(root, history, await stack().client.append(root, history));

    const result = await stack().client.compact(root);
    expect(result).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g1`, generation: 1 });

    // The fault landed: the commit slept, the attempt timed out, and the workflow took the
    // abort path (a local activity marker after the timeout), with no second attempt.
    expect((await pool.query<{ n: number }>('select last_value::int as n from slow_first_child_commit_once')).rows[0].n).toBe(1);
    const history2 = await stack().temporal.workflow.getHandle(lineageWorkflowId(root)).fetchHistory();
    const events = history2.events ?? [];
    const timedOut = events.findIndex((e) => e.activityTaskTimedOutEventAttributes);
    expect(timedOut).toBeGreaterThan(-1);
    expect(events.slice(timedOut).some((e) => e.markerRecordedEventAttributes)).toBe(true);
    expect(stack().llm.requests).toHaveLength(1);
    // Postgres and the answer agree: one child, the job committed.
    expect(await childrenOf(stack(), root)).toEqual([`${root}--g1`]);
    const { rows } = await pool.query<{ outcome: string }>('select outcome from compactions where lineage_id = $1', [root]);
    expect(rows).toEqual([{ outcome: 'compacted' }]);
    expect((await stack().client.transcript(root)).sessionId).toBe(`${root}--g1`);
    const report = await ledger.check(pool, { prompts: AppendLedger.prompts(stack().llm.requests) });
    expect(ledgerProblems(report)).toEqual([]);
    // The queue goes on from the adopted head.
    stack().llm.setDefault({});
    await stack().client.append(result.sessionId, conversation(15).slice(1));
    expect(await stack().client.compact(result.sessionId)).toMatchObject({ outcome: 'compacted', sessionId: `${root}--g2` });
  });
});

describe('waiting for a request whose run ended', () => {
  it('ends in a typed error once the lineage workflow completed, instead of polling forever', async () => {
    // A client whose lineage workflows complete after 1 s without requests.
    await withClient(stack(), { settings: { idleTimeoutMs: 1000, retryInitialIntervalMs: 200 } }, async (idle) => {
      const root = uniqueId('w');
      await idle.createSession({ sessionId: root });
      await idle.append(root, conversation(15));
      expect(await idle.compact(root, { requestId: 'answered' })).toMatchObject({ outcome: 'compacted' });
      expect(await latestRunStatus(stack(), root, 30_000)).toBe('COMPLETED');

      // A request that never reached the run (lost): no answer will ever come.
      const started = Date.now();
      const waited = idle.waitForResult(root, 'never-delivered').then(
        () => 'answered',
        (error: unknown) => error,
      );
      const outcome = await Promise.race([waited, sleep(90_000).then(() => 'still polling after 90 s')]);
      expect(outcome).toBeInstanceOf(SessionCompactionError);
      expect(outcome).toBeInstanceOf(RequestLostError);
      expect(outcome).toMatchObject({ requestId: 'never-delivered' });
      expect(Date.now() - started).toBeLessThan(90_000);
    });
  });
});
