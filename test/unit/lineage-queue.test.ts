/**
 * The lineage's queue rules without Temporal: examples of each rule, then property tests
 * over random request sequences (fast-check, which shrinks a failing sequence to a minimal
 * one). The properties are checked against the test's own ledger of what it sent and what
 * each job answered, never against counts the queue keeps.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Answer, CompactRequest, CompactResult, CompactionTrigger } from '../../src/workflows/contract';
import { type Job, LineageQueue, REMEMBERED_ANSWERS } from '../../src/workflows/lineage-queue';

const ROOT = 'root';
const gen = (n: number) => (n === 0 ? ROOT : `${ROOT}--g${n}`);
let ids = 0;
const newId = () => `generated-${++ids}`;
const jobId = (n: number) => `job-${n}`;
const compacted = (q: LineageQueue): Answer => ({
  outcome: 'compacted',
  sessionId: gen(q.generation + 1),
  previousSessionId: q.head,
  generation: q.generation + 1,
});

describe('LineageQueue rules', () => {
  it('runs a request for the head as a job, and answers it with the job answer', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    const id = q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId);
    expect(q.status([id])).toEqual([{ requestId: 'a', status: 'pending' }]);
    const job = q.startNext(jobId)!;
    expect(job).toMatchObject({ jobId: 'job-1', headSessionId: ROOT, requests: [{ requestId: 'a', trigger: 'update' }] });
    const answer = compacted(q);
    q.finish(answer);
    expect(q.answerOf('a')).toEqual({ ...answer, requestId: 'a' });
    expect(q.view({ lineageId: ROOT, mode: 'rotate' })).toMatchObject({ headSessionId: gen(1), generation: 1, lastOutcome: 'compacted', queue: [] });
  });

  it('gives a request without an id a new one, and keeps an explicit trigger', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    const id = q.admit({ sessionId: ROOT, trigger: 'threshold' }, 'signal', () => 'made-here');
    expect(id).toBe('made-here');
    expect(q.view({ lineageId: ROOT, mode: 'rotate' }).queue).toEqual([{ requestId: 'made-here', sessionId: ROOT, trigger: 'threshold' }]);
  });

  it('joins a request for the session being compacted to the running job', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    q.admit({ sessionId: ROOT, requestId: 'first' }, 'update', newId);
    const job = q.startNext(jobId)!;
    q.admit({ sessionId: ROOT, requestId: 'joined' }, 'signal', newId);
    expect(job.requests.map((r) => r.requestId)).toEqual(['first', 'joined']);
    expect(q.hasWaiting).toBe(false);
  });

  it('coalesces waiting requests for the head into one job', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    for (const requestId of ['a', 'b', 'c']) q.admit({ sessionId: ROOT, requestId }, 'update', newId);
    expect(q.startNext(jobId)!.requests.map((r) => r.requestId)).toEqual(['a', 'b', 'c']);
  });

  it('answers a request for an old head stale at once while no job runs', () => {
    const q = new LineageQueue({ sessionId: gen(2), generation: 2 });
    q.admit({ sessionId: gen(1), requestId: 'old' }, 'update', newId);
    expect(q.answerOf('old')).toMatchObject({ outcome: 'stale', sessionId: gen(2), generation: 2 });
    expect(q.hasWaiting).toBe(false);
  });

  it('while a job runs, waits to judge a request for another session until the job answers', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId);
    q.startNext(jobId);
    // The client saw the new head before the workflow did (the commit is in Postgres).
    q.admit({ sessionId: gen(1), requestId: 'next' }, 'update', newId);
    q.admit({ sessionId: 'root--g7', requestId: 'unknown-head' }, 'update', newId);
    expect(q.answerOf('next')).toBeUndefined();
    const answer = compacted(q);
    q.finish(answer);
    expect(q.startNext(jobId)).toMatchObject({ headSessionId: gen(1), requests: [{ requestId: 'next' }] });
    q.finish({ outcome: 'refused', sessionId: gen(1), generation: 1, reason: 'gate smaller' });
    expect(q.startNext(jobId)).toBeUndefined();
    expect(q.answerOf('unknown-head')).toMatchObject({ outcome: 'stale', sessionId: gen(1) });
  });

  it('never runs a retried request id again, and answers it with its first answer', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId);
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId);
    const job = q.startNext(jobId)!;
    expect(job.requests).toHaveLength(1);
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId); // while running
    expect(job.requests).toHaveLength(1);
    q.finish({ outcome: 'aborted', sessionId: ROOT, generation: 0, reason: 'summariser failed' });
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId); // after its answer
    expect(q.hasWaiting).toBe(false);
    expect(q.answerOf('a')).toMatchObject({ outcome: 'aborted' });
  });

  it('carries waiting requests, recent answers and the job counter across continue-as-new', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    q.admit({ sessionId: ROOT, requestId: 'done' }, 'update', newId);
    q.startNext(jobId);
    q.admit({ sessionId: gen(1), requestId: 'waiting' }, 'signal', newId);
    const answer = compacted(q);
    q.finish(answer);
    const next = new LineageQueue({ sessionId: q.head, generation: q.generation }, JSON.parse(JSON.stringify(q.carry())));
    expect(next.answerOf('done')).toMatchObject({ outcome: 'compacted' });
    expect(next.status(['waiting', 'nobody'])).toEqual([
      { requestId: 'waiting', status: 'pending' },
      { requestId: 'nobody', status: 'unknown' },
    ]);
    // Job ids name activities and audit rows: a continued run never reuses one.
    expect(next.startNext(jobId)!.jobId).toBe('job-2');
  });

  it(`remembers the last ${REMEMBERED_ANSWERS} answers across continue-as-new`, () => {
    const q = new LineageQueue({ sessionId: gen(5), generation: 5 });
    for (let i = 0; i <= REMEMBERED_ANSWERS; i++) q.admit({ sessionId: ROOT, requestId: `r${i}` }, 'signal', newId);
    const carried = q.carry();
    expect(carried.answered).toHaveLength(REMEMBERED_ANSWERS);
    const next = new LineageQueue({ sessionId: gen(5), generation: 5 }, carried);
    expect(next.answerOf('r0')).toBeUndefined();
    expect(next.answerOf(`r${REMEMBERED_ANSWERS}`)).toMatchObject({ outcome: 'stale' });
  });

  it('refuses to start a job while one runs, or with nothing waiting', () => {
    const q = new LineageQueue({ sessionId: ROOT, generation: 0 });
    expect(() => q.startNext(jobId)).toThrow(/no request waiting/);
    q.admit({ sessionId: ROOT, requestId: 'a' }, 'update', newId);
    q.startNext(jobId);
    q.admit({ sessionId: 'root--g1', requestId: 'b' }, 'update', newId);
    expect(() => q.startNext(jobId)).toThrow(/while job job-1 runs/);
    expect(q.status(['b'])).toEqual([{ requestId: 'b', status: 'pending' }]);
    expect(() => new LineageQueue({ sessionId: ROOT, generation: 0 }).finish({ outcome: 'refused', sessionId: ROOT, generation: 0 })).toThrow(/no job running/);
  });
});

/** One thing that happens to a lineage, as the workflow would drive its queue. */
type Step =
  | { kind: 'request'; session: 'head' | 'older' | 'next'; id: 'new' | number; trigger?: CompactionTrigger }
  | { kind: 'start' }
  | { kind: 'finish'; outcome: 'compacted' | 'refused' | 'aborted' | 'aborted-adopting-commit' | 'stale-elsewhere' }
  | { kind: 'continueAsNew' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('request' as const),
      session: fc.constantFrom('head' as const, 'older' as const, 'next' as const),
      id: fc.oneof(fc.constant('new' as const), fc.nat(40)),
      trigger: fc.option(fc.constantFrom<CompactionTrigger>('update', 'signal', 'threshold'), { nil: undefined }),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: 'start' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      outcome: fc.constantFrom('compacted' as const, 'refused' as const, 'aborted' as const, 'aborted-adopting-commit' as const, 'stale-elsewhere' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'continueAsNew' as const }) },
);

/**
 * Drives a queue through `steps` as the workflow does (a job starts only when none runs; a
 * continue-as-new happens only between jobs), then drains it. Keeps its own ledger.
 */
function drive(steps: Step[]) {
  let q = new LineageQueue({ sessionId: ROOT, generation: 0 });
  let head = 0; // the ledger's head generation (Postgres' view)
  let sent = 0;
  const sentIds: string[] = [];
  const sessionOf = new Map<string, string>();
  const runIn = new Map<string, string>(); // request id -> the job that ran it
  const firstAnswer = new Map<string, CompactResult>();
  const jobAnswers: Array<{ job: Job; answer: Answer }> = [];
  const jobIds = new Set<string>();
  let running: Job | undefined;
  const violations: string[] = [];

  const record = () => {
    for (const id of sentIds) {
      const answer = q.answerOf(id);
      if (!answer) continue;
      const first = firstAnswer.get(id);
      if (!first) firstAnswer.set(id, answer);
      else if (JSON.stringify(first) !== JSON.stringify(answer))
        violations.push(`${id} answered twice: ${JSON.stringify(first)} then ${JSON.stringify(answer)}`);
    }
  };
  const start = () => {
    const job = q.startNext(jobId);
    if (!job) return;
    if (job.headSessionId !== gen(head)) violations.push(`job ${job.jobId} for ${job.headSessionId} while the head is ${gen(head)}`);
    if (jobIds.has(job.jobId)) violations.push(`job id ${job.jobId} used twice`);
    jobIds.add(job.jobId);
    running = job;
  };
  const finish = (outcome: Extract<Step, { kind: 'finish' }>['outcome']) => {
    const job = running!;
    for (const r of job.requests) {
      if (runIn.has(r.requestId)) violations.push(`${r.requestId} ran in ${runIn.get(r.requestId)} and again in ${job.jobId}`);
      runIn.set(r.requestId, job.jobId);
    }
    let answer: Answer;
    if (outcome === 'compacted' || outcome === 'aborted-adopting-commit') {
      head++;
      answer = { outcome: 'compacted', sessionId: gen(head), previousSessionId: job.headSessionId, generation: head };
    } else if (outcome === 'stale-elsewhere') {
      head += 2; // the head moved past the job's session outside this queue (e.g. a restarted run)
      answer = { outcome: 'stale', sessionId: gen(head), generation: head };
    } else answer = { outcome, sessionId: gen(head), generation: head, reason: outcome };
    q.finish(answer);
    jobAnswers.push({ job, answer });
    running = undefined;
  };

  for (const step of steps) {
    if (step.kind === 'request') {
      const session = step.session === 'head' ? gen(head) : step.session === 'older' ? gen(Math.max(0, head - 1)) : gen(head + 1);
      const requestId = step.id === 'new' || sentIds.length === 0 ? `req-${++sent}` : sentIds[step.id % sentIds.length];
      const request: CompactRequest = { sessionId: sessionOf.get(requestId) ?? session, requestId, ...(step.trigger ? { trigger: step.trigger } : {}) };
      if (!sessionOf.has(requestId)) {
        sessionOf.set(requestId, session);
        sentIds.push(requestId);
      }
      q.admit(request, 'update', newId);
    } else if (step.kind === 'start') {
      if (!running && q.hasWaiting) start();
    } else if (step.kind === 'finish') {
      if (running) finish(step.outcome);
    } else if (!running) {
      q = new LineageQueue({ sessionId: q.head, generation: q.generation }, JSON.parse(JSON.stringify(q.carry())));
    }
    record();
  }
  // Drain, as the workflow's loop does once requests stop coming.
  for (let guard = 0; (running || q.hasWaiting) && guard < 10_000; guard++) {
    if (running) finish('refused');
    else start();
    record();
  }
  return { q, sentIds, sessionOf, runIn, firstAnswer, jobAnswers, violations };
}

describe('LineageQueue properties over random request sequences', () => {
  const runs = { numRuns: 300 };

  it('no request is run twice, and no job id is used twice', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 120 }), (steps) => {
        expect(drive(steps).violations).toEqual([]);
      }),
      runs,
    );
  });

  it('every request is answered, once, and keeps its first answer', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 120 }), (steps) => {
        const { q, sentIds, firstAnswer, violations } = drive(steps);
        expect(violations).toEqual([]);
        for (const id of sentIds) {
          expect(firstAnswer.get(id), id).toBeDefined();
          expect(q.answerOf(id)).toEqual(firstAnswer.get(id));
          expect(q.status([id])[0].status).toBe('answered');
        }
      }),
      runs,
    );
  });

  it('a joined request gets its job answer; only requests for an old head are answered stale without a job', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 120 }), (steps) => {
        const { sentIds, sessionOf, runIn, firstAnswer, jobAnswers } = drive(steps);
        for (const { job, answer } of jobAnswers) {
          for (const r of job.requests) expect(firstAnswer.get(r.requestId)).toEqual({ ...answer, requestId: r.requestId });
        }
        for (const id of sentIds.filter((x) => !runIn.has(x))) {
          const answer = firstAnswer.get(id)!;
          expect(answer.outcome).toBe('stale');
          expect(answer.sessionId).not.toBe(sessionOf.get(id));
        }
      }),
      runs,
    );
  });
});
