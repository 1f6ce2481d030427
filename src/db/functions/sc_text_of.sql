-- The text of a message's content (src/compaction/messages.ts textOf): a string, or its text parts joined.
CREATE OR REPLACE FUNCTION sc_text_of(m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(m->'content')
    WHEN 'string' THEN m->>'content'
    WHEN 'array' THEN coalesce((SELECT string_agg(p->>'text', '' ORDER BY ord) FROM jsonb_array_elements(m->'content') WITH ORDINALITY AS t(p, ord)
                                WHERE p->>'type' = 'text' AND jsonb_typeof(p->'text') = 'string'), '')
    ELSE '' END;
$$;
