-- Image or file data of an ai-sdk part (src/compaction/dialects/ai-sdk.ts dataProblem): a base64 or URL
-- string, tagged data of one of p_tagged's types, or a provider reference (provider names to file ids).
CREATE OR REPLACE FUNCTION sc_ai_sdk_data_problem(d jsonb, p_field text, p_tagged text[]) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF jsonb_typeof(d) = 'string' THEN RETURN NULL; END IF;
  IF jsonb_typeof(d) IS DISTINCT FROM 'object' THEN
    RETURN jsonb_build_object('field', p_field, 'detail', 'must be a base64 or URL string, tagged data or a provider reference (bytes are converted to base64 before they are appended)');
  END IF;
  IF jsonb_typeof(d->'type') = 'string' AND d->>'type' IN ('data', 'url', 'reference', 'text') THEN
    IF NOT d->>'type' = ANY (p_tagged) THEN RETURN jsonb_build_object('field', p_field || '.type', 'detail', 'must be one of ' || array_to_string(p_tagged, ', ')); END IF;
    IF d->>'type' = 'data' AND jsonb_typeof(d->'data') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', p_field || '.data', 'detail', 'must be a base64 string'); END IF;
    IF d->>'type' = 'url' AND jsonb_typeof(d->'url') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', p_field || '.url', 'detail', 'must be a URL string'); END IF;
    IF d->>'type' = 'reference' AND (jsonb_typeof(d->'reference') IS DISTINCT FROM 'object'
        OR EXISTS (SELECT 1 FROM jsonb_each(d->'reference') e WHERE jsonb_typeof(e.value) <> 'string')) THEN
      RETURN jsonb_build_object('field', p_field || '.reference', 'detail', 'must map provider names to file ids');
    END IF;
    IF d->>'type' = 'text' AND jsonb_typeof(d->'text') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', p_field || '.text', 'detail', 'must be a string'); END IF;
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM jsonb_each(d) e WHERE jsonb_typeof(e.value) <> 'string') THEN
    RETURN jsonb_build_object('field', p_field, 'detail', 'must map provider names to file ids (a provider reference)');
  END IF;
  RETURN NULL;
END
$$;
