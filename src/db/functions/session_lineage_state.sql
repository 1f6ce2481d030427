-- The lineage of any session id as the data plane answers it (sc_lineage_json: its head,
-- generation, settings, closed, incarnation), without its sessions: what a client reads before
-- it compacts, waits or erases (session_lineage adds the sessions, root first). `sessionId` is
-- the stored name of the session asked about: with tenants, `<tenant>:<id>` (sc_tenant_id),
-- the name a compaction request to the lineage's workflow must carry.
CREATE OR REPLACE FUNCTION session_lineage_state(p_session_id text)
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
  RETURN public.sc_lineage_json(g) || jsonb_build_object('sessionId', p_session_id);
END
$$;
