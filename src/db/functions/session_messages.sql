-- The live (not archived) messages of exactly this session, in order, each exactly as appended
-- (its body): what a compaction's caller reads of the head the compaction answered, even once
-- another compaction has moved the lineage's head on (session_transcript follows the head).
-- An unknown session has none: [].
CREATE OR REPLACE FUNCTION session_messages(p_session_id text)
RETURNS jsonb LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT coalesce(jsonb_agg(m.body ORDER BY m.seq), '[]'::jsonb)
    FROM public.messages m WHERE m.session_id = public.sc_tenant_id(p_session_id) AND m.archived_at IS NULL;
$$;
