-- The batch an append stored under p_append_key in the lineage of p_session_id (any of its
-- session ids), its messages in order exactly as appended, wherever they are now (the head, a
-- session a compaction ended, archived), the copies a compaction made left out; NULL when the
-- key stored nothing (or the session is unknown). Read only: how a retried step learns what
-- its first attempt stored.
CREATE OR REPLACE FUNCTION session_appended_under(p_session_id text, p_append_key text)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT jsonb_agg(m.body ORDER BY m.lineage_seq)
    FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
   WHERE s.lineage_id = (SELECT lineage_id FROM public.sessions WHERE id = public.sc_tenant_id(p_session_id))
     AND m.append_key = p_append_key AND m.written_by_compaction IS NULL;
$$;
