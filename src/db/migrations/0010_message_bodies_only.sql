ALTER TABLE "messages" ALTER COLUMN "body" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" DROP COLUMN "content";--> statement-breakpoint
ALTER TABLE "messages" DROP COLUMN "tool_calls";--> statement-breakpoint
ALTER TABLE "messages" DROP COLUMN "tool_call_id";--> statement-breakpoint
ALTER TABLE "messages" DROP COLUMN "name";--> statement-breakpoint
-- Dialects and the text rule in the data plane (see src/compaction/dialects and
-- src/compaction/text.ts for the TypeScript side of the same rules; contract/vectors checks
-- both). A message is stored as its body, exactly as appended; unknown fields are kept.

-- Text as the summary-marker check reads it: leading white space and format characters removed
-- (src/compaction/text.ts markerText: the same characters).
CREATE FUNCTION sc_marker_text(p text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT regexp_replace(p, E'^[\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u00AD\\u061C\\u1680\\u180E\\u2000-\\u200F\\u2028-\\u202F\\u205F-\\u2064\\u2066-\\u206F\\u3000\\uFEFF\\uFFF9-\\uFFFB]+', '');
$$;
--> statement-breakpoint
-- The human-readable text of a message in its dialect (each dialect's textOf).
CREATE FUNCTION sc_message_text(p_dialect text, m jsonb) RETURNS text
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
--> statement-breakpoint
-- The token estimate of one message (src/compaction/tokens.ts estimateTokens): openai-chat as
-- before (sc_estimate_tokens); other dialects 4 plus a quarter of the UTF-16 length of every
-- string value in the message.
CREATE FUNCTION sc_estimate_message_tokens(p_dialect text, m jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p_dialect = 'openai-chat' THEN sc_estimate_tokens(m)
    ELSE 4 + ceil(coalesce((SELECT sum(sc_utf16_length(v #>> '{}')) FROM jsonb_path_query(m, 'strict $.**') AS v WHERE jsonb_typeof(v) = 'string'), 0) / 4.0)::integer END;
$$;
--> statement-breakpoint
-- The role a message is filed under (each dialect's roleOf).
CREATE FUNCTION sc_stored_role(p_dialect text, m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_dialect
    WHEN 'openai-chat' THEN CASE WHEN m->>'role' = 'function' THEN 'tool' ELSE m->>'role' END
    WHEN 'anthropic' THEN CASE
      WHEN m->>'role' = 'assistant' THEN 'assistant'
      WHEN jsonb_typeof(m->'content') = 'array' AND jsonb_array_length(m->'content') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'content') b WHERE b->>'type' IS DISTINCT FROM 'tool_result') THEN 'tool'
      ELSE 'user' END
    WHEN 'gemini' THEN CASE
      WHEN m->>'role' = 'model' THEN 'assistant'
      WHEN jsonb_typeof(m->'parts') = 'array' AND jsonb_array_length(m->'parts') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'parts') p WHERE NOT (p ? 'functionResponse' OR p ? 'function_response')) THEN 'tool'
      ELSE 'user' END
    ELSE CASE
      WHEN coalesce(m->>'type', CASE WHEN m ? 'role' THEN 'message' END) = 'message' THEN CASE WHEN m->>'role' IN ('system', 'developer', 'user', 'assistant') THEN m->>'role' ELSE 'user' END
      WHEN m->>'type' LIKE '%\_output' OR m->>'type' = 'mcp_approval_response' THEN 'tool'
      ELSE 'assistant' END
    END;
$$;
--> statement-breakpoint
-- One openai-chat message's structural problem (src/compaction/dialects/openai-chat.ts check),
-- as {field, detail} relative to the message, or NULL. Unknown fields are kept, not refused.
CREATE FUNCTION sc_chat_problem(m jsonb) RETURNS jsonb
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
--> statement-breakpoint
-- Parts/blocks: a non-empty array of objects with a non-empty string type (Anthropic content, Responses content).
CREATE FUNCTION sc_typed_parts_problem(p_parts jsonb, p_field text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  part jsonb;
  j integer;
BEGIN
  IF jsonb_array_length(p_parts) = 0 THEN RETURN jsonb_build_object('field', p_field, 'detail', 'must hold at least one block'); END IF;
  FOR part, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_parts) WITH ORDINALITY LOOP
    IF jsonb_typeof(part) <> 'object' THEN RETURN jsonb_build_object('field', format('%s[%s]', p_field, j), 'detail', 'must be an object'); END IF;
    IF jsonb_typeof(part->'type') IS DISTINCT FROM 'string' OR part->>'type' = '' THEN
      RETURN jsonb_build_object('field', format('%s[%s].type', p_field, j), 'detail', 'must be a non-empty string');
    END IF;
    IF part->>'type' IN ('text', 'input_text', 'output_text') AND jsonb_typeof(part->'text') IS DISTINCT FROM 'string' THEN
      RETURN jsonb_build_object('field', format('%s[%s].text', p_field, j), 'detail', 'a text part needs a string text');
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- One anthropic message's structural problem (src/compaction/dialects/anthropic.ts check).
CREATE FUNCTION sc_anthropic_problem(m jsonb) RETURNS jsonb
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
  found := sc_typed_parts_problem(m->'content', 'content');
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
--> statement-breakpoint
-- One openai-responses item's structural problem (src/compaction/dialects/openai-responses.ts check).
CREATE FUNCTION sc_responses_problem(m jsonb) RETURNS jsonb
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
        found := sc_typed_parts_problem(m->'content', 'content');
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
--> statement-breakpoint
-- One gemini content's structural problem (src/compaction/dialects/gemini.ts check).
CREATE FUNCTION sc_gemini_problem(m jsonb) RETURNS jsonb
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
--> statement-breakpoint
-- Whether a message carries the summary marker (each dialect's posesAsSummary): the joined
-- text for openai-chat and openai-responses; any text block (Anthropic) or any text part,
-- thought parts included (Gemini), on its own.
CREATE FUNCTION sc_poses_as_summary(p_dialect text, m jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_dialect
    WHEN 'anthropic' THEN
      CASE jsonb_typeof(m->'content')
        WHEN 'string' THEN starts_with(sc_marker_text(m->>'content'), '[CONTEXT SUMMARY: reference only, written by session-compaction]')
        WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(m->'content') b WHERE b->>'type' = 'text' AND jsonb_typeof(b->'text') = 'string'
                                    AND starts_with(sc_marker_text(b->>'text'), '[CONTEXT SUMMARY: reference only, written by session-compaction]'))
        ELSE false END
    WHEN 'gemini' THEN
      jsonb_typeof(m->'parts') = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements(m->'parts') p WHERE jsonb_typeof(p->'text') = 'string'
                                    AND starts_with(sc_marker_text(p->>'text'), '[CONTEXT SUMMARY: reference only, written by session-compaction]'))
    ELSE starts_with(sc_marker_text(sc_message_text(p_dialect, m)), '[CONTEXT SUMMARY: reference only, written by session-compaction]') END;
$$;
--> statement-breakpoint
-- The structure of an append batch in its lineage's dialect. Size limits are each client's
-- configuration and checked there; the text rule (no NUL, well-formed Unicode) holds by
-- construction here: Postgres text and jsonb cannot carry a NUL or a lone surrogate.
CREATE FUNCTION sc_check_batch(p_dialect text, p_messages jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m jsonb;
  i integer;
  f text;
  problem jsonb;
BEGIN
  IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
    PERFORM sc_invalid('messages', 'must be an array of messages');
  END IF;
  IF jsonb_array_length(p_messages) = 0 THEN
    PERFORM sc_invalid('messages', 'must hold at least one message');
  END IF;
  FOR m, i IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_messages) WITH ORDINALITY LOOP
    f := format('messages[%s]', i);
    IF jsonb_typeof(m) <> 'object' THEN
      PERFORM sc_invalid(f, 'must be an object');
    END IF;
    problem := CASE p_dialect
      WHEN 'openai-chat' THEN sc_chat_problem(m)
      WHEN 'anthropic' THEN sc_anthropic_problem(m)
      WHEN 'openai-responses' THEN sc_responses_problem(m)
      WHEN 'gemini' THEN sc_gemini_problem(m) END;
    IF problem IS NOT NULL THEN
      PERFORM sc_invalid(f || CASE WHEN problem->>'field' = '' THEN '' WHEN left(problem->>'field', 1) = '[' THEN problem->>'field' ELSE '.' || (problem->>'field') END, problem->>'detail');
    END IF;
    -- Nothing appended may pose as a summary this service wrote (src/compaction/messages.ts).
    IF p_dialect = 'openai-chat' AND m->>'name' = 'context_summary' THEN
      PERFORM sc_invalid(f || '.name', '"context_summary" is reserved for the summaries this service writes');
    END IF;
    IF sc_poses_as_summary(p_dialect, m) THEN
      PERFORM sc_invalid(f || CASE WHEN p_dialect = 'gemini' THEN '.parts' ELSE '.content' END,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes');
    END IF;
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION sc_lineage_json(g lineages) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'lineageId', g.id, 'headSessionId', g.head_session_id, 'generation', g.generation, 'mode', g.mode, 'dialect', g.dialect,
    'source', g.source, 'compactAtTokens', g.compact_at_tokens, 'model', g.model, 'contextWindow', g.context_window,
    'closed', g.closed_at IS NOT NULL);
$$;
--> statement-breakpoint
DROP FUNCTION session_create(text, text, text, integer, text, integer);
--> statement-breakpoint
-- Creates a lineage with its root session, in a dialect (default openai-chat). Idempotent for
-- the same parameters; other parameters for an existing id are a SessionConflictError, and a
-- closed lineage is a LineageClosedError (it takes nothing more; erase it to reuse the id).
CREATE FUNCTION session_create(p_session_id text, p_source text DEFAULT NULL, p_mode text DEFAULT 'rotate', p_compact_at_tokens integer DEFAULT NULL,
                               p_model text DEFAULT NULL, p_context_window integer DEFAULT NULL, p_dialect text DEFAULT 'openai-chat')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_mode text := coalesce(p_mode, 'rotate');
  v_dialect text := coalesce(p_dialect, 'openai-chat');
  inserted text;
  owner text;
  g lineages;
BEGIN
  IF p_session_id IS NULL OR p_session_id = '' THEN
    PERFORM sc_invalid('sessionId', 'must be a non-empty string');
  END IF;
  IF length(regexp_replace(p_session_id, '--g[0-9]+$', '')) > 128 THEN
    PERFORM sc_invalid('sessionId', 'must be at most 128 characters');
  END IF;
  IF p_session_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN
    PERFORM sc_invalid('sessionId', 'may contain only letters, digits and . _ : - and must start with a letter or digit');
  END IF;
  IF p_session_id ~ '--g[0-9]+$' THEN
    PERFORM sc_invalid('sessionId', 'must not end in --g<number> (reserved for compaction children)');
  END IF;
  IF v_mode NOT IN ('rotate', 'in_place') THEN
    PERFORM sc_invalid('mode', 'must be one of rotate, in_place');
  END IF;
  IF v_dialect NOT IN ('openai-chat', 'openai-responses', 'anthropic', 'gemini') THEN
    PERFORM sc_invalid('dialect', 'must be one of openai-chat, openai-responses, anthropic, gemini');
  END IF;
  IF p_source IS NOT NULL AND (length(p_source) = 0 OR length(p_source) > 100) THEN
    PERFORM sc_invalid('source', 'must be a string of 1 to 100 characters');
  END IF;
  IF p_compact_at_tokens IS NOT NULL AND p_compact_at_tokens < 1 THEN
    PERFORM sc_invalid('compactAtTokens', 'must be a positive whole number');
  END IF;
  IF p_model IS NOT NULL AND (length(p_model) = 0 OR length(p_model) > 200) THEN
    PERFORM sc_invalid('model', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_context_window IS NOT NULL AND p_context_window < 1 THEN
    PERFORM sc_invalid('contextWindow', 'must be a positive whole number');
  END IF;
  INSERT INTO lineages (id, head_session_id, mode, dialect, source, compact_at_tokens, model, context_window)
    VALUES (p_session_id, p_session_id, v_mode, v_dialect, p_source, p_compact_at_tokens, p_model, p_context_window)
    ON CONFLICT DO NOTHING RETURNING id INTO inserted;
  IF inserted IS NOT NULL THEN
    INSERT INTO sessions (id, lineage_id, source) VALUES (p_session_id, p_session_id, p_source);
    SELECT * INTO g FROM lineages WHERE id = p_session_id;
    RETURN sc_lineage_json(g) || '{"created": true}';
  END IF;
  SELECT lineage_id INTO owner FROM sessions WHERE id = p_session_id;
  IF owner IS DISTINCT FROM p_session_id THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists as a compaction child in another lineage', to_jsonb(p_session_id)::text),
      jsonb_build_object('sessionId', p_session_id, 'detail', 'as a compaction child in another lineage'));
  END IF;
  SELECT * INTO g FROM lineages WHERE id = p_session_id;
  IF g.closed_at IS NOT NULL THEN
    PERFORM sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  IF g.mode <> v_mode THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with mode %s', to_jsonb(p_session_id)::text, g.mode),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with mode %s', g.mode)));
  END IF;
  IF g.dialect <> v_dialect THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with dialect %s', to_jsonb(p_session_id)::text, g.dialect),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with dialect %s', g.dialect)));
  END IF;
  IF g.source IS DISTINCT FROM p_source THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with source %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.source)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with source %s', coalesce(to_jsonb(g.source)::text, 'null'))));
  END IF;
  IF g.compact_at_tokens IS DISTINCT FROM p_compact_at_tokens THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with compactAtTokens %s', to_jsonb(p_session_id)::text, coalesce(g.compact_at_tokens::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with compactAtTokens %s', coalesce(g.compact_at_tokens::text, 'null'))));
  END IF;
  IF g.model IS DISTINCT FROM p_model THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with model %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.model)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with model %s', coalesce(to_jsonb(g.model)::text, 'null'))));
  END IF;
  IF g.context_window IS DISTINCT FROM p_context_window THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with contextWindow %s', to_jsonb(p_session_id)::text, coalesce(g.context_window::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with contextWindow %s', coalesce(g.context_window::text, 'null'))));
  END IF;
  RETURN sc_lineage_json(g) || '{"created": false}';
END
$$;
--> statement-breakpoint
-- session_append as in 0007, in the lineage's dialect: each message is stored as its body,
-- exactly as sent, filed under its dialect's role.
CREATE OR REPLACE FUNCTION session_append(p_session_id text, p_messages jsonb, p_append_key text DEFAULT NULL, p_token_counts integer[] DEFAULT NULL,
                               p_resend_after_ms bigint DEFAULT 300000)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  g lineages;
  n integer;
  max_seq integer;
  added integer;
  new_head_tokens integer;
  hash text;
  prior append_keys;
  v_result jsonb;
  fire boolean;
  request_id text;
BEGIN
  IF p_append_key IS NOT NULL AND (length(p_append_key) = 0 OR length(p_append_key) > 200) THEN
    PERFORM sc_invalid('appendKey', 'must be a string of 1 to 200 characters');
  END IF;
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  PERFORM sc_check_batch(g.dialect, p_messages);
  n := jsonb_array_length(p_messages);
  IF p_token_counts IS NOT NULL AND (cardinality(p_token_counts) <> n OR array_position(p_token_counts, NULL) IS NOT NULL
      OR EXISTS (SELECT 1 FROM unnest(p_token_counts) t WHERE t < 0)) THEN
    PERFORM sc_invalid('tokenCounts', format('must hold one non-negative count per message (%s)', n));
  END IF;
  IF p_append_key IS NOT NULL THEN
    hash := md5(p_messages::text);
    SELECT * INTO prior FROM append_keys WHERE lineage_id = g.id AND append_key = p_append_key;
    IF FOUND THEN
      IF prior.batch_hash <> hash THEN
        PERFORM sc_invalid('appendKey', 'was already used for a different batch in this lineage');
      END IF;
      RETURN prior.result || '{"replayed": true}';
    END IF;
  END IF;
  IF g.closed_at IS NOT NULL THEN
    PERFORM sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  SELECT coalesce(max(seq), 0) INTO max_seq FROM messages WHERE session_id = g.head_session_id;
  WITH inserted AS (
    INSERT INTO messages (session_id, seq, role, body, token_estimate, lineage_seq, append_key)
    SELECT g.head_session_id, max_seq + t.ord, sc_stored_role(g.dialect, t.m), t.m,
           coalesce(p_token_counts[t.ord], sc_estimate_message_tokens(g.dialect, t.m)), g.appended_count + t.ord, p_append_key
    FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS t(m, ord)
    ORDER BY t.ord
    RETURNING token_estimate
  )
  SELECT sum(token_estimate) INTO added FROM inserted;
  new_head_tokens := g.head_tokens + added;
  request_id := format('threshold:%s:%s', g.head_session_id, g.appended_count + n);
  fire := g.compact_at_tokens IS NOT NULL AND new_head_tokens >= g.compact_at_tokens
    AND NOT (g.auto_request_id IS NOT NULL AND g.auto_request_generation = g.generation
             AND g.auto_requested_at > now() - make_interval(secs => p_resend_after_ms / 1000.0))
    AND (g.auto_cooldown_until IS NULL OR g.auto_cooldown_until <= now());
  UPDATE lineages SET
    appended_count = g.appended_count + n,
    head_tokens = new_head_tokens,
    auto_request_id = CASE WHEN fire THEN request_id ELSE auto_request_id END,
    auto_request_generation = CASE WHEN fire THEN g.generation ELSE auto_request_generation END,
    auto_requested_at = CASE WHEN fire THEN now() ELSE auto_requested_at END
  WHERE id = g.id;
  v_result := jsonb_build_object(
    'sessionId', g.head_session_id,
    'lineageId', g.id,
    'firstSeq', max_seq + 1,
    'lastSeq', max_seq + n,
    'count', n,
    'headTokens', new_head_tokens,
    'firstLineageSeq', g.appended_count + 1,
    'lastLineageSeq', g.appended_count + n)
    || CASE WHEN fire THEN jsonb_build_object('autoCompactionRequestId', request_id) ELSE '{}'::jsonb END;
  IF p_append_key IS NOT NULL THEN
    INSERT INTO append_keys (lineage_id, append_key, batch_hash, result) VALUES (g.id, p_append_key, hash, v_result);
  END IF;
  RETURN v_result || '{"replayed": false}';
END
$$;
--> statement-breakpoint
DROP FUNCTION session_transcript(text, boolean);
--> statement-breakpoint
DROP FUNCTION sc_message_json(messages);
--> statement-breakpoint
-- The transcript of the lineage's head, reached from any session id of the lineage:
-- {sessionId, dialect, messages, seqs}: `messages` exactly as appended (the provider input
-- the agent sends, in its dialect), `seqs` their positions in the head. With
-- p_include_archived, the rows an in-place compaction replaced, under "archived" as
-- [{seq, archivedAt, message}].
CREATE FUNCTION session_transcript(p_session_id text, p_include_archived boolean DEFAULT false)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  g lineages;
BEGIN
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  RETURN jsonb_build_object('sessionId', g.head_session_id, 'dialect', g.dialect,
      'messages', coalesce((SELECT jsonb_agg(m.body ORDER BY m.seq) FROM messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NULL), '[]'::jsonb),
      'seqs', coalesce((SELECT jsonb_agg(m.seq ORDER BY m.seq) FROM messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NULL), '[]'::jsonb))
    || CASE WHEN p_include_archived THEN jsonb_build_object('archived',
      coalesce((SELECT jsonb_agg(jsonb_build_object('seq', m.seq, 'archivedAt', to_char(m.archived_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'message', m.body) ORDER BY m.seq)
                FROM messages m WHERE m.session_id = g.head_session_id AND m.archived_at IS NOT NULL), '[]'::jsonb))
      ELSE '{}'::jsonb END;
END
$$;
--> statement-breakpoint
DROP FUNCTION sc_check_messages(jsonb);
--> statement-breakpoint
-- The openai-chat token estimate (src/compaction/tokens.ts via openai-chat texts), as in 0006
-- and now counting custom tool calls (custom.name, custom.input) like function calls.
CREATE OR REPLACE FUNCTION sc_estimate_tokens(m jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  chars integer := 0;
BEGIN
  chars := sc_utf16_length(sc_text_of(m));
  IF jsonb_typeof(m->'tool_calls') = 'array' THEN
    chars := chars + coalesce((SELECT sum(
        sc_utf16_length(coalesce(CASE WHEN jsonb_typeof(c->'function') = 'object' THEN c#>>'{function,name}' ELSE c#>>'{custom,name}' END, ''))
      + sc_utf16_length(coalesce(CASE WHEN jsonb_typeof(c->'function') = 'object' THEN c#>>'{function,arguments}' ELSE c#>>'{custom,input}' END, ''))
      + sc_utf16_length(coalesce(c->>'id', '')))
      FROM jsonb_array_elements(m->'tool_calls') c WHERE jsonb_typeof(c) = 'object'), 0);
  END IF;
  chars := chars + coalesce(sc_utf16_length(m->>'tool_call_id'), 0) + coalesce(sc_utf16_length(m->>'name'), 0);
  RETURN 4 + ceil(chars / 4.0)::integer;
END
$$;
