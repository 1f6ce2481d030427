-- The human-readable text of a message in its dialect (each dialect's textOf): Gemini's text parts;
-- for the others (ai-sdk included) a string content, or its text parts joined.
CREATE OR REPLACE FUNCTION sc_message_text(p_dialect text, m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN p_dialect = 'gemini' THEN
      CASE WHEN jsonb_typeof(m->'parts') = 'array' THEN coalesce((SELECT string_agg(p->>'text', '' ORDER BY ord) FROM jsonb_array_elements(m->'parts') WITH ORDINALITY AS t(p, ord)
                                WHERE jsonb_typeof(p->'text') = 'string' AND coalesce(p->>'thought', 'false') <> 'true'), '') ELSE '' END
    WHEN jsonb_typeof(m->'content') = 'string' THEN m->>'content'
    WHEN jsonb_typeof(m->'content') = 'array' THEN coalesce((SELECT string_agg(p->>'text', '' ORDER BY ord) FROM jsonb_array_elements(m->'content') WITH ORDINALITY AS t(p, ord)
                                WHERE p->>'type' IN ('text', 'input_text', 'output_text') AND jsonb_typeof(p->'text') = 'string'), '')
    ELSE '' END;
$$;
