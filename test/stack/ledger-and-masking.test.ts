/**
 * The ledger and the masking rung on the real stack (Temporal dev server, Postgres, the real
 * `openai` client against the local LLM), in every dialect. The summariser here writes one
 * sentence that keeps nothing (the lossy stub), so whatever the head still knows it knows
 * through the ledger; the facts are counted with the generator's own list. The masking rung is
 * proven by the local LLM's own record of requests: none for a masked compaction.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';
import { jsonEqual } from '../../src/compaction/json';
import { MASK_PREFIX } from '../../src/compaction/masking';
import { estimateTranscriptTokens } from '../../src/compaction/tokens';
import { plantedSession } from '../support/planted';
import { uniqueId, useTestStack } from '../support/stack';
import { strictProviderCheck } from '../support/strict-check';

const LOSSY = 'The agent worked on some files.';

describe.each(DIALECT_NAMES)('ledger and masking on the real stack (%s)', (name) => {
  const stack = useTestStack();
  const dialect = dialectOf(name);
  const haystack = (messages: readonly Message[]) => messages.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');
  const turnsOf = (messages: Message[]) => {
    const starts = messages.flatMap((m, i) => (dialect.isRealUserRequest(m) ? [i] : []));
    return { opening: messages.slice(0, starts[0]), turns: starts.map((s, k) => messages.slice(s, starts[k + 1] ?? messages.length)) };
  };
  const auditRows = async (id: string) =>
    (
      await stack().db.db.execute(
        sql`select rung, ledger, gate_results from compactions where lineage_id = ${id} and outcome = 'compacted' order by generation`,
      )
    ).rows as Array<{ rung: string; ledger: { requests: unknown[] }; gate_results: Record<string, string> }>;

  it('a lossy summariser loses nothing the ledger keeps: every planted request, path and identifier after three compactions', async () => {
    stack().llm.setDefault({ text: LOSSY });
    const id = uniqueId(`ledger-${name}`);
    await stack().client.createSession({ sessionId: id, dialect: name });
    const { messages, facts } = plantedSession(name, 21, 12, { outputLines: 6, thinking: false });
    const { opening, turns } = turnsOf(messages);
    let head = id;
    const before = stack().llm.requests.length;
    for (const [k, chunk] of [turns.slice(0, 5), turns.slice(5, 9), turns.slice(9)].entries()) {
      await stack().client.append(head, [...(k === 0 ? opening : []), ...chunk.flat()]);
      const result = await stack().client.compact(head, { timeoutMs: 60_000 });
      expect(result.outcome, result.reason).toBe('compacted');
      head = result.sessionId;
    }
    expect(stack().llm.requests.length - before).toBeGreaterThanOrEqual(3); // the summaries were the lossy stub's
    const transcript = await stack().client.transcript(head);
    const text = haystack(transcript.messages);
    const missing = [...facts.requests, ...facts.paths, ...facts.identifiers].filter((f) => !text.includes(f));
    expect(missing).toEqual([]);
    expect(text).toContain('(superseded by R');
    expect(strictProviderCheck(name, dialect.forProvider(transcript.messages))).toBeUndefined();
    const rows = await auditRows(id);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.rung).toBe('summary');
      expect(row.gate_results.facts).toBe('pass');
      expect(row.ledger.requests.length).toBeGreaterThan(0);
    }
    // The caller reads the same ledger: from the lineage's history (the audit rows) and the head's.
    const history = await stack().client.history(head);
    expect(history.compactions.at(-1)?.ledger).toEqual(rows.at(-1)?.ledger);
    expect(history.lineage.ledger).toEqual(rows.at(-1)?.ledger);
  });

  it('the masking rung commits without a summariser call when masking old tool outputs is enough, and a later summary keeps their outcomes', async () => {
    const id = uniqueId(`mask-${name}`);
    const { messages } = plantedSession(name, 22, 8, { outputLines: 80, thinking: false });
    const tokens = estimateTranscriptTokens(messages, dialect);
    // The window: masking must bring the head to half of it, which only masking old outputs can.
    await stack().client.createSession({ sessionId: id, dialect: name, contextWindow: Math.ceil(tokens * 1.1) });
    await stack().client.append(id, messages);
    const before = stack().llm.requests.length;
    const masked = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(masked.outcome, masked.reason).toBe('compacted');
    expect(stack().llm.requests.length).toBe(before); // no summariser call
    expect(masked.reason).toMatch(/masking rung/);
    const head = masked.messages;
    expect(head).toHaveLength(messages.length);
    const replaced = head.filter((m, i) => !jsonEqual(m, messages[i]));
    expect(replaced.length).toBeGreaterThan(0);
    for (const m of replaced) expect(dialect.toolResults(m).every((r) => r.text.startsWith(MASK_PREFIX))).toBe(true);
    expect(strictProviderCheck(name, dialect.forProvider(head))).toBeUndefined();
    expect((await auditRows(id)).map((r) => r.rung)).toEqual(['masking']);
    // The operator's view (inspector, compactionDetail) says which rows were masked: the
    // placeholders and their originals, by the test's own count, none of them "kept" or "summarised".
    const [{ id: jobId }] = (await stack().db.db.execute(sql`select id from compactions where lineage_id = ${id} and rung = 'masking'`)).rows as Array<{
      id: string;
    }>;
    const detail = await stack().client.compaction(jobId);
    const kinds = detail.result.map((r) => r.kind);
    expect(kinds.filter((k) => k === 'masked')).toHaveLength(replaced.length);
    expect(detail.result.filter((r) => r.kind === 'masked').map((r) => r.message)).toEqual(replaced);
    expect(kinds.filter((k) => k !== 'masked').every((k) => k === 'kept')).toBe(true);
    const fates = detail.parent.map((r) => r.fate);
    expect(fates.filter((f) => f === 'masked')).toHaveLength(replaced.length);
    expect(fates.filter((f) => f !== 'masked').every((f) => f === 'kept')).toBe(true);
    // The originals are archived with the lineage: the audit finds nothing lost.
    const report = await stack().client.auditLineage(id);
    expect(report.lostMessages).toBe(0);
    // A forced compaction summarises (masking never answers a forced one); the ledger reads the outcomes the placeholders kept.
    stack().llm.setDefault({ text: LOSSY });
    const summarised = await stack().client.compact(masked.sessionId, { force: true, timeoutMs: 60_000 });
    expect(summarised.outcome, summarised.reason).toBe('compacted');
    const rows = await auditRows(id);
    expect(rows.map((r) => r.rung)).toEqual(['masking', 'summary']);
    const ledger = rows[1].ledger as unknown as { commands: Array<{ command: string; outcome: string }> };
    expect(ledger.commands.some((c) => c.command.startsWith('pytest') && /^exit [01]/.test(c.outcome))).toBe(true);
  });
});
