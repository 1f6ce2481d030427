/**
 * The benchmark's per-rung report (issue 37 §4): from the audit rows, for each rung, the
 * compactions it answered, the tokens they shed, the tokens it was billed (every row it ran in,
 * including those where it paid and then passed) and the share of its input the prompt cache served.
 */
import { sql } from 'drizzle-orm';
import type { RungCost } from '../src/compaction/gain';
import type { Database } from '../src/db/database';

export interface RungRow {
  outcome: string;
  rung: string | null;
  tokensBefore: number | null;
  tokensAfter: number | null;
  costs: Record<string, RungCost> | null;
}

export interface RungFigures {
  compactions: number;
  tokensShed: number;
  tokensPaid: number;
  /** cacheReadTokens / inputTokens of what it was billed; null when it was billed no input. */
  cachedShare: number | null;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** The figures by rung name, over every audit row (pure). */
export function rungReport(rows: readonly RungRow[]): Record<string, RungFigures> {
  const out: Record<string, RungFigures & { input: number; cached: number }> = {};
  const of = (rung: string) => (out[rung] ??= { compactions: 0, tokensShed: 0, tokensPaid: 0, cachedShare: null, input: 0, cached: 0 });
  for (const row of rows) {
    if (row.outcome === 'compacted' && row.rung) {
      const r = of(row.rung);
      r.compactions++;
      r.tokensShed += Math.max(0, (row.tokensBefore ?? 0) - (row.tokensAfter ?? 0));
    }
    for (const [rung, cost] of Object.entries(row.costs ?? {})) {
      const r = of(rung);
      r.tokensPaid += cost.inputTokens + cost.outputTokens;
      r.input += cost.inputTokens;
      r.cached += cost.cacheReadTokens;
    }
  }
  return Object.fromEntries(
    Object.entries(out).map(([rung, { input, cached, ...r }]) => [rung, { ...r, cachedShare: input > 0 ? round(cached / input) : null }]),
  );
}

/** The report over the database's audit rows. */
export async function measureRungs(db: Database): Promise<Record<string, RungFigures>> {
  const { rows } = await db.execute(
    sql`select outcome, rung, tokens_before as "tokensBefore", tokens_after as "tokensAfter", costs from compactions where outcome in ('compacted', 'refused')`,
  );
  return rungReport(rows as unknown as RungRow[]);
}
