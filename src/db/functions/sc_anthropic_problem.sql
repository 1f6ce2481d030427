-- One anthropic message's structural problem (src/compaction/dialects/anthropic.ts check).
CREATE OR REPLACE FUNCTION sc_anthropic_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  b jsonb;
  j integer;
  found jsonb;
BEGIN
  IF m->>'role' IS NULL OR jsonb_typeof(m->'role') <> 'string' OR m->>'role' NOT IN ('user', 'assistant') THEN
    RETURN jsonb_build_object('field', 'role', 'detail', 'must be one of user, assistant');
  END IF;
  IF jsonb_typeof(m->'content') = 'string' THEN
    IF m->>'content' = '' THEN RETURN jsonb_build_object('field', 'content', 'detail', 'must not be empty'); END IF;
    RETURN NULL;
  END IF;
  IF jsonb_typeof(m->'content') IS DISTINCT FROM 'array' THEN
    RETURN jsonb_build_object('field', 'content', 'detail', 'must be a string or an array of content blocks');
  END IF;
  found := public.sc_typed_parts_problem(m->'content', 'content');
  IF found IS NOT NULL THEN RETURN found; END IF;
  FOR b, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'content') WITH ORDINALITY LOOP
    IF b->>'type' = 'tool_use' THEN
      IF m->>'role' <> 'assistant' THEN RETURN jsonb_build_object('field', format('content[%s]', j), 'detail', 'a tool_use block belongs in an assistant turn'); END IF;
      IF jsonb_typeof(b->'id') IS DISTINCT FROM 'string' OR length(b->>'id') < 1 OR length(b->>'id') > 256 THEN
        RETURN jsonb_build_object('field', format('content[%s].id', j), 'detail', 'must be a string of 1 to 256 characters');
      END IF;
      IF jsonb_typeof(b->'name') IS DISTINCT FROM 'string' OR b->>'name' = '' THEN
        RETURN jsonb_build_object('field', format('content[%s].name', j), 'detail', 'must be a non-empty string');
      END IF;
      IF b ? 'input' AND jsonb_typeof(b->'input') <> 'object' THEN
        RETURN jsonb_build_object('field', format('content[%s].input', j), 'detail', 'must be an object');
      END IF;
    ELSIF b->>'type' = 'tool_result' THEN
      IF m->>'role' <> 'user' THEN RETURN jsonb_build_object('field', format('content[%s]', j), 'detail', 'a tool_result block belongs in a user turn'); END IF;
      IF jsonb_typeof(b->'tool_use_id') IS DISTINCT FROM 'string' OR b->>'tool_use_id' = '' THEN
        RETURN jsonb_build_object('field', format('content[%s].tool_use_id', j), 'detail', 'must be a non-empty string');
      END IF;
      IF b ? 'content' AND coalesce(jsonb_typeof(b->'content'), 'missing') NOT IN ('string', 'array') THEN
        RETURN jsonb_build_object('field', format('content[%s].content', j), 'detail', 'must be a string or an array of content blocks');
      END IF;
      IF b ? 'is_error' AND jsonb_typeof(b->'is_error') <> 'boolean' THEN
        RETURN jsonb_build_object('field', format('content[%s].is_error', j), 'detail', 'must be a boolean');
      END IF;
    ELSIF b->>'type' IN ('thinking', 'redacted_thinking') THEN
      IF m->>'role' <> 'assistant' THEN RETURN jsonb_build_object('field', format('content[%s]', j), 'detail', 'a thinking block belongs in an assistant turn'); END IF;
      IF b->>'type' = 'thinking' AND jsonb_typeof(b->'thinking') IS DISTINCT FROM 'string' THEN
        RETURN jsonb_build_object('field', format('content[%s].thinking', j), 'detail', 'must be a string');
      END IF;
      IF b->>'type' = 'redacted_thinking' AND jsonb_typeof(b->'data') IS DISTINCT FROM 'string' THEN
        RETURN jsonb_build_object('field', format('content[%s].data', j), 'detail', 'must be a string');
      END IF;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
