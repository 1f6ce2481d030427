-- One openai-responses item's structural problem (src/compaction/dialects/openai-responses.ts check).
CREATE OR REPLACE FUNCTION sc_openai_responses_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_type text;
  found jsonb;
BEGIN
  IF m ? 'type' AND (jsonb_typeof(m->'type') <> 'string' OR m->>'type' = '') THEN
    RETURN jsonb_build_object('field', 'type', 'detail', 'must be a non-empty string');
  END IF;
  IF NOT m ? 'type' AND NOT m ? 'role' THEN
    RETURN jsonb_build_object('field', 'type', 'detail', 'is required (or role, for a message)');
  END IF;
  v_type := coalesce(m->>'type', 'message');
  IF v_type = 'message' THEN
    IF jsonb_typeof(m->'role') IS DISTINCT FROM 'string' OR m->>'role' NOT IN ('user', 'assistant', 'system', 'developer') THEN
      RETURN jsonb_build_object('field', 'role', 'detail', 'must be one of user, assistant, system, developer');
    END IF;
    IF jsonb_typeof(m->'content') = 'array' THEN
      IF jsonb_array_length(m->'content') > 0 THEN
        found := public.sc_typed_parts_problem(m->'content', 'content');
        IF found IS NOT NULL THEN RETURN found; END IF;
      END IF;
    ELSIF jsonb_typeof(m->'content') IS DISTINCT FROM 'string' THEN
      RETURN jsonb_build_object('field', 'content', 'detail', 'must be a string or an array of content parts');
    END IF;
  ELSIF v_type = 'function_call' THEN
    IF jsonb_typeof(m->'call_id') IS DISTINCT FROM 'string' OR m->>'call_id' = '' THEN RETURN jsonb_build_object('field', 'call_id', 'detail', 'must be a non-empty string'); END IF;
    IF jsonb_typeof(m->'name') IS DISTINCT FROM 'string' OR m->>'name' = '' THEN RETURN jsonb_build_object('field', 'name', 'detail', 'must be a non-empty string'); END IF;
    IF jsonb_typeof(m->'arguments') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', 'arguments', 'detail', 'must be a string'); END IF;
  ELSIF v_type = 'custom_tool_call' THEN
    IF jsonb_typeof(m->'call_id') IS DISTINCT FROM 'string' OR m->>'call_id' = '' THEN RETURN jsonb_build_object('field', 'call_id', 'detail', 'must be a non-empty string'); END IF;
    IF jsonb_typeof(m->'name') IS DISTINCT FROM 'string' OR m->>'name' = '' THEN RETURN jsonb_build_object('field', 'name', 'detail', 'must be a non-empty string'); END IF;
    IF jsonb_typeof(m->'input') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', 'input', 'detail', 'must be a string'); END IF;
  ELSIF v_type LIKE '%\_call\_output' THEN
    IF jsonb_typeof(m->'call_id') IS DISTINCT FROM 'string' OR m->>'call_id' = '' THEN
      IF NOT (v_type = 'local_shell_call_output' AND jsonb_typeof(m->'id') = 'string') THEN
        RETURN jsonb_build_object('field', 'call_id', 'detail', 'must be a non-empty string');
      END IF;
    END IF;
    IF v_type IN ('function_call_output', 'custom_tool_call_output') AND coalesce(jsonb_typeof(m->'output'), 'missing') NOT IN ('string', 'array') THEN
      RETURN jsonb_build_object('field', 'output', 'detail', 'must be a string or an array of content parts');
    END IF;
  ELSIF v_type = 'reasoning' THEN
    IF m ? 'summary' AND jsonb_typeof(m->'summary') <> 'array' THEN RETURN jsonb_build_object('field', 'summary', 'detail', 'must be an array'); END IF;
  END IF;
  RETURN NULL;
END
$$;
