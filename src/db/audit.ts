/**
 * The integrity audit, over the whole database or one lineage: forks, orphans, writes after
 * end, lost and duplicated messages, sequence gaps, keyed batches stored twice. Raw SQL of its
 * own, so it never trusts the code it checks.
 */
import { sql } from 'drizzle-orm';
import type { Database } from './database';

export interface AuditReport {
  sessions: number;
  lineages: number;
  compactions: number;
  /** Parents with more than one compaction child. */
  forks: number;
  /** Live sessions that are not their lineage's head. */
  orphans: number;
  /** Messages inserted into a session after it ended. */
  writesAfterEnd: number;
  /**
   * Appended messages that are neither live in their lineage's head nor inside the range a
   * committed compaction summarised (its summarised lineage sequence range; for compactions
   * recorded before ranges existed, at or below its watermark). A message a compaction kept
   * verbatim has its latest copy in the compaction's head, so losing that copy counts.
   */
  lostMessages: number;
  /** Appended messages present more than once among a session's live rows. */
  duplicatedMessages: number;
  /** Numbers missing from a lineage's append sequence (rows that vanished). */
  sequenceGaps: number;
  /** Rows beyond the batch an append key stored: a keyed batch stored more than once. */
  duplicatedByKey: number;
  details: { forkedParents: string[]; orphanSessions: string[]; lostMessageIds: number[] };
}

/**
 * Integrity over the whole database, or over one lineage. Every count but the totals must be 0.
 * Ranges a retention run pruned (pruned_messages) are pruned, not missing; an erased lineage
 * has no rows left to count.
 */
export async function audit(db: Database, lineageId?: string): Promise<AuditReport> {
  const count = async (query: ReturnType<typeof sql>) => Number(((await db.execute(query)).rows[0] as { n: string | number }).n);
  const ids = async (query: ReturnType<typeof sql>) => (await db.execute(query)).rows.map((r) => (r as { id: string | number }).id);
  const of = (column: string) => (lineageId === undefined ? sql`true` : sql`${sql.raw(column)} = ${lineageId}`);
  const forkedParents = (
    await ids(sql`select parent_session_id as id from sessions s where ${of('s.lineage_id')} and parent_session_id is not null group by 1 having count(*) > 1`)
  ).map(String);
  const orphanSessions = (
    await ids(sql`select s.id from sessions s join lineages l on l.id = s.lineage_id where ${of('l.id')} and s.ended_at is null and s.id <> l.head_session_id`)
  ).map(String);
  // The latest row of each appended message: live in the head, taken back by the caller, or
  // inside the range a committed compaction of its session summarised (a message a
  // compaction kept verbatim has its latest copy in that compaction's head, so losing that
  // copy counts). Compactions recorded before ranges existed cover up to their watermark.
  const lostMessageIds = (
    await ids(sql`
      with latest as (
        select distinct on (s.lineage_id, m.lineage_seq) m.id, m.session_id, m.seq, m.lineage_seq, m.archived_at, m.archived_by_compaction, m.retracted_by, s.lineage_id
        from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.lineage_seq is not null
        order by s.lineage_id, m.lineage_seq, m.id desc
      )
      select l.id from latest l join lineages g on g.id = l.lineage_id
      where not (l.session_id = g.head_session_id and l.archived_at is null)
        and l.retracted_by is null
        and not exists (
          select 1 from compactions c
          where c.outcome = 'compacted' and c.parent_session_id = l.session_id
            and case when c.summarised_from_seq is not null then l.lineage_seq between c.summarised_from_seq and c.summarised_to_seq
                     else l.seq <= c.watermark_seq end
            and (c.child_session_id <> c.parent_session_id or l.archived_by_compaction = c.id)
        )
      order by l.id`)
  ).map(Number);
  return {
    sessions: await count(sql`select count(*) as n from sessions s where ${of('s.lineage_id')}`),
    lineages: await count(sql`select count(*) as n from lineages g where ${of('g.id')}`),
    compactions: await count(sql`select count(*) as n from compactions c where ${of('c.lineage_id')} and outcome = 'compacted'`),
    forks: forkedParents.length,
    orphans: orphanSessions.length,
    writesAfterEnd: await count(
      sql`select count(*) as n from messages m join sessions s on s.id = m.session_id where ${of('s.lineage_id')} and s.ended_at is not null and m.created_at > s.ended_at`,
    ),
    lostMessages: lostMessageIds.length,
    duplicatedMessages: await count(sql`
      select coalesce(sum(n - 1), 0) as n from (
        select count(*) as n from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.lineage_seq is not null and m.archived_at is null group by m.session_id, m.lineage_seq having count(*) > 1
      ) d`),
    duplicatedByKey: await count(sql`
      select coalesce(sum(greatest(0, stored.n - (k.result->>'count')::int)), 0) as n from append_keys k
      join (
        select s.lineage_id, m.append_key, count(*) as n from messages m join sessions s on s.id = m.session_id
        where ${of('s.lineage_id')} and m.append_key is not null and m.written_by_compaction is null group by 1, 2
      ) stored on stored.lineage_id = k.lineage_id and stored.append_key = k.append_key`),
    sequenceGaps: await count(sql`
      select coalesce(sum(g.appended_count - coalesce(present.n, 0)), 0) as n from lineages g
      left join (
        select lineage_id, count(distinct seq) as n from (
          select s.lineage_id, m.lineage_seq as seq from messages m join sessions s on s.id = m.session_id where m.lineage_seq is not null
          union all
          select p.lineage_id, generate_series(p.from_seq, p.to_seq) from pruned_messages p
        ) known group by lineage_id
      ) present on present.lineage_id = g.id
      where ${of('g.id')}`),
    details: { forkedParents, orphanSessions, lostMessageIds },
  };
}
