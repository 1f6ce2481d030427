/**
 * The compaction queue of one lineage, as plain rules: which request runs, which joins a
 * running job, which is answered `stale`, and which is a retry answered from memory. The
 * workflow (session-lineage.ts) owns time, activities and messages; this class owns every
 * decision about requests, so those decisions are unit-tested without Temporal
 * (test/unit/lineage-queue.test.ts). Workflow-safe: no I/O, no clock, no randomness (request ids
 * and job ids are made by the caller).
 */
import type { Answer, CarriedState, CompactRequest, CompactResult, CompactionOutcome, CompactionTrigger, LineageState, RequestStatus } from './contract';

/** A request the queue holds: its id and trigger are settled at admission. */
export type QueuedRequest = CarriedState['queue'][number];

/** One compaction of one head, for the requests it answers (the first one started it). */
export interface Job {
  jobId: string;
  /** The head the job compacts. */
  headSessionId: string;
  requests: QueuedRequest[];
}

/** Answers remembered across continue-as-new, so a retried request id is never run again. */
export const REMEMBERED_ANSWERS = 1000;

const STALE_REASON = 'the session is no longer the head of its lineage';

export class LineageQueue {
  private waiting: QueuedRequest[];
  private readonly answers: Map<string, CompactResult>;
  private running: Job | undefined;
  private jobCount: number;
  private headSessionId: string;
  private generationNow: number;
  private closing = false;
  private last: { outcome: CompactionOutcome; reason?: string } | undefined;

  /** Starts at the lineage's head, with what the previous run carried (if any). */
  constructor(head: { sessionId: string; generation: number }, carried?: CarriedState) {
    this.headSessionId = head.sessionId;
    this.generationNow = head.generation;
    this.waiting = [...(carried?.queue ?? [])];
    this.answers = new Map((carried?.answered ?? []).map((answer) => [answer.requestId, answer]));
    this.jobCount = carried?.jobCounter ?? 0;
  }

  get head(): string {
    return this.headSessionId;
  }

  get generation(): number {
    return this.generationNow;
  }

  /** True once close was asked: no request is admitted after it. */
  get closed(): boolean {
    return this.closing;
  }

  get hasWaiting(): boolean {
    return this.waiting.length > 0;
  }

  close(): void {
    this.closing = true;
  }

  /** Answered, waiting, or in the running job: a request id this run will never run again. */
  isKnown(requestId: string): boolean {
    return (
      this.answers.has(requestId) ||
      this.waiting.some((r) => r.requestId === requestId) ||
      (this.running?.requests.some((r) => r.requestId === requestId) ?? false)
    );
  }

  answerOf(requestId: string): CompactResult | undefined {
    return this.answers.get(requestId);
  }

  status(requestIds: string[]): RequestStatus[] {
    return requestIds.map((requestId) => {
      const result = this.answers.get(requestId);
      if (result) return { requestId, status: 'answered' as const, result };
      return { requestId, status: this.isKnown(requestId) ? ('pending' as const) : ('unknown' as const) };
    });
  }

  /**
   * Takes a valid request: a retry of a known id changes nothing; a request for the session
   * being compacted joins the running job; a request for another session than the head is
   * answered stale at once, unless a job runs (Postgres may already have a newer head, so it
   * waits for the job's answer); everything else waits. Returns the request id.
   */
  admit(request: CompactRequest, via: CompactionTrigger, newRequestId: () => string): string {
    const requestId = request.requestId ?? newRequestId();
    if (this.isKnown(requestId)) return requestId;
    const queued: QueuedRequest = { ...request, requestId, trigger: request.trigger ?? via };
    if (this.running && queued.sessionId === this.running.headSessionId) this.running.requests.push(queued);
    else if (queued.sessionId !== this.headSessionId && !this.running) this.answer(queued, this.staleAnswer());
    else this.waiting.push(queued);
    return requestId;
  }

  /**
   * Takes the first waiting request. If it names an old head it is answered stale and no job
   * starts (returns undefined); otherwise a job starts for it and every waiting request for
   * the same head, which all get that job's answer. Call only while a request waits.
   */
  startNext(jobIdFor: (jobNumber: number) => string): Job | undefined {
    if (this.running) throw new Error(`startNext called while job ${this.running.jobId} runs`);
    const next = this.waiting.shift();
    if (!next) throw new Error('startNext called with no request waiting');
    if (next.sessionId !== this.headSessionId) {
      this.answer(next, this.staleAnswer());
      return undefined;
    }
    const sameHead = this.waiting.filter((r) => r.sessionId === this.headSessionId);
    this.waiting = this.waiting.filter((r) => r.sessionId !== this.headSessionId);
    this.running = { jobId: jobIdFor(++this.jobCount), headSessionId: this.headSessionId, requests: [next, ...sameHead] };
    return this.running;
  }

  /**
   * Ends the running job: every request it holds, joined ones included, gets `answer`, and
   * the head moves to the one the answer names (Postgres decided it: a commit, a commit an
   * abort found, or the head a stale attempt found).
   */
  finish(answer: Answer): void {
    const job = this.running;
    if (!job) throw new Error('finish called with no job running');
    this.running = undefined;
    this.headSessionId = answer.sessionId;
    this.generationNow = answer.generation;
    this.last = { outcome: answer.outcome, reason: answer.reason };
    for (const request of job.requests) this.answer(request, answer);
  }

  /** Requests answered by a job plus requests still waiting: the depth a job saw. */
  get depth(): number {
    return (this.running?.requests.length ?? 0) + this.waiting.length;
  }

  /** What the next run needs: the waiting requests, recent answers and the job counter. */
  carry(): CarriedState {
    return { queue: this.waiting, answered: [...this.answers.values()].slice(-REMEMBERED_ANSWERS), jobCounter: this.jobCount };
  }

  view(lineage: Pick<LineageState, 'lineageId' | 'mode'>): LineageState {
    return {
      ...lineage,
      headSessionId: this.headSessionId,
      generation: this.generationNow,
      compactions: this.generationNow,
      queue: this.waiting.map(({ requestId, sessionId, trigger }) => ({ requestId, sessionId, trigger })),
      inFlight: this.running && { jobId: this.running.jobId, sessionId: this.running.headSessionId, requestIds: this.running.requests.map((r) => r.requestId) },
      lastOutcome: this.last?.outcome,
      lastReason: this.last?.reason,
      closed: this.closing,
    };
  }

  /** The lines the Web UI shows as the workflow's current details. */
  details(mode: string): string {
    const lines = [
      `**Head:** ${this.headSessionId} (generation ${this.generationNow}, ${mode})`,
      `**Compactions:** ${this.generationNow}`,
      `**Queue:** ${this.waiting.length} waiting${this.running ? `, compacting ${this.running.headSessionId} for ${this.running.requests.length} request(s)` : ''}`,
    ];
    if (this.last) lines.push(`**Last outcome:** ${this.last.outcome}${this.last.reason ? `: ${this.last.reason}` : ''}`);
    return lines.join('\n\n');
  }

  private staleAnswer(): Answer {
    return { outcome: 'stale', sessionId: this.headSessionId, generation: this.generationNow, reason: STALE_REASON };
  }

  private answer(request: QueuedRequest, answer: Answer): void {
    this.answers.set(request.requestId, { ...answer, requestId: request.requestId });
  }
}
