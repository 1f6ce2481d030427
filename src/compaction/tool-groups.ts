import type { ChatMessage } from './messages';

/**
 * A unit the head/tail cut never splits: either one plain message, or an assistant message
 * with tool calls together with the tool results that answer it.
 */
export interface MessageGroup {
  start: number; // index of the first message in the transcript
  messages: ChatMessage[];
}

/**
 * Removes tool results whose call is not in the transcript and tool calls whose result is
 * missing. An assistant message that only carried orphaned calls and no text is dropped;
 * one with text keeps its text and loses the orphaned calls.
 */
export function removeOrphanedToolMessages(messages: readonly ChatMessage[]): ChatMessage[] {
  const callIds = new Set<string>();
  const resultIds = new Set<string>();
  for (const m of messages) {
    for (const call of m.tool_calls ?? []) callIds.add(call.id);
    if (m.role === 'tool' && m.tool_call_id) resultIds.add(m.tool_call_id);
  }
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      if (m.tool_call_id && callIds.has(m.tool_call_id)) out.push(m);
      continue;
    }
    if (m.tool_calls && m.tool_calls.length > 0) {
      const answered = m.tool_calls.filter((call) => resultIds.has(call.id));
      if (answered.length === m.tool_calls.length) {
        out.push(m);
      } else if (answered.length > 0) {
        out.push({ ...m, tool_calls: answered });
      } else {
        const { tool_calls: _dropped, ...rest } = m;
        const hasText = typeof rest.content === 'string' ? rest.content.trim() !== '' : rest.content != null && rest.content.length > 0;
        if (hasText) out.push(rest);
      }
      continue;
    }
    out.push(m);
  }
  return out;
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
      open.group.messages.push(m);
      open.pending.delete(m.tool_call_id);
      if (open.pending.size === 0) open = undefined;
      return;
    }
    const group: MessageGroup = { start: index, messages: [m] };
    groups.push(group);
    open = m.tool_calls && m.tool_calls.length > 0 ? { group, pending: new Set(m.tool_calls.map((c) => c.id)) } : undefined;
  });
  return groups;
}
