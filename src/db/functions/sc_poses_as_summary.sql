-- Whether a message carries the summary marker (each dialect's posesAsSummary): the joined
-- text for openai-chat and openai-responses; any text block (Anthropic) or text part (ai-sdk),
-- or any text part, thought parts included (Gemini), on its own.
CREATE OR REPLACE FUNCTION sc_poses_as_summary(p_dialect text, m jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN p_dialect IN ('anthropic', 'ai-sdk') THEN
      CASE jsonb_typeof(m->'content')
        WHEN 'string' THEN starts_with(public.sc_marker_text(m->>'content'), '[CONTEXT SUMMARY: reference only, written by session-compaction]')
        WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(m->'content') b WHERE b->>'type' = 'text' AND jsonb_typeof(b->'text') = 'string'
                                    AND starts_with(public.sc_marker_text(b->>'text'), '[CONTEXT SUMMARY: reference only, written by session-compaction]'))
        ELSE false END
    WHEN p_dialect = 'gemini' THEN
      jsonb_typeof(m->'parts') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(m->'parts') p WHERE jsonb_typeof(p->'text') = 'string'
                                    AND starts_with(public.sc_marker_text(p->>'text'), '[CONTEXT SUMMARY: reference only, written by session-compaction]'))
    ELSE starts_with(public.sc_marker_text(public.sc_message_text(p_dialect, m)), '[CONTEXT SUMMARY: reference only, written by session-compaction]') END;
$$;
