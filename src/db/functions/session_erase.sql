-- Erases every row of the lineage of p_session_id (any of its session ids) in one
-- transaction: messages, compactions, append keys, pruned ranges, sessions, the lineage. The
-- caller closes the lineage and deletes its workflow executions first (src/client
-- deleteLineage): a lineage being erased refuses appends and creates meanwhile. A lineage
-- still open is refused (InvalidInputError, field close) unless p_close closes it in the same
-- call. Answers {lineageId, messages, sessions, compactions, appendKeys} (rows deleted).
DROP FUNCTION IF EXISTS public.session_erase(text);
CREATE OR REPLACE FUNCTION session_erase(p_session_id text, p_close boolean DEFAULT false) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  n_messages integer;
  n_sessions integer;
  n_compactions integer;
  n_keys integer;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  SELECT l.* INTO g FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND THEN
    SELECT * INTO g FROM public.lineages WHERE id = p_session_id FOR UPDATE;
    IF NOT FOUND THEN
      PERFORM public.sc_not_found(p_session_id);
    END IF;
  END IF;
  IF g.closed_at IS NULL AND NOT coalesce(p_close, false) THEN
    PERFORM public.sc_invalid('close', format('session lineage %s is still open: close it first, or erase it with close to close it in the same call', to_jsonb(g.id)::text));
  END IF;
  DELETE FROM public.messages m USING public.sessions s WHERE s.id = m.session_id AND s.lineage_id = g.id;
  GET DIAGNOSTICS n_messages = ROW_COUNT;
  DELETE FROM public.compactions WHERE lineage_id = g.id;
  GET DIAGNOSTICS n_compactions = ROW_COUNT;
  DELETE FROM public.append_keys WHERE lineage_id = g.id;
  GET DIAGNOSTICS n_keys = ROW_COUNT;
  DELETE FROM public.pruned_messages WHERE lineage_id = g.id;
  DELETE FROM public.sessions WHERE lineage_id = g.id;
  GET DIAGNOSTICS n_sessions = ROW_COUNT;
  DELETE FROM public.lineages WHERE id = g.id;
  RETURN jsonb_build_object('lineageId', g.id, 'messages', n_messages, 'sessions', n_sessions, 'compactions', n_compactions, 'appendKeys', n_keys);
END
$$;
