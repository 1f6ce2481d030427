/**
 * In-flight work in the ledger on the real stack (Temporal dev server, Postgres, the real
 * `openai` client against the local LLM), in every dialect (issue 39): with a summariser that
 * keeps nothing, every planted in-flight fact open at a compaction (the file edited last, an
 * open error's command and code, the plan's next step, a running subagent, a user turn not yet
 * answered, a standing instruction) is in the head after it, across four compactions; released
 * work (a lint run passed again, a subagent reported finished) leaves the stored ledger once the
 * message that released it is summarised; and from the second compaction on, the summariser's
 * request carries the stored ledger as fixed text. Facts are counted with the generator's own
 * list (test/support/planted.ts).
 */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DIALECT_NAMES, dialectOf, type Message } from '../../src/compaction/dialects';
import { isOpen, plantedSession } from '../support/planted';
import { uniqueId, useTestStack } from '../support/stack';
import { strictProviderCheck } from '../support/strict-check';

const LOSSY = 'The agent worked on some files.';

interface StoredLedger {
  errors: Array<{ source: string; lines?: string[]; resolved: boolean }>;
  inFlight: {
    plan?: { steps: Array<{ text: string }> };
    background: Array<{ id: string }>;
    queued: Array<{ text: string }>;
    instructions: Array<{ text: string }>;
  };
}

describe.each(DIALECT_NAMES)('in-flight work kept across real compactions (%s)', (name) => {
  const stack = useTestStack();
  const dialect = dialectOf(name);
  const haystack = (messages: readonly Message[]) => messages.map((m) => `${dialect.texts(m).join('\n')}\n${dialect.textOf(m)}`).join('\n');

  it('keeps every open in-flight fact while open and releases what is done, through four compactions with a summariser that keeps nothing', async () => {
    stack().llm.setDefault({ text: LOSSY });
    const id = uniqueId(`in-flight-${name}`);
    await stack().client.createSession({ sessionId: id, dialect: name });
    const { messages, facts } = plantedSession(name, 31, 16, { outputLines: 6, thinking: false, inFlight: true });
    const starts = messages.flatMap((m, i) => (dialect.isRealUserRequest(m) ? [i] : []));
    // Four chunks, each ending before a user request: the session compacts between the agent's turns.
    const cuts = [starts[4], starts[8], starts[12], messages.length];
    let head = id;
    let appended = 0;
    const kinds = new Set<string>();
    let released = 0;
    const requestsBefore = stack().llm.requests.length;
    for (const [k, cut] of cuts.entries()) {
      await stack().client.append(head, messages.slice(appended, cut));
      appended = cut;
      const result = await stack().client.compact(head, { timeoutMs: 60_000 });
      expect(result.outcome, result.reason).toBe('compacted');
      head = result.sessionId;
      const transcript = await stack().client.transcript(head);
      const text = haystack(transcript.messages);
      for (const f of facts.inFlight.filter((x) => isOpen(x, appended))) {
        expect(text, `compaction ${k + 1}: ${f.kind}: ${f.fact}`).toContain(f.fact);
        kinds.add(f.kind);
      }
      expect(await strictProviderCheck(name, dialect.forProvider(transcript.messages))).toBeUndefined();
      // The stored ledger: released work is no longer listed once the message that released it is summarised.
      const [row] = (
        await stack().db.db.execute(
          sql`select ledger, gate_results, summarised_to_seq from compactions where lineage_id = ${id} and outcome = 'compacted' order by generation desc limit 1`,
        )
      ).rows as Array<{ ledger: StoredLedger; gate_results: Record<string, string>; summarised_to_seq: number | null }>;
      expect(row.gate_results.facts).toBe('pass');
      const listed = [
        ...row.ledger.errors.filter((e) => !e.resolved).flatMap((e) => [e.source, ...(e.lines ?? [])]),
        ...row.ledger.inFlight.background.map((b) => b.id),
      ].join('\n');
      const summarisedTo = row.summarised_to_seq ?? 0;
      for (const f of facts.inFlight.filter(
        (x) => x.closeAt !== undefined && x.closeAt + 3 <= summarisedTo && (x.kind === 'open error' || x.kind === 'running subagent'),
      )) {
        expect(listed, `compaction ${k + 1}: released ${f.fact}`).not.toMatch(new RegExp(`${f.fact.replace(/[.*+?^$()|[\]\\]/g, '\\$&')}(?![\\w])`));
        released++;
      }
    }
    expect([...kinds].sort()).toEqual(['edited last', 'instruction', 'open error', 'plan next step', 'queued turn', 'running subagent']);
    expect(released).toBeGreaterThan(0);
    // No drift: from the second compaction on, the summariser read the stored ledger as fixed text beside the range.
    const prompts = stack()
      .llm.requests.slice(requestsBefore)
      .map((r) => JSON.stringify(r.body));
    expect(prompts.length).toBeGreaterThanOrEqual(4);
    expect(
      prompts.slice(1).some((p) => p.includes('Ledger so far (fixed text, kept by the service)') || p.includes('do not restate, reword or correct it')),
    ).toBe(true);
  });
});
