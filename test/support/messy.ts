/**
 * Messy agent transcripts, generated per dialect from a seed: what the real corpus taught us
 * (../shared/corpus), made here so `npm test` never depends on it. JSON text tool outputs
 * ("42", "{\"status\": \"ok\"}"), SDK extra fields (`refusal: null`, `annotations: []`,
 * `tool_calls[].index`, `cache_control`, `name` on tool results), tool content as a string
 * then as parts, re-used call ids across turns, parallel calls with results stored one per
 * entry, consecutive same-role turns, thinking blocks with signatures, reasoning items with
 * encrypted content, thought signatures, image-only user requests, emoji and astral text; for
 * the AI SDK, `json`, `text`, `error-text` and `content` tool outputs, reasoning Anthropic signed,
 * base64 images and PDF files, and provider options on parts.
 */
import type { DialectName, Message } from '../../src/compaction/dialects';
import type { JsonObject, JsonValue } from '../../src/compaction/json';
import { seededRandom } from './strict-provider';
import { toAgentsItems } from './agents-items';

const TEXTS = [
  'Fix the failing parser test 😀 and explain why it broke.',
  'Now document the parser; keep the examples short.',
  'Use the staging database, not production — 𝒞ompany rule.',
  'What does `Result<T, E>` mean here? Answer in 日本語 too.',
  'Try again, but with the --no-cache flag.',
];
const OUTPUTS = [
  '42',
  '{"status": "ok"}',
  '[]',
  'null',
  '{"rows": [{"id": 1, "name": "Ада"}], "more": false}',
  'Error: payment amount does not add up',
  'true',
];

export function messyTranscript(dialect: DialectName, seed: number, turns = 14): Message[] {
  // The Agents SDK stores the Responses items in its own spelling.
  if (dialect === 'openai-agents') return toAgentsItems(messyTranscript('openai-responses', seed, turns));
  const rand = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const big = () => `${'line of output with ünïcode and 🧑‍💻 '.repeat(40 + Math.floor(rand() * 200))}end`;
  const output = () => (rand() < 0.15 ? big() : pick(OUTPUTS));
  // Re-used ids: a small pool, so the same id comes back in later turns (pairing is by position).
  const callId = (k: number) => `call_${dialect === 'anthropic' ? 'toolu_' : ''}${Math.floor(rand() * 4)}${k}`;
  const data = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk';
  const out: Message[] = [];
  const user = (text: string): Message => {
    if (dialect === 'anthropic')
      return rand() < 0.5 ? { role: 'user', content: text } : { role: 'user', content: [{ type: 'text', text, cache_control: { type: 'ephemeral' } }] };
    if (dialect === 'gemini') return { role: 'user', parts: [{ text }] };
    if (dialect === 'ai-sdk')
      return rand() < 0.5
        ? { role: 'user', content: text }
        : { role: 'user', content: [{ type: 'text', text, providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }] };
    if (dialect === 'openai-responses')
      return rand() < 0.5 ? { role: 'user', content: text } : { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
    return rand() < 0.3 ? { role: 'user', content: [{ type: 'text', text }], cache_control: { type: 'ephemeral' } } : { role: 'user', content: text };
  };
  const imageOnly = (): Message => {
    if (dialect === 'anthropic') return { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }] };
    if (dialect === 'gemini') return { role: 'user', parts: [{ inlineData: { mimeType: 'image/png', data } }] };
    if (dialect === 'ai-sdk')
      return rand() < 0.5
        ? { role: 'user', content: [{ type: 'image', image: data, mediaType: 'image/png' }] }
        : { role: 'user', content: [{ type: 'file', data: 'JVBERi0xLjQK', mediaType: 'application/pdf', filename: 'report.pdf' }] };
    if (dialect === 'openai-responses')
      return { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${data}`, detail: 'auto' }] };
    return { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }] };
  };
  if (dialect === 'openai-chat' || dialect === 'ai-sdk') out.push({ role: 'system', content: 'You are a careful coding agent.' });
  if (dialect === 'openai-responses') out.push({ type: 'message', role: 'developer', content: 'You are a careful coding agent.' });
  for (let t = 0; t < turns; t++) {
    // Turns alternate in Anthropic and Gemini (a call follows a user turn); chat-style dialects may run on.
    const alternates = dialect === 'anthropic' || dialect === 'gemini' || dialect === 'ai-sdk';
    if (t === 0 || alternates || rand() < 0.3) out.push(rand() < 0.1 && t > 0 ? imageOnly() : user(pick(TEXTS)));
    const parallel = rand() < 0.35 ? 2 + Math.floor(rand() * 2) : 1;
    const ids = Array.from({ length: parallel }, (_, k) => callId(k));
    if (new Set(ids).size !== ids.length) ids.forEach((_, k) => (ids[k] = `${ids[k]}_${k}`));
    const args = () => JSON.stringify({ path: `src/${pick(['parser', 'lexer', 'main'])}.ts`, note: rand() < 0.2 ? '🙂'.repeat(3) : '' });
    switch (dialect) {
      case 'openai-chat': {
        out.push({
          role: 'assistant',
          content: rand() < 0.5 ? null : 'Let me look.',
          refusal: null,
          annotations: [],
          tool_calls: ids.map((id, index) => ({ index, id, type: 'function', function: { name: 'read_file', arguments: args() } })),
        });
        ids.forEach((id, k) =>
          out.push({ role: 'tool', tool_call_id: id, name: 'read_file', content: k % 2 === 0 ? output() : [{ type: 'text', text: output() }] }),
        );
        out.push({ role: 'assistant', content: 'Done with that step.', refusal: null, annotations: [], audio: null, function_call: null });
        break;
      }
      case 'openai-responses': {
        const reasoning = rand() < 0.7;
        if (reasoning) out.push({ type: 'reasoning', summary: [], encrypted_content: `gAAAA${Math.floor(rand() * 1e9)}opaque`, content: null });
        ids.forEach((id) => out.push({ type: 'function_call', call_id: id, name: 'shell', arguments: args() }));
        ids.forEach((id) => out.push({ type: 'function_call_output', call_id: id, output: output() }));
        if (rand() < 0.1) out.push({ type: 'ghost_snapshot', ghost_commit: { id: 'a01966ef', parent: null } });
        if (reasoning && rand() < 0.5)
          out.push({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Wrapping up' }], encrypted_content: 'gAAAAfinal' });
        out.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done with that step.', annotations: [] }] });
        break;
      }
      case 'anthropic': {
        const thinking =
          rand() < 0.6 ? [{ type: 'thinking', thinking: 'I should read the file first.', signature: `EqQB${Math.floor(rand() * 1e9)}sig==` }] : [];
        out.push({
          role: 'assistant',
          content: [...thinking, ...ids.map((id) => ({ type: 'tool_use', id, name: 'Read', input: { file_path: `/repo/${id}.ts` } }))],
        });
        // Claude Code stores the results of parallel calls one per entry: consecutive user turns.
        if (rand() < 0.5) ids.forEach((id) => out.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: output() }] }));
        else
          out.push({
            role: 'user',
            content: ids.map((id, k) => ({
              type: 'tool_result',
              tool_use_id: id,
              content: k % 2 ? [{ type: 'text', text: output() }] : output(),
              is_error: rand() < 0.1,
            })),
          });
        out.push({ role: 'assistant', content: [{ type: 'text', text: 'Done with that step.' }] });
        break;
      }
      case 'gemini': {
        out.push({
          role: 'model',
          parts: ids.map((id, k) => ({
            functionCall: { name: 'read_file', args: { path: id } },
            ...(k === 0 ? { thoughtSignature: `CiQB${Math.floor(rand() * 1e9)}` } : {}),
          })),
        });
        out.push({ role: 'user', parts: ids.map((id) => ({ functionResponse: { name: 'read_file', response: { output: output(), id } } })) });
        out.push({ role: 'model', parts: [{ text: 'Done with that step.' }] });
        break;
      }
      case 'ai-sdk': {
        const thinking =
          rand() < 0.6
            ? [
                {
                  type: 'reasoning',
                  text: 'I should read the file first.',
                  providerOptions: { anthropic: { signature: `EqQB${Math.floor(rand() * 1e9)}sig==` } },
                },
              ]
            : [];
        out.push({
          role: 'assistant',
          content: [
            ...thinking,
            ...(rand() < 0.3 ? [{ type: 'text', text: 'Let me look.' }] : []),
            ...ids.map((id) => ({ type: 'tool-call', toolCallId: id, toolName: 'read_file', input: JSON.parse(args()) as JsonObject })),
          ],
        });
        // The AI SDK's own outputs: JSON values parsed, text as it came, errors, and content with an image.
        const outputOf = (): JsonObject => {
          const text = output();
          const r = rand();
          if (r < 0.1) return { type: 'error-text', value: text };
          if (r < 0.2)
            return {
              type: 'content',
              value: [
                { type: 'text', text },
                { type: 'file', data: { type: 'data', data }, mediaType: 'image/png' },
              ],
            };
          if (r < 0.6 && !text.startsWith('line') && !text.startsWith('Error')) return { type: 'json', value: JSON.parse(text) as JsonValue };
          return { type: 'text', value: text };
        };
        const results = ids.map((id) => ({ type: 'tool-result', toolCallId: id, toolName: 'read_file', output: outputOf() }));
        // Results of parallel calls one tool message each, or all in one.
        if (rand() < 0.5) results.forEach((r) => out.push({ role: 'tool', content: [r] }));
        else out.push({ role: 'tool', content: results });
        out.push({ role: 'assistant', content: [{ type: 'text', text: 'Done with that step.' }] });
        break;
      }
    }
  }
  out.push(user(`Last request ${seed}: ${pick(TEXTS)}`));
  return out;
}
