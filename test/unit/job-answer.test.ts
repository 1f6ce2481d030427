/**
 * A job activity's result read back from history (src/workflows/job-answer.ts), checked on
 * the histories the replay suite keeps: results recorded by earlier releases name the head
 * `headSessionId`, and the workflow answered its callers from them. readJobAnswer must give
 * those very answers, and what the activities write now must read the same in the earlier
 * releases' workflow code and in today's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Answer } from '../../src/workflows/contract';
import { readJobAnswer, type RecordedAnswer, writeJobAnswer } from '../../src/workflows/job-answer';

type Event = { eventType: string } & Record<string, any>;
type Payload = { metadata?: Record<string, string>; data?: string };

const REPLAY_DIR = path.resolve(__dirname, '../replay');
const historyFiles = ['histories', 'fixed'].flatMap((dir) =>
  readdirSync(path.join(REPLAY_DIR, dir))
    .filter((f) => f.endsWith('.json'))
    .map((f) => path.join(dir, f)),
);
const decode = (payload: Payload | undefined): any => (payload?.data ? JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) : undefined);
/** JSON as the wire carries it: no undefined fields. */
const wire = (value: unknown) => JSON.parse(JSON.stringify(value));

interface RecordedJob {
  file: string;
  activity: 'compactSession' | 'recordAbortedCompaction';
  result: RecordedAnswer;
}

/** Every job activity result in a history: completed activities and local-activity markers. */
function jobResults(file: string, events: Event[]): RecordedJob[] {
  const scheduled = new Map(
    events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => [e.eventId, e.activityTaskScheduledEventAttributes.activityType.name]),
  );
  const found: RecordedJob[] = [];
  for (const e of events) {
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && scheduled.get(completed.scheduledEventId) === 'compactSession') {
      found.push({ file, activity: 'compactSession', result: decode(completed.result?.payloads?.[0]) });
    }
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity' && decode(marker.details?.data?.payloads?.[0])?.activity_type === 'recordAbortedCompaction') {
      const result = decode(marker.details?.result?.payloads?.[0]);
      if (result) found.push({ file, activity: 'recordAbortedCompaction', result });
    }
  }
  return found;
}

/** The answers the workflow gave through Updates in a history. */
function updateAnswers(events: Event[]): Array<Answer & { requestId: string }> {
  return events.flatMap((e) => {
    const payload = e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success?.payloads?.[0];
    return payload ? [decode(payload)] : [];
  });
}

const histories = historyFiles.map((file) => ({ file, events: JSON.parse(readFileSync(path.join(REPLAY_DIR, file), 'utf8')).events as Event[] }));
const recorded = histories.flatMap(({ file, events }) => jobResults(file, events));

describe('a job activity result, read from any history', () => {
  it('the replay histories hold job results of earlier releases, which name the head headSessionId', () => {
    // What makes the next tests able to fail: results with only the earlier name are there.
    const earlier = recorded.filter((r) => r.result.sessionId === undefined && typeof r.result.headSessionId === 'string');
    expect(earlier.length).toBeGreaterThanOrEqual(10);
    expect(new Set(earlier.map((r) => r.activity))).toEqual(new Set(['compactSession', 'recordAbortedCompaction']));
  });

  it('readJobAnswer gives the head of every recorded job result, under either name', () => {
    for (const { file, result } of recorded) {
      const answer = readJobAnswer(result);
      expect(answer.sessionId, file).toBe(result.sessionId ?? result.headSessionId);
      expect(answer.sessionId, file).toEqual(expect.any(String));
      expect([answer.outcome, answer.generation], file).toEqual([result.outcome, result.generation]);
    }
  });

  it('gives exactly the answer the workflow sent its callers for each job result it recorded', () => {
    const compared = new Map<string, number>();
    for (const { file, events } of histories) {
      const answers = updateAnswers(events);
      // compactSession's answers go out as they are (an abort's answer gets the workflow's reason).
      for (const { result } of jobResults(file, events).filter((r) => r.activity === 'compactSession')) {
        const sent = answers.filter((a) => a.outcome === result.outcome && a.generation === result.generation && a.reason === result.reason);
        for (const { requestId, ...answer } of sent) {
          expect(wire(readJobAnswer(result)), `${file} ${requestId}`).toEqual(answer);
          compared.set(result.outcome, (compared.get(result.outcome) ?? 0) + 1);
        }
      }
    }
    expect(compared.get('compacted')).toBeGreaterThanOrEqual(5);
    expect(compared.get('refused')).toBeGreaterThanOrEqual(1);
  });

  it('what the activities write reads the same in an earlier release and now', () => {
    const answers: Answer[] = [
      {
        outcome: 'compacted',
        sessionId: 'l--g2',
        previousSessionId: 'l--g1',
        generation: 2,
        tokensBefore: 9000,
        tokensAfter: 1200,
        messagesBefore: 80,
        messagesAfter: 12,
      },
      { outcome: 'refused', sessionId: 'l', generation: 0, reason: 'gate user-request: no user turn kept', gate: 'user-request', tokensBefore: 400 },
      { outcome: 'stale', sessionId: 'l--g3', generation: 3, reason: 'the head is l--g3 (generation 3); adopting it instead of compacting again' },
      { outcome: 'aborted', sessionId: 'l', generation: 0, reason: 'summariser failed: 401' },
    ];
    // The earlier releases' workflow code, verbatim (toAnswer, src/workflows/compaction-job.ts at 49a3d21).
    const earlierRead = (result: any) => ({
      outcome: result.outcome,
      sessionId: result.headSessionId,
      previousSessionId: result.previousSessionId,
      generation: result.generation,
      reason: result.reason,
      ...(result.gate ? { gate: result.gate } : {}),
      tokensBefore: result.tokensBefore,
      tokensAfter: result.tokensAfter,
      messagesBefore: result.messagesBefore,
      messagesAfter: result.messagesAfter,
    });
    for (const answer of answers) {
      const written = wire(writeJobAnswer(answer));
      expect(wire(readJobAnswer(written))).toEqual(wire(answer));
      expect(wire(earlierRead(written))).toEqual(wire(answer));
    }
  });

  it('a result that names no head is refused, not answered with no head', () => {
    expect(() => readJobAnswer({ outcome: 'compacted', generation: 1 })).toThrow(/names no head/);
  });
});
