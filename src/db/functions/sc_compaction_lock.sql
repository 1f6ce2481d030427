-- The commit's locked path (src/db/commit.ts): takes the locks every writer waits on, the
-- lineage's (appends) and the parent session's (writers that bypass the lineage), and answers
-- the parent's live rows after the watermark, in the shape sc_compaction_begin answers rows in.
-- The locks last until the caller's transaction ends; the commit statement runs in it next.
-- SECURITY DEFINER so that the worker's role needs no privilege on any table (issue 40 §1).
CREATE OR REPLACE FUNCTION sc_compaction_lock(p_lineage_id text, p_parent_session_id text, p_after_seq integer)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  PERFORM 1 FROM public.lineages WHERE id = p_lineage_id FOR UPDATE;
  PERFORM 1 FROM public.sessions WHERE id = p_parent_session_id FOR UPDATE;
  RETURN coalesce((
    SELECT jsonb_agg(jsonb_build_object(
      'id', m.id, 'seq', m.seq, 'body', m.body, 'tokenEstimate', m.token_estimate, 'lineageSeq', m.lineage_seq,
      'originMessageId', m.origin_message_id) ORDER BY m.seq)
    FROM public.messages m WHERE m.session_id = p_parent_session_id AND m.archived_at IS NULL AND m.seq > p_after_seq), '[]'::jsonb);
END
$$;
