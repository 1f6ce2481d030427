-- One gemini content's structural problem (src/compaction/dialects/gemini.ts check).
CREATE OR REPLACE FUNCTION sc_gemini_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  p jsonb;
  j integer;
  k text;
BEGIN
  IF jsonb_typeof(m->'role') IS DISTINCT FROM 'string' OR m->>'role' NOT IN ('user', 'model', 'function') THEN
    RETURN jsonb_build_object('field', 'role', 'detail', 'must be one of user, model, function');
  END IF;
  IF jsonb_typeof(m->'parts') IS DISTINCT FROM 'array' OR jsonb_array_length(m->'parts') = 0 THEN
    RETURN jsonb_build_object('field', 'parts', 'detail', 'must be a non-empty array of parts');
  END IF;
  FOR p, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'parts') WITH ORDINALITY LOOP
    IF jsonb_typeof(p) <> 'object' THEN RETURN jsonb_build_object('field', format('parts[%s]', j), 'detail', 'must be an object'); END IF;
    IF p ? 'text' AND jsonb_typeof(p->'text') <> 'string' THEN
      RETURN jsonb_build_object('field', format('parts[%s].text', j), 'detail', 'must be a string');
    END IF;
    IF p ? 'thought' AND jsonb_typeof(p->'thought') <> 'boolean' THEN
      RETURN jsonb_build_object('field', format('parts[%s].thought', j), 'detail', 'must be a boolean');
    END IF;
    -- functionCall (or the snake_case function_call of Python's model_dump) only in model turns, responses never in them.
    FOR k IN SELECT unnest(ARRAY['functionCall', 'function_call']) LOOP
      IF p ? k THEN
        IF jsonb_typeof(p->k) <> 'object' OR jsonb_typeof(p->k->'name') IS DISTINCT FROM 'string' OR p->k->>'name' = '' THEN
          RETURN jsonb_build_object('field', format('parts[%s].%s.name', j, k), 'detail', 'must be a non-empty string');
        END IF;
        IF m->>'role' <> 'model' THEN
          RETURN jsonb_build_object('field', format('parts[%s].%s', j, k), 'detail', 'a functionCall part is only allowed in a model turn');
        END IF;
      END IF;
    END LOOP;
    IF p ? 'functionResponse' OR p ? 'function_response' THEN
      k := CASE WHEN p ? 'functionResponse' THEN 'functionResponse' ELSE 'function_response' END;
      IF jsonb_typeof(p->k) <> 'object' OR jsonb_typeof(p->k->'name') IS DISTINCT FROM 'string' OR p->k->>'name' = '' THEN
        RETURN jsonb_build_object('field', format('parts[%s].%s.name', j, k), 'detail', 'must be a non-empty string');
      END IF;
      IF m->>'role' = 'model' THEN
        RETURN jsonb_build_object('field', format('parts[%s].%s', j, k), 'detail', 'a functionResponse part is only allowed in a user (or function) turn');
      END IF;
    ELSIF m->>'role' = 'function' THEN
      RETURN jsonb_build_object('field', format('parts[%s]', j), 'detail', 'a turn of role "function" holds only functionResponse parts');
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
