-- The transcript of the lineage's head, reached from any session id of the lineage:
-- {sessionId, dialect, messages, seqs}: `messages` exactly as appended (the provider input
-- the agent sends, in its dialect), `seqs` their positions in the head. With
-- p_include_archived, the rows an in-place compaction replaced, under "archived" as
-- [{seq, archivedAt, message}].
CREATE OR REPLACE FUNCTION session_transcript(p_session_id text, p_include_archived boolean DEFAULT false)
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
  RETURN jsonb_build_object('sessionId', g.head_session_id, 'dialect', g.dialect,
      'messages', coalesce((SELECT jsonb_agg(m.body ORDER BY m.seq) FROM public.messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NULL), '[]'::jsonb),
      'seqs', coalesce((SELECT jsonb_agg(m.seq ORDER BY m.seq) FROM public.messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NULL), '[]'::jsonb))
    || CASE WHEN p_include_archived THEN jsonb_build_object('archived',
      coalesce((SELECT jsonb_agg(jsonb_build_object('seq', m.seq, 'archivedAt', to_char(m.archived_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'message', m.body) ORDER BY m.seq)
                FROM public.messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NOT NULL), '[]'::jsonb))
      ELSE '{}'::jsonb END;
END
$$;
