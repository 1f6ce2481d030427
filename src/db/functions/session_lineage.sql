-- The lineage of any session id: its state, and its sessions root first with live message counts.
-- `sessionId` is the stored name of the session asked about (with tenants `<tenant>:<id>`, see
-- session_lineage_state).
CREATE OR REPLACE FUNCTION session_lineage(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  SELECT l.* INTO g FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM public.sc_not_found(p_session_id);
  END IF;
  RETURN public.sc_lineage_json(g) || jsonb_build_object('sessionId', p_session_id, 'sessions', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
      'sessionId', s.id, 'parentSessionId', s.parent_session_id,
      'endedAt', to_char(s.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'endReason', s.end_reason,
      'messageCount', (SELECT count(*) FROM public.messages m WHERE m.session_id = s.id AND m.archived_at IS NULL)) ORDER BY s.generation, s.started_at)
    FROM public.sessions s WHERE s.lineage_id = g.id), '[]'::jsonb));
END
$$;
