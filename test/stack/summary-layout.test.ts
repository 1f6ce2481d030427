/**
 * What a compaction costs at the provider's prompt cache, on the real stack with the real
 * `openai` client: when the summariser is the session's own model, the summary request is the
 * head as the agent sent it followed by the instruction, so a provider that caches by prefix
 * (the local LLM reports `cached_tokens` as one does) serves the head from its cache; the audit
 * row records what it served; and the head after the compaction begins with the same
 * instructions, byte for byte, so the agent's next call is served up to the summary.
 */
import { sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { dialectOf } from '../../src/compaction/dialects';
import type { JsonObject } from '../../src/compaction/json';
import { conversation } from '../support/conversation';
import { uniqueId, useTestStack } from '../support/stack';

const stack = useTestStack();
const chat = dialectOf('openai-chat');

/** The agent's own call: its head, as it sends it, to the local LLM. */
async function agentCall(messages: JsonObject[]) {
  const openai = new OpenAI({ apiKey: 'test', baseURL: stack().llm.baseURL, maxRetries: 0 });
  await openai.chat.completions.create({ model: 'fake-model', messages: messages as unknown as OpenAI.ChatCompletionMessageParam[] });
  return stack().llm.requests.at(-1)!;
}

async function auditOf(lineageId: string) {
  const { rows } = await stack().db.db.execute(
    sql`select summariser_prompt_tokens as prompt, summariser_cached_prompt_tokens as cached from compactions where lineage_id = ${lineageId} and outcome = 'compacted' order by started_at`,
  );
  return rows as Array<{ prompt: number; cached: number | null }>;
}

describe('the summary request and the prompt cache', () => {
  it("the session's own model gets the head as the agent sent it, then the instruction; the cache serves the head", async () => {
    const id = uniqueId('cache');
    await stack().client.createSession({ sessionId: id, model: 'fake-model' });
    await stack().client.append(id, conversation(10));
    const head = (await stack().client.transcript(id)).messages;
    await agentCall(head);

    const result = await stack().client.compact(id, { force: true });
    expect(result.outcome).toBe('compacted');
    const summary = stack().llm.requests.at(-1)!;
    expect(summary.body.messages.slice(0, head.length)).toEqual(chat.forProvider(head));
    expect(summary.body.messages).toHaveLength(head.length + 1);
    expect(summary.body.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(summary.body.messages.at(-1)!.content).toMatch(/^You compact the transcript[^]*Summarise messages \d+ to \d+ of the \d+ above/);
    // The local LLM served every message the agent had sent, and only those.
    const headTokens = summary.usage.prompt_tokens - (await agentCall([summary.body.messages.at(-1)!])).usage.prompt_tokens;
    expect(summary.usage.prompt_tokens_details!.cached_tokens).toBe(headTokens);
    const [audit] = await auditOf(id);
    expect(audit).toEqual({ prompt: summary.usage.prompt_tokens, cached: headTokens });

    // The agent's next call: the compacted head begins with the messages it kept verbatim (the
    // system prompt first), so the cache serves it up to the summary, and no further.
    const next = (await stack().client.transcript(result.sessionId)).messages;
    const summaryAt = next.findIndex((m) => chat.isSummary(m));
    expect(summaryAt).toBeGreaterThan(0);
    expect(next.slice(0, summaryAt)).toEqual(head.slice(0, summaryAt));
    const nextCall = await agentCall(next);
    expect(nextCall.usage.prompt_tokens_details!.cached_tokens).toBe((await agentCall(next.slice(0, summaryAt))).usage.prompt_tokens);
  });

  it('another model, or a head waiting for a tool result, gets the rendered request, which no agent prefix serves', async () => {
    const other = uniqueId('cache');
    await stack().client.createSession({ sessionId: other, model: 'another-model' });
    await stack().client.append(other, conversation(10));
    await agentCall((await stack().client.transcript(other)).messages);
    expect((await stack().client.compact(other, { force: true })).outcome).toBe('compacted');
    const rendered = stack().llm.requests.at(-1)!;
    expect(rendered.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(rendered.body.messages[1].content).toContain('Messages to summarise:');

    const open = uniqueId('cache');
    await stack().client.createSession({ sessionId: open, model: 'fake-model' });
    const waiting = conversation(10);
    waiting.push({ role: 'user', content: 'Now read src/last.ts' });
    waiting.push({ role: 'assistant', content: null, tool_calls: [{ id: 'call_last', type: 'function', function: { name: 'read', arguments: '{}' } }] });
    await stack().client.append(open, waiting);
    expect((await stack().client.compact(open, { force: true })).outcome).toBe('compacted');
    expect(
      stack()
        .llm.requests.at(-1)!
        .body.messages.map((m) => m.role),
    ).toEqual(['system', 'user']);
    const [audit] = await auditOf(open);
    // Only the summariser's own instructions, sent before, could be served: not the agent's head.
    expect(audit.cached ?? 0).toBeLessThan(audit.prompt / 2);
  });

  it('prompt tokens do not grow with the lineage: each compaction sends its head, bounded by the threshold', async () => {
    const id = uniqueId('cache');
    await stack().client.createSession({ sessionId: id, model: 'fake-model' });
    let head = id;
    for (let generation = 0; generation < 6; generation++) {
      await stack().client.append(head, conversation(6));
      head = (await stack().client.compact(head, { force: true })).sessionId;
    }
    const prompts = (await auditOf(id)).map((a) => a.prompt);
    expect(prompts).toHaveLength(6);
    // Each compaction adds the same six turns: later generations cost what the second did, give or take the summary.
    expect(Math.max(...prompts.slice(1))).toBeLessThan(prompts[1] * 1.5);
  });
});
