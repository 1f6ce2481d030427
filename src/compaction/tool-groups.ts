import type { ChatMessage } from './messages';

/**
 * A unit the head/tail cut never splits: one plain message, or an assistant message with
 * tool calls together with the tool results that directly follow and answer it.
 */
export interface MessageGroup {
  /** Positions of the group's messages in the transcript, in order. */
  indices: number[];
  /** Ids of the group's tool calls that no result in the group answers. */
  unanswered: string[];
  /** A tool result that answers no call of a group it follows (a provider rejects it). */
  orphan: boolean;
}

/**
 * Splits a transcript into groups. A tool result directly following its assistant call (or
 * following other results of the same call) joins that call's group.
 */
export function groupMessages(messages: readonly ChatMessage[]): MessageGroup[] {
  const groups: MessageGroup[] = [];
  let open: { group: MessageGroup; pending: Set<string> } | undefined;
  messages.forEach((m, index) => {
    if (m.role === 'tool' && open && m.tool_call_id && open.pending.has(m.tool_call_id)) {
      open.group.indices.push(index);
      open.pending.delete(m.tool_call_id);
      open.group.unanswered = [...open.pending];
      return;
    }
    const calls = m.tool_calls ?? [];
    const group: MessageGroup = { indices: [index], unanswered: calls.map((c) => c.id), orphan: m.role === 'tool' };
    groups.push(group);
    open = calls.length > 0 ? { group, pending: new Set(calls.map((c) => c.id)) } : undefined;
  });
  return groups;
}

/** A group the provider would reject wherever it stands: an orphan result, or calls left unanswered before the end. */
export function isBrokenGroup(group: MessageGroup, isLast: boolean): boolean {
  return group.orphan || (!isLast && group.unanswered.length > 0);
}
