/** Test transcripts. */

/** A transcript long enough to compact: a system prompt and `turns` user/tool/assistant turns. */
export function conversation(turns: number, options: { toolCalls?: boolean } = {}) {
  const messages: Array<Record<string, unknown>> = [{ role: 'system', content: 'You are a careful coding agent.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: `Request ${i}: please refactor module ${i}; keep the public API stable and add tests for the edge cases.` });
    if (options.toolCalls !== false) {
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'edit_file', arguments: JSON.stringify({ path: `src/module${i}.ts` }) } }],
      });
      messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: `edited src/module${i}.ts: 42 lines changed, tests pass. `.repeat(4) });
    }
    messages.push({ role: 'assistant', content: `Module ${i} is refactored and its tests pass.` });
  }
  return messages;
}
