/**
 * An independent ledger of appended messages, for loss accounting that does not trust the
 * code under test. The test records every message it appended with the lineage sequence
 * numbers the append acknowledged (`lastLineageSeq`, `count`); `check` then reads Postgres
 * with queries of its own and finds each message either
 *  - live in its lineage's head, exactly once and unchanged (the whole stored body JSON-equal
 *    to the message appended: every field, known or not), or
 *  - inside the lineage-sequence range (`summarised_from_seq`..`summarised_to_seq`) of a
 *    committed compaction whose parent session held it, unchanged, and (when the test hands
 *    over the prompts the local LLM received) whose text the summariser was really sent.
 * It never reads the watermark or the project's audit (tests keep those assertions as a
 * second check). Only `legacyWatermark`, for compactions stored without a range (as a database
 * at an older migration holds them: test/stack/upgrade.test.ts), accepts one by its watermark.
 *
 * Every dialect: the ledger reads each lineage's dialect with a query of its own, expects the
 * role column its dialect files the message under (the TypeScript `roleOf`, checked against
 * what the SQL data plane stored), and reads the probe from where that dialect's text lives
 * (`content` strings and text parts, Anthropic text blocks and string tool results, Gemini
 * `parts[].text`, Responses `message` items and string tool outputs).
 */
import type { Pool } from 'pg';
import { dialectOf } from '../../src/compaction/dialects';

export interface LedgerEntry {
  lineageId: string;
  lineageSeq: number;
  /** The whole message as appended, canonical JSON. */
  body: string;
}

export interface LedgerReport {
  checked: number;
  live: number;
  summarised: number;
  /** Summarised messages with text the summariser's prompts were searched for (when prompts were handed over). */
  probed: number;
  /** Neither live in the head nor in a committed summarised range. */
  lost: LedgerEntry[];
  /** Live in the head more than once. */
  duplicated: LedgerEntry[];
  /** Found, but with another body or role than was appended. */
  altered: LedgerEntry[];
  /** Counted as summarised, but no prompt the summariser received contains it. */
  unseenBySummariser: LedgerEntry[];
  /** Parents with more than one child, and live sessions that are not the head, per our own queries. */
  forks: string[];
  orphans: string[];
}

/** JSON with object keys sorted, so jsonb's key order does not matter. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const firstText = (texts: unknown[]): string | undefined => texts.find((t): t is string => typeof t === 'string' && t.trim() !== '');
/** The `text` of each part whose type is one of `types` (any type when omitted). */
const partTexts = (parts: unknown, types?: readonly string[]): unknown[] =>
  Array.isArray(parts) ? parts.filter(isObject).flatMap((p) => (types === undefined || types.includes(String(p.type)) ? [p.text] : [])) : [];

/**
 * Text the summariser's prompt must contain when the message was summarised: the start of the
 * first text where the message's dialect keeps its text (never thinking, reasoning or media).
 */
function probeOf(dialect: string, m: Json): string | undefined {
  let text: string | undefined;
  switch (dialect) {
    case 'gemini':
      text = firstText(Array.isArray(m.parts) ? m.parts.filter((p) => isObject(p) && p.thought !== true).map((p) => (p as Json).text) : []);
      break;
    case 'anthropic':
      text =
        typeof m.content === 'string'
          ? firstText([m.content])
          : firstText([
              ...partTexts(m.content, ['text']),
              ...(Array.isArray(m.content)
                ? m.content
                    .filter((b) => isObject(b) && b.type === 'tool_result')
                    .flatMap((b) => {
                      const inner = (b as Json).content;
                      return typeof inner === 'string' ? [inner] : partTexts(inner, ['text']);
                    })
                : []),
            ]);
      break;
    case 'openai-responses':
    case 'openai-agents': {
      const isMessage = m.type === 'message' || (m.type === undefined && typeof m.role === 'string');
      if (isMessage) text = typeof m.content === 'string' ? firstText([m.content]) : firstText(partTexts(m.content, ['input_text', 'output_text', 'text']));
      else if (typeof m.type === 'string' && m.type.endsWith('_output') && typeof m.output === 'string') text = firstText([m.output]);
      // The TypeScript SDK's function result: `function_call_result` with a text part.
      else if (m.type === 'function_call_result' && isObject(m.output)) text = firstText([(m.output as Json).text]);
      break;
    }
    default:
      text = typeof m.content === 'string' ? firstText([m.content]) : firstText(partTexts(m.content, ['text']));
  }
  return text?.slice(0, 60);
}

export class AppendLedger {
  readonly entries: LedgerEntry[] = [];

  /** Records a batch the service acknowledged, with the lineage sequence numbers it was given. */
  record(lineageId: string, batch: ReadonlyArray<Record<string, unknown>>, ack: { lastLineageSeq: number; count: number }): void {
    if (ack.count !== batch.length) throw new Error(`append of ${batch.length} message(s) acknowledged ${ack.count}`);
    const first = ack.lastLineageSeq - ack.count + 1;
    batch.forEach((m, i) => this.entries.push({ lineageId, lineageSeq: first + i, body: canonical(m) }));
  }

  /** Every prompt text the local LLM received, for `check({ prompts })`. */
  static prompts(requests: ReadonlyArray<{ body: { messages: Array<{ content: unknown }> } }>): string[] {
    return requests.map((r) => r.body.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n'));
  }

  /**
   * Checks every recorded message (or only those of `lineages`) against Postgres. `prompts`:
   * every prompt the summariser received (see `prompts`), to check that summarised text was sent.
   */
  async check(pool: Pool, options: { prompts?: string[]; legacyWatermark?: boolean; lineages?: Iterable<string> } = {}): Promise<LedgerReport> {
    const report: LedgerReport = {
      checked: 0,
      live: 0,
      summarised: 0,
      probed: 0,
      lost: [],
      duplicated: [],
      altered: [],
      unseenBySummariser: [],
      forks: [],
      orphans: [],
    };
    const only = options.lineages ? new Set(options.lineages) : undefined;
    const byLineage = new Map<string, LedgerEntry[]>();
    for (const e of this.entries) if (!only || only.has(e.lineageId)) byLineage.set(e.lineageId, [...(byLineage.get(e.lineageId) ?? []), e]);
    const prompts = options.prompts?.join('\n\u0000\n');

    for (const [lineageId, entries] of byLineage) {
      // The dialect by a query of its own (to_jsonb: also on a schema from before dialects, where every lineage is openai-chat).
      const [lineage] = (
        await pool.query<{ head: string; dialect: string | null }>(
          `select head_session_id as head, to_jsonb(l) ->> 'dialect' as dialect from lineages l where id = $1`,
          [lineageId],
        )
      ).rows;
      if (!lineage) throw new Error(`lineage ${lineageId} not found`);
      const dialect = dialectOf(lineage.dialect ?? 'openai-chat');
      const forks = await pool.query<{ parent: string }>(
        'select parent_session_id as parent from sessions where lineage_id = $1 and parent_session_id is not null group by 1 having count(*) > 1',
        [lineageId],
      );
      report.forks.push(...forks.rows.map((r) => r.parent));
      const live = await pool.query<{ id: string }>('select id from sessions where lineage_id = $1 and ended_at is null and id <> $2', [
        lineageId,
        lineage.head,
      ]);
      report.orphans.push(...live.rows.map((r) => r.id));

      const headRows = (
        await pool.query<{ lineage_seq: number; role: string; body: unknown }>(
          'select lineage_seq, role, body from messages where session_id = $1 and archived_at is null and lineage_seq is not null',
          [lineage.head],
        )
      ).rows;
      const inHead = new Map<number, Array<{ role: string; body: string }>>();
      for (const r of headRows) inHead.set(r.lineage_seq, [...(inHead.get(r.lineage_seq) ?? []), { role: r.role, body: canonical(r.body) }]);

      const commits = (
        await pool.query<{ parent: string; from_seq: number | null; to_seq: number | null; watermark: number | null }>(
          `select parent_session_id as parent, summarised_from_seq as from_seq, summarised_to_seq as to_seq, watermark_seq as watermark
           from compactions where lineage_id = $1 and outcome = 'compacted'`,
          [lineageId],
        )
      ).rows;
      const parents = [...new Set(commits.map((c) => c.parent))];
      const parentRows = (
        await pool.query<{ session_id: string; seq: number; lineage_seq: number; role: string; body: unknown }>(
          'select session_id, seq, lineage_seq, role, body from messages where session_id = any($1::text[]) and lineage_seq is not null',
          [parents],
        )
      ).rows;

      for (const entry of entries) {
        report.checked++;
        const message = JSON.parse(entry.body) as Json;
        const role = dialect.roleOf(message as never);
        const probe = probeOf(dialect.name, message);
        const copies = inHead.get(entry.lineageSeq) ?? [];
        if (copies.length > 0) {
          report.live++;
          if (copies.length > 1) report.duplicated.push(entry);
          if (copies.some((c) => c.body !== entry.body || c.role !== role)) report.altered.push(entry);
          continue;
        }
        const heldBy = (parent: string, accept: (row: { seq: number }) => boolean) =>
          parentRows.find((r) => r.session_id === parent && r.lineage_seq === entry.lineageSeq && accept(r));
        const covering = commits
          .map((c) => {
            if (c.from_seq !== null && c.to_seq !== null) {
              return entry.lineageSeq >= c.from_seq && entry.lineageSeq <= c.to_seq ? heldBy(c.parent, () => true) : undefined;
            }
            return options.legacyWatermark && c.watermark !== null ? heldBy(c.parent, (r) => r.seq <= c.watermark!) : undefined;
          })
          .find((row) => row !== undefined);
        if (!covering) {
          report.lost.push(entry);
          continue;
        }
        report.summarised++;
        if (canonical(covering.body) !== entry.body || covering.role !== role) report.altered.push(entry);
        if (prompts !== undefined && probe) {
          report.probed++;
          if (!prompts.includes(probe)) report.unseenBySummariser.push(entry);
        }
      }
    }
    return report;
  }
}

/** The problems of a report, for `expect(problems(report)).toEqual([])`. */
export function ledgerProblems(report: LedgerReport): string[] {
  const list = (what: string, entries: LedgerEntry[]) =>
    entries.length
      ? [
          `${entries.length} ${what}: ${entries
            .slice(0, 5)
            .map((e) => `${e.lineageId}#${e.lineageSeq}`)
            .join(', ')}`,
        ]
      : [];
  return [
    ...list('lost', report.lost),
    ...list('duplicated', report.duplicated),
    ...list('altered', report.altered),
    ...list('summarised but never sent to the summariser', report.unseenBySummariser),
    ...(report.forks.length ? [`forked parents: ${report.forks.join(', ')}`] : []),
    ...(report.orphans.length ? [`orphan live sessions: ${report.orphans.join(', ')}`] : []),
  ];
}
