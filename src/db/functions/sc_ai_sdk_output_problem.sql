-- A tool-result's output in the ai-sdk dialect (src/compaction/dialects/ai-sdk.ts outputProblem).
CREATE OR REPLACE FUNCTION sc_ai_sdk_output_problem(o jsonb, p_field text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v jsonb;
  k integer;
  at text;
  found jsonb;
BEGIN
  IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
    RETURN jsonb_build_object('field', p_field, 'detail', 'must be an object with a type (text, json, error-text, error-json, execution-denied, content)');
  END IF;
  IF jsonb_typeof(o->'type') IS DISTINCT FROM 'string' OR o->>'type' NOT IN ('text', 'json', 'error-text', 'error-json', 'execution-denied', 'content') THEN
    RETURN jsonb_build_object('field', p_field || '.type', 'detail', 'must be one of text, json, error-text, error-json, execution-denied, content');
  END IF;
  IF o->>'type' IN ('text', 'error-text') AND jsonb_typeof(o->'value') IS DISTINCT FROM 'string' THEN
    RETURN jsonb_build_object('field', p_field || '.value', 'detail', 'must be a string');
  END IF;
  IF o->>'type' IN ('json', 'error-json') AND NOT o ? 'value' THEN
    RETURN jsonb_build_object('field', p_field || '.value', 'detail', 'is required (any JSON value)');
  END IF;
  IF o->>'type' = 'execution-denied' AND o ? 'reason' AND jsonb_typeof(o->'reason') <> 'string' THEN
    RETURN jsonb_build_object('field', p_field || '.reason', 'detail', 'must be a string');
  END IF;
  IF o->>'type' = 'content' THEN
    IF jsonb_typeof(o->'value') IS DISTINCT FROM 'array' THEN RETURN jsonb_build_object('field', p_field || '.value', 'detail', 'must be an array of content parts'); END IF;
    FOR v, k IN SELECT value, ordinality - 1 FROM jsonb_array_elements(o->'value') WITH ORDINALITY LOOP
      at := format('%s.value[%s]', p_field, k);
      IF jsonb_typeof(v) <> 'object' THEN RETURN jsonb_build_object('field', at, 'detail', 'must be an object (a content part)'); END IF;
      IF jsonb_typeof(v->'type') IS DISTINCT FROM 'string' OR v->>'type' NOT IN ('text', 'file', 'file-data', 'file-url', 'file-id', 'file-reference', 'image-data',
                                                                             'image-url', 'image-file-id', 'image-file-reference', 'custom') THEN
        RETURN jsonb_build_object('field', at || '.type', 'detail', 'must be one of text, file, file-data, file-url, file-id, file-reference, image-data, image-url, image-file-id, image-file-reference, custom');
      END IF;
      IF v->>'type' = 'text' AND jsonb_typeof(v->'text') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', at || '.text', 'detail', 'must be a string'); END IF;
      IF v->>'type' = 'file' THEN
        found := public.sc_ai_sdk_data_problem(v->'data', at || '.data', ARRAY['data', 'url', 'reference', 'text']);
        IF found IS NOT NULL THEN RETURN found; END IF;
        IF jsonb_typeof(v->'data') <> 'object' THEN
          RETURN jsonb_build_object('field', at || '.data', 'detail', 'must be tagged data ({type: data | url | reference | text, ...})');
        END IF;
        IF jsonb_typeof(v->'mediaType') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', at || '.mediaType', 'detail', 'must be a string'); END IF;
      END IF;
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;
