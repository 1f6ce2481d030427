-- A lineage's history, for operators (OperatorClient.history, the inspector, `sessions history`),
-- reached from any of its session ids: {lineage, sessions, compactions}. `lineage` is the lineage's row
-- and each of `compactions` (oldest first) a compaction's audit row, as stored (to_jsonb: column
-- names, every column, so a column a migration adds shows up without a change here); `sessions` is
-- the chain root to head: [{sessionId, parentSessionId, generation, startedAt, endedAt, endReason,
-- messageCount}] (messageCount: the session's live messages).
CREATE OR REPLACE FUNCTION session_history(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_lineage text;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  SELECT s.lineage_id INTO v_lineage FROM public.sessions s WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM public.sc_not_found(p_session_id);
  END IF;
  RETURN jsonb_build_object(
    'lineage', (SELECT to_jsonb(l) FROM public.lineages l WHERE l.id = v_lineage),
    'sessions', coalesce((
      SELECT jsonb_agg(jsonb_build_object(
               'sessionId', s.id, 'parentSessionId', s.parent_session_id, 'generation', s.generation,
               'startedAt', to_char(s.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'endedAt', to_char(s.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'endReason', s.end_reason,
               'messageCount', (SELECT count(*) FROM public.messages m WHERE m.session_id = s.id AND m.archived_at IS NULL))
             ORDER BY s.generation, s.started_at)
        FROM public.sessions s WHERE s.lineage_id = v_lineage), '[]'::jsonb),
    'compactions', coalesce((SELECT jsonb_agg(to_jsonb(c) ORDER BY c.started_at, c.id) FROM public.compactions c WHERE c.lineage_id = v_lineage), '[]'::jsonb));
END
$$;
