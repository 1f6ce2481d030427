/**
 * The ledger and the masking rung on the real stack (Temporal dev server, Postgres, the real
 * `openai` client against the local LLM), in every dialect. The summariser here writes one
 * sentence that keeps nothing (the lossy stub), so whatever the head still knows it knows
 * through the ledger; the facts are counted with the generator's own list. The masking rung is
 * proven by the local LLM's own record of requests: none for a masked compaction. Tool outputs
 * that forge the ledger (a mask placeholder across lines, a placeholder prefix, breaks behind
 * `\r` and U+2028) forge nothing in it, through a masking and three summaries.
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';
import { jsonEqual } from '../../src/compaction/json';
import { MASK_PREFIX } from '../../src/compaction/facts';
import { estimateTranscriptTokens } from '../../src/compaction/tokens';
import { FORGED_OUTPUTS, forgedPrefixOutput, ledgerForgeries } from '../support/forged';
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
    expect(await strictProviderCheck(name, dialect.forProvider(transcript.messages))).toBeUndefined();
    const rows = await auditRows(id);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.rung).toBe('summary');
      expect(row.gate_results.facts).toBe('pass');
      expect(row.ledger.requests.length).toBeGreaterThan(0);
    }
    // The caller reads the same ledger: from the lineage's history (the audit rows) and the head's.
    const history = await stack().client.operator.history(head);
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
    expect(await strictProviderCheck(name, dialect.forProvider(head))).toBeUndefined();
    expect((await auditRows(id)).map((r) => r.rung)).toEqual(['masking']);
    // The operator's view (inspector, compactionDetail) says which rows were masked: the
    // placeholders and their originals, by the test's own count, none of them "kept" or "summarised".
    const [{ id: jobId }] = (await stack().db.db.execute(sql`select id from compactions where lineage_id = ${id} and rung = 'masking'`)).rows as Array<{
      id: string;
    }>;
    const detail = await stack().client.operator.compaction(jobId);
    const kinds = detail.result.map((r) => r.kind);
    expect(kinds.filter((k) => k === 'masked')).toHaveLength(replaced.length);
    expect(detail.result.filter((r) => r.kind === 'masked').map((r) => r.message)).toEqual(replaced);
    expect(kinds.filter((k) => k !== 'masked').every((k) => k === 'kept')).toBe(true);
    const fates = detail.parent.map((r) => r.fate);
    expect(fates.filter((f) => f === 'masked')).toHaveLength(replaced.length);
    expect(fates.filter((f) => f !== 'masked').every((f) => f === 'kept')).toBe(true);
    // The originals are archived with the lineage: the audit finds nothing lost.
    const report = await stack().client.operator.auditLineage(id);
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

  it('no tool output forges the ledger: forged placeholders, a placeholder prefix, \\r and U+2028 error lines, through a masking and three summaries', async () => {
    const id = uniqueId(`forged-${name}`);
    const LINES = 80;
    // Every turn's tool turn holds one hostile shell output as well, in turn: the forged placeholder, the prefix, \r, U+2028.
    const { messages, facts } = plantedSession(name, 24, 12, {
      outputLines: LINES,
      thinking: false,
      extraShell: (t) => {
        const f = FORGED_OUTPUTS[t % FORGED_OUTPUTS.length];
        return { command: f.command, output: f.output(LINES), isError: f.isError };
      },
    });
    const { opening, turns } = turnsOf(messages);
    const chunks = [[...opening, ...turns.slice(0, 6).flat()], turns.slice(6, 9).flat(), turns.slice(9).flat()];
    // Turn 1's hostile output opens with a placeholder and is long (turn 5's follows the latest request, which masking never touches).
    const prefixOutput = (ms: readonly Message[]) => ms.flatMap((m) => dialect.toolResults(m)).find((r) => r.id === 'call_x24_1')?.text;
    expect(prefixOutput(chunks[0])).toBe(forgedPrefixOutput(LINES));
    const findings: Record<string, string[]> = {};
    const checkHead = async (label: string, sessionId: string) => {
      const head = (await stack().client.transcript(sessionId)).messages;
      const summaries = head.filter((m) => dialect.isSummary(m) && dialect.textOf(m).includes('## Ledger'));
      expect(summaries, label).toHaveLength(1);
      findings[label] = ledgerForgeries(dialect.textOf(summaries[0]), facts.requests);
      expect(await strictProviderCheck(name, dialect.forProvider(head)), label).toBeUndefined();
    };
    await stack().client.createSession({
      sessionId: id,
      dialect: name,
      contextWindow: Math.ceil(estimateTranscriptTokens(chunks[0], dialect) * 1.1),
    });
    await stack().client.append(id, chunks[0]);
    // 1. The masking rung: an output that merely opens with a placeholder is a caller's output like any other, and is masked.
    const masked = await stack().client.compact(id, { timeoutMs: 60_000 });
    expect(masked.outcome, masked.reason).toBe('compacted');
    expect.soft(masked.reason, 'the masking rung answered').toMatch(/masking rung/);
    expect
      .soft(prefixOutput(masked.messages), 'a long output opening with a placeholder left unmasked')
      .toMatch(/^\[tool output masked by session-compaction: \d+ characters of output from /);
    let head = masked.sessionId;
    // 2.-4. Summaries (forced), each adding the next chunk first: the ledger reads the placeholders and the hostile outputs.
    stack().llm.setDefault({ text: LOSSY });
    for (const [k, chunk] of [[], chunks[1], chunks[2]].entries()) {
      if (chunk.length > 0) await stack().client.append(head, chunk);
      const result = await stack().client.compact(head, { force: true, timeoutMs: 60_000 });
      expect(result.outcome, result.reason).toBe('compacted');
      head = result.sessionId;
      await checkHead(`summary ${k + 1}`, head);
    }
    expect(findings).toEqual({ 'summary 1': [], 'summary 2': [], 'summary 3': [] });
    // The audit rows hold the same ledger: no request but the ones appended, every field from a tool on one line.
    const rows = (await auditRows(id)) as unknown as Array<{
      rung: string;
      ledger: { requests: Array<{ text: string }>; commands: Array<{ command: string; outcome: string }>; errors: Array<{ source: string; line: string }> };
    }>;
    expect(rows.map((r) => r.rung)).toEqual(['masking', 'summary', 'summary', 'summary']);
    for (const { ledger } of rows.slice(1)) {
      expect(ledger.requests.filter((r) => !facts.requests.includes(r.text))).toEqual([]);
      const fields = [...ledger.commands.flatMap((c) => [c.command, c.outcome]), ...ledger.errors.flatMap((e) => [e.source, e.line])];
      expect(fields.filter((f) => /[\n\r\v\f\u0085\u2028\u2029]/u.test(f))).toEqual([]);
    }
  });
});
