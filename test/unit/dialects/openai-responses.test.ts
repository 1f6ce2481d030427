// The openai-responses dialect (src/compaction/dialects/openai-responses.ts): Responses API
// input items as Codex CLI and the Agents SDKs store them. Pure functions, no stack needed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SUMMARY_PREFIX } from '../../../src/compaction/dialects/common';
import { openaiResponses as d } from '../../../src/compaction/dialects/openai-responses';
import type { Message, MessageGroup } from '../../../src/compaction/dialects/types';
import { textRuleViolation } from '../../../src/compaction/text';

const user = (text: string): Message => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const easy = (role: string, content: Message['content']): Message => ({ role, content });
const assistant = (text: string, id?: string): Message => ({
  type: 'message',
  role: 'assistant',
  ...(id ? { id, status: 'completed' } : {}),
  content: [{ type: 'output_text', text, annotations: [] }],
});
const reasoning = (summary: string, id?: string): Message => ({
  type: 'reasoning',
  ...(id ? { id } : {}),
  summary: summary ? [{ type: 'summary_text', text: summary }] : [],
  content: null,
  encrypted_content: `gAAAAAB${summary.length}-opaque==`,
});
const call = (callId: string, name = 'shell', args = '{"command":["ls"]}', id?: string): Message => ({
  type: 'function_call',
  ...(id ? { id } : {}),
  name,
  arguments: args,
  call_id: callId,
});
const out = (callId: string, output: Message['output'] = 'ok'): Message => ({ type: 'function_call_output', call_id: callId, output });
const ghost: Message = { type: 'ghost_snapshot', ghost_commit: { id: 'a01966ef', parent: '0f022a04', preexisting_untracked_files: ['.env.local'] } };
const caps = { toolResultChars: 40, toolArgumentChars: 20 };

/** Every pair of positions the provider needs together: a reasoning item and its following model item, a call and its output. */
function mustStayTogether(messages: readonly Message[]): Array<[number, number]> {
  const pairs: Array<[number, number]> = [];
  const isModel = (m: Message) =>
    (m.type === 'message' && m.role === 'assistant') || m.type === 'reasoning' || (typeof m.type === 'string' && m.type.endsWith('_call'));
  messages.forEach((m, i) => {
    if (m.type !== 'reasoning') return;
    for (let j = i + 1; j < messages.length; j++) {
      if (isModel(messages[j])) {
        pairs.push([i, j]);
        break;
      }
      if (messages[j].type !== 'ghost_snapshot') break;
    }
  });
  const open: Array<{ at: number; id: string }> = [];
  messages.forEach((m, i) => {
    if (typeof m.type === 'string' && m.type.endsWith('_call') && typeof m.call_id === 'string') open.push({ at: i, id: m.call_id });
    if (typeof m.type === 'string' && m.type.endsWith('_output')) {
      for (let k = open.length - 1; k >= 0; k--) {
        if (open[k].id === m.call_id) {
          pairs.push([open[k].at, i]);
          open.splice(k, 1);
          break;
        }
      }
    }
  });
  return pairs;
}

function expectCutsKeepPairs(messages: readonly Message[]): MessageGroup[] {
  const groups = d.groups(messages);
  // The groups cover the transcript in order, each contiguous.
  expect(groups.flatMap((g) => g.indices)).toEqual(messages.map((_, i) => i));
  const groupOf = new Map<number, number>();
  groups.forEach((g, k) => g.indices.forEach((i) => groupOf.set(i, k)));
  for (const [a, b] of mustStayTogether(messages)) expect({ pair: [a, b], group: groupOf.get(b) }).toEqual({ pair: [a, b], group: groupOf.get(a) });
  return groups;
}

describe('openai-responses check', () => {
  const accepted: Array<[string, unknown]> = [
    ['a typed message with input_text parts', user('hello')],
    ['an easy-form message with string content', easy('user', 'hello')],
    ['an easy-form developer message', easy('developer', 'be brief')],
    ['an easy-form assistant message', easy('assistant', [{ type: 'output_text', text: 'hi' }])],
    ['an output message with id, status and annotations', assistant('done', 'msg_1')],
    ['an image-only user message', easy('user', [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'auto' }])],
    ['a message with an empty content array', { type: 'message', role: 'user', content: [] }],
    ['reasoning with encrypted_content and content null (Codex)', reasoning('**Planning**')],
    ['reasoning with id and summary []', reasoning('', 'rs_1')],
    ['reasoning without summary (RS-8 is not required at append)', { type: 'reasoning', encrypted_content: 'gAAA' }],
    ['a function_call without id', call('call_1')],
    ['a function_call with id and status', { ...call('call_1', 'shell', '{}', 'fc_1'), status: 'completed' }],
    ['a function_call_output with JSON text', out('call_1', '{"output":"x","metadata":{"exit_code":0}}')],
    [
      'a function_call_output as an array of parts',
      out('call_1', [
        { type: 'input_text', text: 'a' },
        { type: 'input_image', image_url: 'https://x/y.png' },
      ]),
    ],
    ['a custom_tool_call', { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' }],
    ['a custom_tool_call_output', { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done' }],
    [
      'a local_shell_call',
      { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } },
    ],
    ['a local_shell_call_output by call_id (Codex)', { type: 'local_shell_call_output', call_id: 'call_s', output: 'a\nb' }],
    ['a local_shell_call_output by id (the API type)', { type: 'local_shell_call_output', id: 'lsh_1', output: 'a\nb' }],
    [
      'a computer_call',
      { type: 'computer_call', id: 'cu_1', call_id: 'call_c', action: { type: 'click', x: 1, y: 2 }, pending_safety_checks: [], status: 'completed' },
    ],
    [
      'a computer_call_output',
      { type: 'computer_call_output', call_id: 'call_c', output: { type: 'computer_screenshot', image_url: 'data:image/png;base64,AA' } },
    ],
    ['a shell_call', { type: 'shell_call', call_id: 'call_sh', action: { commands: ['ls'] }, status: 'completed' }],
    ['a shell_call_output', { type: 'shell_call_output', call_id: 'call_sh', output: [{ stdout: 'a', stderr: '', outcome: { type: 'exit', exit_code: 0 } }] }],
    [
      'an apply_patch_call',
      { type: 'apply_patch_call', call_id: 'call_ap', operation: { type: 'update_file', path: 'a.ts', diff: '@@' }, status: 'completed' },
    ],
    ['an apply_patch_call_output', { type: 'apply_patch_call_output', call_id: 'call_ap', status: 'completed' }],
    ['an mcp_call', { type: 'mcp_call', id: 'mcp_1', server_label: 'gh', name: 'search', arguments: '{}', output: '[]' }],
    ['a web_search_call', { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'lm studio' } }],
    ['a file_search_call', { type: 'file_search_call', id: 'fs_1', queries: ['x'], status: 'completed' }],
    ['an image_generation_call', { type: 'image_generation_call', id: 'ig_1', result: 'iVBORw0KGgo', status: 'completed' }],
    [
      'a code_interpreter_call',
      { type: 'code_interpreter_call', id: 'ci_1', code: 'print(1)', container_id: 'c', outputs: [{ type: 'logs', logs: '1' }], status: 'completed' },
    ],
    ['an item_reference', { type: 'item_reference', id: 'rs_1' }],
    ['an item reference without its optional type', { id: 'rs_1' }],
    ['a compaction item', { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAA' }],
    ["Codex's ghost_snapshot", ghost],
    ['an unknown item type', { type: 'future_thing', anything: [1, { x: null }] }],
  ];
  it.each(accepted)('accepts %s', (_name, item) => {
    expect(d.check(item)).toBeUndefined();
  });

  const refused: Array<[string, unknown, string]> = [
    ['an array', [user('x')], ''],
    ['null', null, ''],
    ['a string', 'hello', ''],
    ['an item with neither type nor role', { content: 'hello' }, 'type'],
    ['an empty type', { type: '', role: 'user', content: 'x' }, 'type'],
    ['a numeric type', { type: 7 }, 'type'],
    ['a message with role tool', { type: 'message', role: 'tool', content: 'x' }, 'role'],
    ['a typed message without role', { type: 'message', content: 'x' }, 'role'],
    ['an easy message with a made-up role', easy('function', 'x'), 'role'],
    ['a message without content', { type: 'message', role: 'user' }, 'content'],
    ['a message with null content', easy('assistant', null), 'content'],
    ['a message with numeric content', easy('user', 3), 'content'],
    ['a content part that is not an object', easy('user', ['x']), 'content[0]'],
    ['a content part without type', easy('user', [{ type: 'input_text', text: 'a' }, { text: 'b' }]), 'content[1].type'],
    ['an input_text part without text', easy('user', [{ type: 'input_text' }]), 'content[0].text'],
    ['an output_text part with numeric text', easy('assistant', [{ type: 'output_text', text: 5 }]), 'content[0].text'],
    ['a reasoning item whose summary is not an array', { type: 'reasoning', summary: 'thinking' }, 'summary'],
    ['a reasoning summary entry that is not an object', { type: 'reasoning', summary: ['thinking'] }, 'summary[0]'],
    ['a function_call without call_id', { type: 'function_call', name: 'f', arguments: '{}' }, 'call_id'],
    ['a function_call with an empty call_id', call(''), 'call_id'],
    ['a function_call without name', { type: 'function_call', call_id: 'c', arguments: '{}' }, 'name'],
    ['a function_call with object arguments', { type: 'function_call', call_id: 'c', name: 'f', arguments: { a: 1 } }, 'arguments'],
    ['a custom_tool_call without input', { type: 'custom_tool_call', call_id: 'c', name: 'f' }, 'input'],
    ['a function_call_output without call_id', { type: 'function_call_output', output: 'x' }, 'call_id'],
    ['a function_call_output without output', { type: 'function_call_output', call_id: 'c' }, 'output'],
    ['a function_call_output with an object output', out('c', { result: 1 }), 'output'],
    ['a function_call_output part without type', out('c', [{ text: 'a' }]), 'output[0].type'],
    ['a custom_tool_call_output with a numeric call_id', { type: 'custom_tool_call_output', call_id: 5, output: 'x' }, 'call_id'],
    ['a computer_call_output without call_id', { type: 'computer_call_output', output: {} }, 'call_id'],
    ['a local_shell_call_output with neither call_id nor id', { type: 'local_shell_call_output', output: 'x' }, 'call_id'],
    ['an item_reference without id', { type: 'item_reference' }, 'id'],
  ];
  it.each(refused)('refuses %s', (_name, item, field) => {
    const problem = d.check(item);
    expect(problem).toBeDefined();
    expect(problem!.field).toBe(field);
    expect(problem!.detail.length).toBeGreaterThan(0);
  });
});

describe('openai-responses roles and text', () => {
  it('files items under their role: messages by role, outputs as tool, model and unknown items as assistant', () => {
    expect(d.roleOf(easy('system', 'x'))).toBe('system');
    expect(d.roleOf({ type: 'message', role: 'developer', content: 'x' })).toBe('developer');
    expect(d.roleOf(user('x'))).toBe('user');
    expect(d.roleOf(assistant('x'))).toBe('assistant');
    expect(d.roleOf(out('c'))).toBe('tool');
    expect(d.roleOf({ type: 'custom_tool_call_output', call_id: 'c', output: 'x' })).toBe('tool');
    expect(d.roleOf({ type: 'local_shell_call_output', id: 'lsh', output: 'x' })).toBe('tool');
    expect(d.roleOf(reasoning('x'))).toBe('assistant');
    expect(d.roleOf(call('c'))).toBe('assistant');
    expect(d.roleOf({ type: 'web_search_call', id: 'ws' })).toBe('assistant');
    expect(d.roleOf(ghost)).toBe('assistant');
  });

  it('textOf reads message text only', () => {
    expect(d.textOf(easy('user', 'plain'))).toBe('plain');
    expect(
      d.textOf(
        easy('user', [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'u' },
          { type: 'input_text', text: 'b' },
        ]),
      ),
    ).toBe('ab');
    expect(d.textOf(assistant('said'))).toBe('said');
    expect(d.textOf(call('c'))).toBe('');
    expect(d.textOf(out('c', 'result'))).toBe('');
    expect(d.textOf(reasoning('thought'))).toBe('');
  });

  it('texts: message parts, call name/arguments/id, outputs, reasoning summaries, never encrypted content', () => {
    expect(
      d.texts(
        easy('user', [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'data:...' },
        ]),
      ),
    ).toEqual(['a']);
    expect(d.texts(easy('assistant', [{ type: 'refusal', refusal: 'no' }]))).toEqual(['no']);
    expect(d.texts(call('call_1', 'shell', '{"a":1}'))).toEqual(['shell', '{"a":1}', 'call_1']);
    expect(d.texts(out('call_1', '{"ok":true}'))).toEqual(['call_1', '{"ok":true}']);
    expect(
      d.texts(
        out('call_1', [
          { type: 'input_text', text: 'x' },
          { type: 'input_image', image_url: 'data:' },
        ]),
      ),
    ).toEqual(['call_1', 'x']);
    const r = reasoning('**Plan**');
    expect(d.texts(r)).toEqual(['**Plan**']);
    expect(d.texts(r).join('')).not.toContain(String(r.encrypted_content));
    expect(d.texts({ type: 'custom_tool_call', call_id: 'c', name: 'apply_patch', input: 'P' })).toEqual(['apply_patch', 'P', 'c']);
    expect(d.texts({ type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } })).toEqual(['search', 'q']);
    expect(d.texts({ type: 'compaction', encrypted_content: 'gAAA' })).toEqual([]);
  });

  it('instructions are system and developer messages; opening groups are kept', () => {
    expect(d.keepsOpeningGroups).toBe(true);
    expect(d.isInstruction(easy('system', 'x'))).toBe(true);
    expect(d.isInstruction({ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'x' }] })).toBe(true);
    expect(d.isInstruction(user('x'))).toBe(false);
    expect(d.isInstruction(reasoning('x'))).toBe(false);
  });
});

describe('openai-responses groups', () => {
  it('parallel calls: reasoning, fc1, fc2, out1, out2 is one group', () => {
    const t = [user('go'), reasoning('r'), call('c1'), call('c2'), out('c1'), out('c2'), assistant('done')];
    const groups = expectCutsKeepPairs(t);
    expect(groups.map((g) => g.indices)).toEqual([[0], [1, 2, 3, 4, 5], [6]]);
    expect(groups.every((g) => g.unanswered.length === 0 && !g.orphan)).toBe(true);
  });

  it('a reasoning item stays with the message it belongs to, and passes over unknown items', () => {
    const t = [user('hi'), reasoning('r', 'rs_1'), assistant('hello', 'msg_1'), user('again'), reasoning('r2'), ghost, call('c1'), out('c1')];
    expect(expectCutsKeepPairs(t).map((g) => g.indices)).toEqual([[0], [1, 2], [3], [4, 5, 6, 7]]);
  });

  it('a reasoning item joins the whole model turn after it, not the turn before', () => {
    const t = [user('x'), assistant('first'), reasoning('r'), call('c1'), reasoning('r2'), call('c2'), out('c1'), out('c2')];
    expect(expectCutsKeepPairs(t).map((g) => g.indices)).toEqual([[0], [1], [2, 3, 4, 5, 6, 7]]);
  });

  it('re-used call ids pair by position with the nearest earlier unanswered call', () => {
    const t = [call('call_1'), out('call_1', 'a'), user('more'), call('call_1'), out('call_1', 'b')];
    const groups = expectCutsKeepPairs(t);
    expect(groups.map((g) => g.indices)).toEqual([[0, 1], [2], [3, 4]]);
    expect(d.resultsOf(t, 3, ['call_1'])).toEqual([4]);
    expect(d.resultsOf(t, 0, ['call_1'])).toEqual([1]);
  });

  it('an output with no earlier call is an orphan; a second output for an answered call too', () => {
    const t = [user('x'), out('call_9'), call('call_1'), out('call_1'), out('call_1')];
    const groups = d.groups(t);
    expect(groups.map((g) => [g.indices, g.orphan])).toEqual([
      [[0], false],
      [[1], true],
      [[2, 3], false],
      [[4], true],
    ]);
  });

  it('calls that need an output and have none are unanswered; calls with inline results never are', () => {
    const t: Message[] = [
      user('x'),
      { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
      { type: 'mcp_call', id: 'mcp_1', server_label: 's', name: 'n', arguments: '{}', output: 'r' },
      { type: 'image_generation_call', id: 'ig_1', call_id: 'ig_call', result: 'AA', status: 'completed' },
      { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: 'P' },
      { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } },
    ];
    const groups = d.groups(t);
    expect(groups.flatMap((g) => g.unanswered)).toEqual(['call_p', 'call_s']);
    // The two open calls are one turn's parallel calls: one group, both open.
    expect(groups.map((g) => g.indices)).toEqual([[0], [1], [2], [3], [4, 5]]);
    expect(d.openCalls(t)).toEqual({ index: 4, ids: ['call_p', 'call_s'] });
  });

  it('a local_shell_call answered by a function_call_output (Codex) or by its id (the API type) is answered', () => {
    const shell = { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } };
    const byCallId = [user('x'), reasoning('r'), shell, out('call_s', 'a\nb')];
    expect(expectCutsKeepPairs(byCallId).map((g) => [g.indices, g.unanswered])).toEqual([
      [[0], []],
      [[1, 2, 3], []],
    ]);
    const byId = [user('x'), shell, { type: 'local_shell_call_output', id: 'lsh_1', output: 'a' }];
    expect(d.groups(byId).map((g) => g.indices)).toEqual([[0], [1, 2]]);
    expect(d.providerCheck(byId)).toBeUndefined();
  });

  it('every call type pairs with its output, and everything between stays in the group', () => {
    const t: Message[] = [
      { type: 'computer_call', id: 'cu_1', call_id: 'call_c', action: { type: 'screenshot' }, pending_safety_checks: [], status: 'completed' },
      user('note in between'),
      { type: 'computer_call_output', call_id: 'call_c', output: { type: 'computer_screenshot', image_url: 'data:image/png;base64,AA' } },
      { type: 'apply_patch_call', call_id: 'call_ap', operation: { type: 'delete_file', path: 'x' }, status: 'completed' },
      { type: 'apply_patch_call_output', call_id: 'call_ap', status: 'failed', output: 'no such file' },
      { type: 'mcp_approval_request', id: 'mcpr_1', server_label: 's', name: 'n', arguments: '{}' },
      { type: 'mcp_approval_response', approval_request_id: 'mcpr_1', approve: true },
    ];
    expect(expectCutsKeepPairs(t).map((g) => g.indices)).toEqual([
      [0, 1, 2],
      [3, 4],
      [5, 6],
    ]);
  });

  it('parallel calls of one turn stay together before any is answered (no reasoning)', () => {
    const t = [user('x'), call('c1'), ghost, call('c2')];
    expect(d.groups(t).map((g) => [g.indices, g.unanswered])).toEqual([
      [[0], []],
      [
        [1, 2, 3],
        ['c1', 'c2'],
      ],
    ]);
    expect(d.openCalls(t)).toEqual({ index: 1, ids: ['c1', 'c2'] });
    // Calls of separate turns are separate groups.
    expect(d.groups([user('x'), call('c1'), out('c1'), call('c2')]).map((g) => g.indices)).toEqual([[0], [1, 2], [3]]);
  });

  it('openCalls: the first open call of the last group; none once answered', () => {
    const t = [user('x'), reasoning('r'), call('c1'), call('c2'), out('c1')];
    expect(d.openCalls(t)).toEqual({ index: 3, ids: ['c2'] });
    expect(d.resultsOf(t, 2, ['c1'])).toEqual([4]);
    expect(d.resultsOf(t, 3, ['c2'])).toEqual([]);
    expect(d.openCalls([...t, out('c2')])).toBeUndefined();
    expect(d.openCalls([user('x')])).toBeUndefined();
  });

  it('cut points never separate reasoning from its following item or a call from its output (messy shapes)', () => {
    const transcripts: Message[][] = [
      [easy('developer', 'rules'), user('a'), ghost, reasoning('r1'), call('c1'), call('c2'), out('c2'), out('c1'), reasoning('r2'), assistant('x')],
      [
        user('a'),
        reasoning('r1'),
        ghost,
        call('c1'),
        out('c1', [{ type: 'input_text', text: 'x' }]),
        reasoning('r2'),
        call('c1'),
        out('c1', '"42"'),
        user('b'),
      ],
      [user('a'), call('c1'), out('c1'), call('c1'), reasoning('r'), assistant('y', 'msg_1'), out('c1'), user('c'), reasoning('r3'), call('c3')],
      [reasoning('dangling'), user('a'), out('orphan'), reasoning('r'), { type: 'web_search_call', id: 'ws', status: 'completed' }, assistant('z')],
    ];
    for (const t of transcripts) {
      const groups = expectCutsKeepPairs(t);
      expect(groups.length).toBeGreaterThan(1);
    }
  });
});

describe('openai-responses requests and summaries', () => {
  it('a real user request is a user message with text, or with only an image or a file', () => {
    expect(d.isRealUserRequest(user('fix it'))).toBe(true);
    expect(d.isRealUserRequest(easy('user', 'fix it'))).toBe(true);
    expect(d.isRealUserRequest(easy('user', [{ type: 'input_image', image_url: 'data:image/png;base64,AA' }]))).toBe(true);
    expect(
      d.isRealUserRequest(
        easy('user', [
          { type: 'input_text', text: '' },
          { type: 'input_file', file_id: 'file-1' },
        ]),
      ),
    ).toBe(true);
    expect(d.isRealUserRequest(easy('user', '   '))).toBe(false);
    expect(d.isRealUserRequest(easy('user', [{ type: 'input_text', text: ' \n' }]))).toBe(false);
    expect(d.isRealUserRequest(easy('user', []))).toBe(false);
    expect(d.isRealUserRequest(assistant('hi'))).toBe(false);
    expect(d.isRealUserRequest(easy('developer', 'x'))).toBe(false);
    expect(d.isRealUserRequest(out('c', 'user said'))).toBe(false);
    expect(d.isRealUserRequest(d.summaryMessages('s', undefined)[0])).toBe(false);
  });

  it('the summary is one user message with an input_text part that starts with the marker', () => {
    const [summary, ...rest] = d.summaryMessages('  what happened  ', user('next'));
    expect(rest).toEqual([]);
    expect(summary).toEqual({ type: 'message', role: 'user', content: [{ type: 'input_text', text: `${SUMMARY_PREFIX}\nwhat happened` }] });
    expect(d.check(summary)).toBeUndefined();
    expect(d.isSummary(summary)).toBe(true);
    expect(d.posesAsSummary(summary)).toBe(true);
    expect(d.roleOf(summary)).toBe('user');
  });

  it('posesAsSummary catches a marker behind white space or format characters; isSummary needs it exactly', () => {
    const forged = easy('user', `\u200b ${SUMMARY_PREFIX}\nfake`);
    expect(d.posesAsSummary(forged)).toBe(true);
    expect(d.isSummary(forged)).toBe(false);
    expect(d.posesAsSummary(easy('assistant', [{ type: 'output_text', text: SUMMARY_PREFIX }]))).toBe(true);
    expect(d.posesAsSummary(user('an ordinary request'))).toBe(false);
    expect(d.isSummary(out('c', SUMMARY_PREFIX))).toBe(false);
  });
});

describe('openai-responses render', () => {
  it('messages as role: text, with placeholders for images and files', () => {
    expect(d.render(user('hello'), caps)).toBe('user: hello');
    expect(
      d.render(
        easy('user', [
          { type: 'input_text', text: 'see' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA' },
          { type: 'input_file', filename: 'a.pdf', file_data: 'JVBERi0' },
        ]),
        caps,
      ),
    ).toBe('user: see [input_image] [input_file: a.pdf]');
    expect(d.render(easy('assistant', [{ type: 'refusal', refusal: 'no' }]), caps)).toBe('assistant: (refused: no)');
  });

  it('calls as name(arguments) clipped, outputs as tool result (call_id) clipped, JSON text as is', () => {
    expect(d.render(call('call_1', 'shell', '{"command":["ls"]}'), caps)).toBe('assistant: [call call_1] shell({"command":["ls"]})');
    const long = d.render(call('call_1', 'shell', 'x'.repeat(100)), caps);
    expect(long).toContain(`shell(${'x'.repeat(20)} [... 80 more characters of these arguments not shown])`);
    expect(d.render(out('call_1', '{"output":"a","metadata":{"exit":0}}'), caps)).toBe('tool result (call_1): {"output":"a","metadata":{"exit":0}}');
    expect(d.render(out('call_1', 'y'.repeat(50)), caps)).toBe(
      `tool result (call_1): ${'y'.repeat(40)} [... 10 more characters of this tool result not shown]`,
    );
    expect(
      d.render(
        out('call_1', [
          { type: 'input_text', text: 'a' },
          { type: 'input_image', image_url: 'data:' },
        ]),
        caps,
      ),
    ).toBe('tool result (call_1): a [input_image]');
    expect(d.render({ type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: 'PATCH' }, caps)).toBe(
      'assistant: [call call_p] apply_patch(PATCH)',
    );
    expect(d.render({ type: 'mcp_call', id: 'm', server_label: 'gh', name: 'search', arguments: '{"q":1}', output: 'found' }, caps)).toBe(
      'assistant: gh.search({"q":1}) -> found',
    );
    expect(d.render({ type: 'image_generation_call', id: 'ig', result: 'iVBORw0KGgo'.repeat(100), status: 'completed' }, caps)).toBe(
      'assistant: image_generation() -> [generated image]',
    );
    expect(d.render({ type: 'computer_call_output', call_id: 'call_c', output: { type: 'computer_screenshot', image_url: 'data:AA' } }, caps)).toBe(
      'tool result (call_c): [computer_screenshot]',
    );
  });

  it('cuts on a grapheme boundary', () => {
    const family = '👨‍👩‍👧‍👦';
    const text = d.render(out('c', `${'a'.repeat(38)}${family}tail`), caps);
    expect(text.startsWith(`tool result (c): ${'a'.repeat(38)} [...`)).toBe(true);
    expect(textRuleViolation(text)).toBeUndefined();
    expect(text).not.toContain('\u200d [');
  });

  it('reasoning renders as nothing: no summary, no encrypted content; unknown items by type', () => {
    const r = reasoning('**Secret plan**');
    expect(d.render(r, caps)).toBe('');
    expect(d.render(ghost, caps)).toBe('[item ghost_snapshot]');
    expect(d.render({ type: 'compaction', encrypted_content: 'gAAA' }, caps)).toBe('[item compaction]');
    expect(d.render({ id: 'rs_1' }, caps)).toBe('[item item_reference]');
  });
});

describe('openai-responses providerCheck', () => {
  it('accepts a well-formed transcript with parallel calls, re-used ids and unknown items', () => {
    const t = [
      easy('developer', 'rules'),
      user('go'),
      ghost,
      reasoning('r1', 'rs_1'),
      call('call_1', 'a', '{}', 'fc_1'),
      call('call_2', 'b', '{}', 'fc_2'),
      out('call_1'),
      out('call_2', [{ type: 'input_text', text: 'x' }]),
      reasoning('r2', 'rs_2'),
      call('call_1'),
      out('call_1', '"42"'),
      reasoning('r3', 'rs_3'),
      assistant('done', 'msg_1'),
    ];
    expect(d.providerCheck(t)).toBeUndefined();
  });

  it('RS-1: an output without an earlier call', () => {
    expect(d.providerCheck([user('x'), out('call_9')])).toBe('No tool call found for function call output with call_id call_9.');
    expect(d.providerCheck([user('x'), out('call_9'), call('call_9')])).toBe('No tool call found for function call output with call_id call_9.');
    expect(d.providerCheck([user('x'), { type: 'custom_tool_call_output', call_id: 'call_p', output: 'x' }])).toBe(
      'No tool call found for custom tool call output with call_id call_p.',
    );
    expect(d.providerCheck([user('x'), call('call_9'), out('call_9')])).toBeUndefined();
  });

  it('RS-2: a call without output before the model is asked again; open calls at the very end are fine', () => {
    expect(d.providerCheck([user('x'), call('call_1'), user('y')])).toBe('No tool output found for function call call_1.');
    expect(d.providerCheck([user('x'), reasoning('r'), call('call_1'), call('call_2'), out('call_2'), reasoning('r2'), assistant('z')])).toBe(
      'No tool output found for function call call_1.',
    );
    expect(d.providerCheck([user('x'), { type: 'custom_tool_call', call_id: 'call_p', name: 'p', input: 'i' }, user('y')])).toBe(
      'No tool output found for custom tool call call_p.',
    );
    // Open at the end: the agent is about to answer them (all, or the rest of a parallel batch).
    expect(d.providerCheck([user('x'), reasoning('r'), call('call_1')])).toBeUndefined();
    expect(d.providerCheck([user('x'), reasoning('r'), call('call_1'), call('call_2'), out('call_1')])).toBeUndefined();
    expect(d.providerCheck([user('x'), reasoning('r'), call('call_1'), assistant('running it')])).toBeUndefined();
    // Inline-result calls never need an output.
    expect(d.providerCheck([user('x'), { type: 'web_search_call', id: 'ws', status: 'completed' }, assistant('z'), user('y')])).toBeUndefined();
  });

  it('RS-3: a reasoning item needs a following model item', () => {
    expect(d.providerCheck([user('x'), reasoning('r', 'rs_1'), user('y')])).toBe(
      "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    );
    expect(d.providerCheck([user('x'), reasoning('r', 'rs_1')])).toBe("Item 'rs_1' of type 'reasoning' was provided without its required following item.");
    expect(d.providerCheck([user('x'), call('c'), reasoning('r'), out('c')])).toBe(
      "Item 'input[2]' of type 'reasoning' was provided without its required following item.",
    );
    expect(d.providerCheck([user('x'), reasoning('r', 'rs_1'), ghost, assistant('y')])).toBeUndefined();
    expect(d.providerCheck([user('x'), reasoning('r', 'rs_1'), { type: 'web_search_call', id: 'ws', status: 'completed' }, assistant('y')])).toBeUndefined();
  });

  it('RS-5: an item referenced by id only', () => {
    expect(d.providerCheck([user('x'), { type: 'item_reference', id: 'rs_1' }])).toBe(
      "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
    );
    expect(d.providerCheck([{ id: 'msg_1' }, user('x')])).toBe("Item with id 'msg_1' not found. Items are not persisted when `store` is set to false.");
  });

  it('RS-6: duplicate item ids', () => {
    const r = reasoning('r', 'rs_1');
    expect(d.providerCheck([user('x'), r, assistant('a'), user('y'), r, assistant('b')])).toBe(
      'Duplicate item found with id rs_1. Remove duplicate items from your input and try again.',
    );
    expect(
      d.providerCheck([user('x'), reasoning('r', 'rs_1'), assistant('a', 'msg_1'), user('y'), reasoning('r', 'rs_2'), assistant('b', 'msg_2')]),
    ).toBeUndefined();
  });

  it('RS-8: a reasoning item keeps its summary, even []', () => {
    expect(d.providerCheck([user('x'), { type: 'reasoning', id: 'rs_1', encrypted_content: 'gAAA' }, assistant('a')])).toBe(
      "Missing required parameter: 'input[1].summary'.",
    );
    expect(d.providerCheck([user('x'), reasoning('', 'rs_1'), assistant('a')])).toBeUndefined();
  });

  it('reports the first problem by position', () => {
    expect(d.providerCheck([user('x'), out('call_9'), reasoning('r', 'rs_1'), user('y')])).toBe(
      'No tool call found for function call output with call_id call_9.',
    );
  });
});

describe('openai-responses forProvider and the rest', () => {
  it('strips provider ids from assistant messages and function calls of turns without reasoning, nothing else', () => {
    const r = reasoning('r', 'rs_1');
    const t: Message[] = [
      { type: 'message', id: 'msg_u', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
      call('call_1', 'a', '{}', 'fc_1'),
      { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_p', name: 'p', input: 'i' },
      { type: 'local_shell_call', id: 'lsh_1', call_id: 'call_s', status: 'completed', action: { type: 'exec', command: ['ls'], env: {} } },
      out('call_1'),
      { type: 'custom_tool_call_output', call_id: 'call_p', output: 'x' },
      out('call_s'),
      assistant('after tools', 'msg_2'),
      user('y'),
      r,
      ghost,
      call('call_2', 'b', '{}', 'fc_2'),
      out('call_2'),
      assistant('kept', 'msg_3'),
    ];
    const before = JSON.stringify(t);
    const view = d.forProvider(t);
    expect(JSON.stringify(t)).toBe(before); // the input is not changed
    expect(view.length).toBe(t.length);
    expect(view[0]).toBe(t[0]); // user message ids stay
    expect(view[1]).toEqual({ type: 'function_call', name: 'a', arguments: '{}', call_id: 'call_1' });
    expect(view[2]).toEqual({ type: 'custom_tool_call', call_id: 'call_p', name: 'p', input: 'i' });
    expect(view[3]).toBe(t[3]); // its id is required by the API
    expect(view[7]).toEqual({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'after tools', annotations: [] }],
    });
    // The turn with its reasoning keeps every id; the reasoning and unknown items are the same objects.
    expect(view.slice(9, 12)).toEqual(t.slice(9, 12));
    expect(view[9]).toBe(r);
    expect(view[9].encrypted_content).toBe(r.encrypted_content);
    expect(view[10]).toBe(ghost);
    // The last assistant message is a turn of its own, after an output: no reasoning, so no id.
    expect(view[13]).not.toHaveProperty('id');
  });

  it('leaves a Codex-style head (no ids) as it is', () => {
    const t = [user('x'), reasoning('r'), call('c1'), out('c1'), call('c2'), out('c2')];
    expect(d.forProvider(t)).toEqual(t);
  });

  it('has no hold reason', () => {
    expect(d.holdReason([user('x'), reasoning('r'), call('c1')])).toBeUndefined();
  });
});

const corpusDir = join(__dirname, '..', '..', '..', '..', 'shared', 'corpus', 'openai-responses');

describe('openai-responses on real transcripts', () => {
  it.skipIf(!existsSync(corpusDir))('accepts every item of the corpus, and each transcript as the provider took it', () => {
    const files = readdirSync(corpusDir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const { messages } = JSON.parse(readFileSync(join(corpusDir, file), 'utf8')) as { messages: Message[] };
      messages.forEach((m, i) => expect({ file, i, problem: d.check(m) }).toEqual({ file, i, problem: undefined }));
      expect({ file, problem: d.providerCheck(messages) }).toEqual({ file, problem: undefined });
      const groups = expectCutsKeepPairs(messages);
      expect(groups.every((g) => !g.orphan && g.unanswered.length === 0)).toBe(true);
      expect(d.openCalls(messages)).toBeUndefined();
      expect(d.forProvider(messages)).toEqual(messages);
      expect(messages.some((m) => d.isRealUserRequest(m))).toBe(true);
      for (const m of messages) {
        const line = d.render(m, { toolResultChars: 2000, toolArgumentChars: 500 });
        if (typeof m.encrypted_content === 'string') expect(line).not.toContain(m.encrypted_content);
        expect(d.texts(m).every((s) => typeof s === 'string')).toBe(true);
      }
    }
  });
});
