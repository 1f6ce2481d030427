-- The ledger of a session's lineage head (what its latest compaction carries), or null before
-- the first compaction that wrote one. Any session id of the lineage (or the lineage id) will do.
CREATE OR REPLACE FUNCTION session_ledger(p_session_id text)
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
  RETURN g.ledger;
END
$$;
