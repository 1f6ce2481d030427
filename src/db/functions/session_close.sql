-- Marks the lineage of p_session_id (any of its session ids) closed: it takes no more appends,
-- creates or compactions. Idempotent. The lineage's workflow closes it when it finishes its
-- queue (the close signal); a client erasing a lineage closes it first, so that a request
-- racing the erase is refused. Answers {lineageId, closed: true, changed}: changed is false when
-- it was closed already.
CREATE OR REPLACE FUNCTION session_close(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_lineage_id text;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  SELECT s.lineage_id INTO v_lineage_id FROM public.sessions s WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM public.sc_not_found(p_session_id);
  END IF;
  UPDATE public.lineages SET closed_at = now() WHERE id = v_lineage_id AND closed_at IS NULL;
  RETURN jsonb_build_object('lineageId', v_lineage_id, 'closed', true, 'changed', FOUND);
END
$$;
