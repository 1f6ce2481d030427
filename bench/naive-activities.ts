import { buildCandidate } from '../src/compaction/candidate';
import type { ChatMessage } from '../src/compaction/messages';
import { planCompaction, DEFAULT_PLAN_OPTIONS } from '../src/compaction/plan';
import type { Summariser } from '../src/activities/summariser';

/** The naive design's activity: the same plan and summariser, the transcript in and out by value. */
export function createNaiveActivities(summariser: Summariser) {
  return {
    async naiveSummarise(messages: ChatMessage[]): Promise<ChatMessage[]> {
      const plan = planCompaction(messages, { ...DEFAULT_PLAN_OPTIONS, tailTokenBudget: 200 });
      if (plan.middle.length === 0) return messages;
      const summary = await summariser.summarise(
        { middle: plan.middle.map((i) => messages[i]), previousSummary: plan.previousSummary, force: false, chunk: { index: 1, count: 1 }, cut: false },
        { signal: new AbortController().signal, onProgress: () => undefined },
      );
      return buildCandidate(plan, summary.text, messages).map((entry) => entry.message);
    },
  };
}

export type NaiveActivities = ReturnType<typeof createNaiveActivities>;
