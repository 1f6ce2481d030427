-- The integrity audit (OperatorClient.audit and auditLineage, `sessions audit`): over the whole
-- database when p_session_id is NULL, else over the lineage of that session id (its root id is the
-- lineage id; SessionNotFoundError when no session has it). Every count but the totals (sessions,
-- lineages, compactions: the committed ones) must be 0:
-- - forks: parents with more than one compaction child; orphans: live sessions that are not their
--   lineage's head; writesAfterEnd: messages inserted into a session after it ended;
-- - lostMessages: appended messages whose latest row is neither live in the head, nor taken back,
--   nor inside the range a committed compaction of its session summarised (compactions recorded
--   before ranges existed: up to their watermark); a message a compaction kept verbatim has its
--   latest copy in that compaction's head, so losing that copy counts;
-- - duplicatedMessages: appended messages live more than once in a session; sequenceGaps: numbers
--   missing from a lineage's append sequence (ranges retention pruned, pruned_messages, are not
--   missing); duplicatedByKey: rows beyond the batch an append key stored.
-- Answers {lineageId (null for the whole database), sessions, lineages, compactions, forks, orphans,
-- writesAfterEnd, lostMessages, duplicatedMessages, sequenceGaps, duplicatedByKey,
-- details: {forkedParents, orphanSessions, lostMessageIds}}. Plain SQL over the tables, so it never
-- trusts the code it checks.
CREATE OR REPLACE FUNCTION session_audit(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_lineage text;
  v_forked jsonb;
  v_orphans jsonb;
  v_lost jsonb;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  IF p_session_id IS NOT NULL THEN
    SELECT s.lineage_id INTO v_lineage FROM public.sessions s WHERE s.id = p_session_id;
    IF NOT FOUND THEN
      PERFORM public.sc_not_found(p_session_id);
    END IF;
  END IF;

  SELECT coalesce(jsonb_agg(f.id ORDER BY f.id), '[]'::jsonb) INTO v_forked FROM (
    SELECT s.parent_session_id AS id FROM public.sessions s
     WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND s.parent_session_id IS NOT NULL
     GROUP BY 1 HAVING count(*) > 1) f;
  SELECT coalesce(jsonb_agg(s.id ORDER BY s.id), '[]'::jsonb) INTO v_orphans
    FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id
   WHERE (v_lineage IS NULL OR l.id = v_lineage) AND s.ended_at IS NULL AND s.id <> l.head_session_id;
  WITH latest AS (
    SELECT DISTINCT ON (s.lineage_id, m.lineage_seq) m.id, m.session_id, m.seq, m.lineage_seq, m.archived_at, m.archived_by_compaction,
           m.retracted_by, s.lineage_id
      FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
     WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND m.lineage_seq IS NOT NULL
     ORDER BY s.lineage_id, m.lineage_seq, m.id DESC
  )
  SELECT coalesce(jsonb_agg(l.id ORDER BY l.id), '[]'::jsonb) INTO v_lost
    FROM latest l JOIN public.lineages g ON g.id = l.lineage_id
   WHERE NOT (l.session_id = g.head_session_id AND l.archived_at IS NULL)
     AND l.retracted_by IS NULL
     AND NOT EXISTS (
       SELECT 1 FROM public.compactions c
        WHERE c.outcome = 'compacted' AND c.parent_session_id = l.session_id
          AND CASE WHEN c.summarised_from_seq IS NOT NULL THEN l.lineage_seq BETWEEN c.summarised_from_seq AND c.summarised_to_seq
                   ELSE l.seq <= c.watermark_seq END
          AND (c.child_session_id <> c.parent_session_id OR l.archived_by_compaction = c.id));

  RETURN jsonb_build_object(
    'lineageId', v_lineage,
    'sessions', (SELECT count(*) FROM public.sessions s WHERE v_lineage IS NULL OR s.lineage_id = v_lineage),
    'lineages', (SELECT count(*) FROM public.lineages g WHERE v_lineage IS NULL OR g.id = v_lineage),
    'compactions', (SELECT count(*) FROM public.compactions c WHERE (v_lineage IS NULL OR c.lineage_id = v_lineage) AND c.outcome = 'compacted'),
    'forks', jsonb_array_length(v_forked),
    'orphans', jsonb_array_length(v_orphans),
    'writesAfterEnd', (SELECT count(*) FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
                        WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND s.ended_at IS NOT NULL AND m.created_at > s.ended_at),
    'lostMessages', jsonb_array_length(v_lost),
    'duplicatedMessages', (SELECT coalesce(sum(d.n - 1), 0) FROM (
        SELECT count(*) AS n FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
         WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND m.lineage_seq IS NOT NULL AND m.archived_at IS NULL
         GROUP BY m.session_id, m.lineage_seq HAVING count(*) > 1) d),
    'sequenceGaps', (SELECT coalesce(sum(g.appended_count - coalesce(present.n, 0)), 0) FROM public.lineages g
        LEFT JOIN (
          SELECT known.lineage_id, count(DISTINCT known.seq) AS n FROM (
            SELECT s.lineage_id, m.lineage_seq AS seq FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
             WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND m.lineage_seq IS NOT NULL
            UNION ALL
            SELECT p.lineage_id, generate_series(p.from_seq, p.to_seq) FROM public.pruned_messages p WHERE v_lineage IS NULL OR p.lineage_id = v_lineage
          ) known GROUP BY known.lineage_id
        ) present ON present.lineage_id = g.id
        WHERE v_lineage IS NULL OR g.id = v_lineage),
    'duplicatedByKey', (SELECT coalesce(sum(greatest(0, stored.n - (k.result->>'count')::int)), 0) FROM public.append_keys k
        JOIN (
          SELECT s.lineage_id, m.append_key, count(*) AS n FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
           WHERE (v_lineage IS NULL OR s.lineage_id = v_lineage) AND m.append_key IS NOT NULL AND m.written_by_compaction IS NULL
           GROUP BY 1, 2
        ) stored ON stored.lineage_id = k.lineage_id AND stored.append_key = k.append_key),
    'details', jsonb_build_object('forkedParents', v_forked, 'orphanSessions', v_orphans, 'lostMessageIds', v_lost));
END
$$;
