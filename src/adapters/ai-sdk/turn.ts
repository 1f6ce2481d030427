/**
 * One turn of an AI SDK conversation kept in a lineage: the user's input, the steps the model
 * takes (`generateText` / `streamText`, with tools several steps), and what is appended when.
 *
 * - `messages`: what to pass to `generateText` / `streamText` as `messages`, the lineage's
 *   head (the provider view) followed by the input;
 * - `prepareStep`: before each step after the first, appends the finished steps' response
 *   messages (the first with the input in the same batch) and reads the head; when the head is
 *   not what this turn appended onto the head it started from (the service compacted since,
 *   or another process appended), answers `{ messages: <head> }`, so the step sends the head
 *   and the SDK carries it forward to the later steps;
 * - `finish`: appends the steps not appended yet (the last one: no prepareStep follows it).
 *   Give it the `generateText` result or `streamText`'s `onFinish` / `onEnd` event.
 *
 * Each batch is keyed by its step's response id and content (responseAppendKey): a step
 * persisted again (a retried finish) is stored once. The input is stored with the first
 * step's answer: a turn whose model call failed leaves nothing behind, and a retry of it
 * stores its input once. Every read and append names the lineage's root session id; the
 * service resolves the head, so two processes on one conversation never fork it.
 */
import type { ModelMessage } from 'ai';
import type { SessionsClient } from '../../client/sessions-client';
import { dialectOf, type Message } from '../../compaction/dialects';
import { jsonEqual } from '../../compaction/json';
import { responseAppendKey, toStoredMessages } from './messages';

/** What a finished step gives the turn: its response id and response messages. */
export interface FinishedStep {
  readonly response: { readonly id: string; readonly messages: readonly ModelMessage[] };
}

/** What `prepareStep` needs of the SDK's options: the steps finished so far. */
export interface StepsSoFar {
  readonly steps: readonly FinishedStep[];
}

export interface LineageTurn {
  /** The lineage's head (as the provider is sent it) followed by the turn's input. */
  readonly messages: ModelMessage[];
  /** For `generateText` / `streamText`'s `prepareStep`. */
  readonly prepareStep: (options: StepsSoFar) => Promise<{ messages: ModelMessage[] } | undefined>;
  /** Appends what is not appended yet; give it the result or the onFinish / onEnd event. */
  readonly finish: (result: StepsSoFar) => Promise<void>;
  /** How many steps were sent the lineage's head because it changed during the turn. */
  readonly headChanges: number;
}

/** The head of a transcript in the provider view, as the SDK takes it. */
export const providerView = (transcript: { dialect: Parameters<typeof dialectOf>[0]; messages: Message[] }): ModelMessage[] =>
  dialectOf(transcript.dialect).forProvider(transcript.messages) as unknown as ModelMessage[];

export function startTurn(
  sessions: SessionsClient,
  sessionId: string,
  head: { dialect: Parameters<typeof dialectOf>[0]; messages: Message[] },
  input: readonly ModelMessage[],
): LineageTurn {
  const stored = toStoredMessages(input);
  /** What the head holds as far as this turn knows: the head it started from and what it appended. */
  let known = head.messages;
  let appended = 0;
  let headChanges = 0;
  /** prepareStep and finish run one after the other (a finish given while a step is prepared waits). */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => undefined);
    return next;
  };

  const appendSteps = async (steps: readonly FinishedStep[]) => {
    for (; appended < steps.length; appended++) {
      const { response } = steps[appended];
      const batch = [...(appended === 0 ? stored : []), ...toStoredMessages(response.messages)];
      if (batch.length > 0) await sessions.append(sessionId, batch, { appendKey: responseAppendKey(response.id, batch) });
      known = [...known, ...batch];
    }
  };

  const turn: LineageTurn = {
    messages: [...providerView(head), ...(stored as unknown as ModelMessage[])],
    prepareStep: ({ steps }) =>
      serial(async () => {
        if (steps.length === 0) return undefined;
        await appendSteps(steps);
        const now = await sessions.transcript(sessionId);
        if (jsonEqual(now.messages, known)) return undefined;
        known = now.messages;
        headChanges++;
        return { messages: providerView(now) };
      }),
    finish: ({ steps }) => serial(() => appendSteps(steps)),
    get headChanges() {
      return headChanges;
    },
  };
  return turn;
}
