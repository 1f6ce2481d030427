-- One openai-chat message's structural problem (src/compaction/dialects/openai-chat.ts check),
-- as {field, detail} relative to the message, or NULL. Unknown fields are kept, not refused.
CREATE OR REPLACE FUNCTION sc_openai_chat_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  tc jsonb;
  part jsonb;
  j integer;
  v_role text := CASE WHEN jsonb_typeof(m->'role') = 'string' THEN m->>'role' END;
  has_calls boolean := m ? 'tool_calls' AND jsonb_typeof(m->'tool_calls') <> 'null';
  speaks boolean;
BEGIN
  IF v_role IS NULL OR v_role NOT IN ('system', 'developer', 'user', 'assistant', 'tool', 'function') THEN
    RETURN jsonb_build_object('field', 'role', 'detail', 'must be one of system, developer, user, assistant, tool, function');
  END IF;
  IF has_calls THEN
    IF v_role <> 'assistant' THEN RETURN jsonb_build_object('field', 'tool_calls', 'detail', 'are only allowed on assistant messages'); END IF;
    IF jsonb_typeof(m->'tool_calls') <> 'array' OR jsonb_array_length(m->'tool_calls') = 0 THEN
      RETURN jsonb_build_object('field', 'tool_calls', 'detail', 'must be a non-empty array of tool calls');
    END IF;
    FOR tc, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY LOOP
      IF jsonb_typeof(tc) <> 'object' THEN RETURN jsonb_build_object('field', format('tool_calls[%s]', j), 'detail', 'must be an object'); END IF;
      IF jsonb_typeof(tc->'id') IS DISTINCT FROM 'string' OR length(tc->>'id') < 1 OR length(tc->>'id') > 256 THEN
        RETURN jsonb_build_object('field', format('tool_calls[%s].id', j), 'detail', 'must be a string of 1 to 256 characters');
      END IF;
      IF EXISTS (SELECT 1 FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY AS o(c, k) WHERE k - 1 < j AND o.c->'id' = tc->'id') THEN
        RETURN jsonb_build_object('field', format('tool_calls[%s].id', j), 'detail', 'appears twice in this message');
      END IF;
      IF NOT tc ? 'type' OR tc->'type' = '"function"'::jsonb THEN
        IF jsonb_typeof(tc->'function') IS DISTINCT FROM 'object' THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].function', j), 'detail', 'must be an object with name and arguments');
        END IF;
        IF jsonb_typeof(tc#>'{function,name}') IS DISTINCT FROM 'string' OR length(tc#>>'{function,name}') < 1 OR length(tc#>>'{function,name}') > 256 THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].function.name', j), 'detail', 'must be a string of 1 to 256 characters');
        END IF;
        IF jsonb_typeof(tc#>'{function,arguments}') IS DISTINCT FROM 'string' THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].function.arguments', j), 'detail', 'must be a string');
        END IF;
      ELSIF tc->'type' = '"custom"'::jsonb THEN
        IF jsonb_typeof(tc->'custom') IS DISTINCT FROM 'object' THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].custom', j), 'detail', 'must be an object with name and input');
        END IF;
        IF jsonb_typeof(tc#>'{custom,name}') IS DISTINCT FROM 'string' OR length(tc#>>'{custom,name}') < 1 OR length(tc#>>'{custom,name}') > 256 THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].custom.name', j), 'detail', 'must be a string of 1 to 256 characters');
        END IF;
        IF jsonb_typeof(tc#>'{custom,input}') IS DISTINCT FROM 'string' THEN
          RETURN jsonb_build_object('field', format('tool_calls[%s].custom.input', j), 'detail', 'must be a string');
        END IF;
      ELSE
        RETURN jsonb_build_object('field', format('tool_calls[%s].type', j), 'detail', 'must be "function" or "custom"');
      END IF;
    END LOOP;
  END IF;
  IF v_role = 'tool' THEN
    IF jsonb_typeof(m->'tool_call_id') IS DISTINCT FROM 'string' OR length(m->>'tool_call_id') < 1 OR length(m->>'tool_call_id') > 256 THEN
      RETURN jsonb_build_object('field', 'tool_call_id', 'detail', 'is required on tool messages (a string of 1 to 256 characters)');
    END IF;
  ELSIF m ? 'tool_call_id' THEN
    RETURN jsonb_build_object('field', 'tool_call_id', 'detail', 'is only allowed on tool messages');
  END IF;
  IF m ? 'name' AND (jsonb_typeof(m->'name') IS DISTINCT FROM 'string' OR length(m->>'name') < 1 OR length(m->>'name') > 256) THEN
    RETURN jsonb_build_object('field', 'name', 'detail', 'must be a string of 1 to 256 characters');
  END IF;
  speaks := has_calls OR coalesce(jsonb_typeof(m->'function_call') = 'object', false) OR coalesce(jsonb_typeof(m->'refusal') = 'string', false)
    OR coalesce(jsonb_typeof(m->'audio') = 'object', false);
  IF coalesce(jsonb_typeof(m->'content'), 'null') = 'null' THEN
    IF NOT (v_role = 'assistant' AND speaks) THEN
      RETURN jsonb_build_object('field', 'content', 'detail', CASE WHEN m ? 'content' THEN 'may be null only on an assistant message with tool_calls' ELSE 'is required' END);
    END IF;
  ELSIF jsonb_typeof(m->'content') = 'array' THEN
    IF jsonb_array_length(m->'content') = 0 THEN RETURN jsonb_build_object('field', 'content', 'detail', 'must hold at least one content part'); END IF;
    FOR part, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'content') WITH ORDINALITY LOOP
      IF jsonb_typeof(part) <> 'object' THEN RETURN jsonb_build_object('field', format('content[%s]', j), 'detail', 'must be an object'); END IF;
      IF jsonb_typeof(part->'type') IS DISTINCT FROM 'string' OR part->>'type' = '' THEN
        RETURN jsonb_build_object('field', format('content[%s].type', j), 'detail', 'must be a non-empty string');
      END IF;
      IF part->>'type' = 'text' AND jsonb_typeof(part->'text') IS DISTINCT FROM 'string' THEN
        RETURN jsonb_build_object('field', format('content[%s].text', j), 'detail', 'a text part needs a string text');
      END IF;
    END LOOP;
  ELSIF jsonb_typeof(m->'content') <> 'string' THEN
    RETURN jsonb_build_object('field', 'content', 'detail', 'must be a string, an array of content parts, or null');
  END IF;
  RETURN NULL;
END
$$;
