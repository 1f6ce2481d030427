-- Forgets an automatic compaction request whose signal could not be sent, so that the next
-- append requests it again. Answers {"released": true} when it was still pending.
CREATE OR REPLACE FUNCTION session_release_auto_compaction(p_lineage_id text, p_request_id text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_lineage_id := public.sc_tenant_id(p_lineage_id);
  UPDATE public.lineages SET auto_request_id = NULL WHERE id = p_lineage_id AND auto_request_id = p_request_id;
  RETURN jsonb_build_object('released', FOUND);
END
$$;
