-- One ai-sdk message's structural problem (src/compaction/dialects/ai-sdk.ts check): the AI SDK's
-- ModelMessage as JSON, its part types by role, tool calls and results with their ids and names,
-- tool-result outputs by kind, image and file data as strings, tagged data or provider references.
CREATE OR REPLACE FUNCTION sc_ai_sdk_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_role text := m->>'role';
  p jsonb;
  j integer;
  at text;
  t text;
  allowed text[];
  found jsonb;
BEGIN
  IF jsonb_typeof(m->'role') IS DISTINCT FROM 'string' OR v_role NOT IN ('system', 'user', 'assistant', 'tool') THEN
    RETURN jsonb_build_object('field', 'role', 'detail', 'must be one of system, user, assistant, tool');
  END IF;
  IF m ? 'providerOptions' AND jsonb_typeof(m->'providerOptions') <> 'object' THEN
    RETURN jsonb_build_object('field', 'providerOptions', 'detail', 'must be an object');
  END IF;
  IF v_role = 'system' THEN
    IF jsonb_typeof(m->'content') IS DISTINCT FROM 'string' OR m->>'content' = '' THEN
      RETURN jsonb_build_object('field', 'content', 'detail', 'a system message needs a non-empty string content');
    END IF;
    RETURN NULL;
  END IF;
  IF jsonb_typeof(m->'content') = 'string' THEN
    IF v_role = 'tool' THEN RETURN jsonb_build_object('field', 'content', 'detail', 'a tool message needs an array of tool-result parts'); END IF;
    IF m->>'content' = '' THEN RETURN jsonb_build_object('field', 'content', 'detail', 'must not be empty (Anthropic and Gemini refuse a message without content)'); END IF;
    RETURN NULL;
  END IF;
  IF jsonb_typeof(m->'content') IS DISTINCT FROM 'array' THEN
    RETURN jsonb_build_object('field', 'content', 'detail', CASE WHEN v_role = 'tool' THEN 'must be an array of parts' ELSE 'must be a string or an array of parts' END);
  END IF;
  IF jsonb_array_length(m->'content') = 0 THEN
    RETURN jsonb_build_object('field', 'content', 'detail', 'must hold at least one part (Anthropic and Gemini refuse a message without content)');
  END IF;
  allowed := CASE v_role
    WHEN 'user' THEN ARRAY['text', 'image', 'file']
    WHEN 'assistant' THEN ARRAY['text', 'file', 'reasoning', 'reasoning-file', 'custom', 'tool-call', 'tool-result', 'tool-approval-request']
    ELSE ARRAY['tool-result', 'tool-approval-response'] END;
  FOR p, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'content') WITH ORDINALITY LOOP
    at := format('content[%s]', j);
    IF jsonb_typeof(p) <> 'object' THEN RETURN jsonb_build_object('field', at, 'detail', 'must be an object (a part)'); END IF;
    IF jsonb_typeof(p->'type') IS DISTINCT FROM 'string' OR p->>'type' = '' THEN RETURN jsonb_build_object('field', at || '.type', 'detail', 'must be a non-empty string'); END IF;
    t := p->>'type';
    IF NOT t = ANY (allowed) THEN
      RETURN jsonb_build_object('field', at || '.type', 'detail', format('a %s message takes %s parts, not %s', v_role, array_to_string(allowed, ', '), t));
    END IF;
    IF p ? 'providerOptions' AND jsonb_typeof(p->'providerOptions') <> 'object' THEN
      RETURN jsonb_build_object('field', at || '.providerOptions', 'detail', 'must be an object');
    END IF;
    IF t IN ('text', 'reasoning') THEN
      IF jsonb_typeof(p->'text') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', at || '.text', 'detail', format('a %s part needs a string text', t)); END IF;
    ELSIF t = 'image' THEN
      IF p ? 'mediaType' AND jsonb_typeof(p->'mediaType') <> 'string' THEN RETURN jsonb_build_object('field', at || '.mediaType', 'detail', 'must be a string'); END IF;
      found := public.sc_ai_sdk_data_problem(p->'image', at || '.image', ARRAY[]::text[]);
      IF found IS NOT NULL THEN RETURN found; END IF;
    ELSIF t IN ('file', 'reasoning-file') THEN
      found := public.sc_ai_sdk_data_problem(p->'data', at || '.data', CASE WHEN t = 'file' THEN ARRAY['data', 'url', 'reference', 'text'] ELSE ARRAY['data', 'url'] END);
      IF found IS NOT NULL THEN RETURN found; END IF;
      IF t = 'reasoning-file' AND jsonb_typeof(p->'data') = 'object' AND coalesce(p->'data'->>'type', '') NOT IN ('data', 'url') THEN
        RETURN jsonb_build_object('field', at || '.data', 'detail', 'must be a base64 or URL string, or tagged data or url');
      END IF;
      IF jsonb_typeof(p->'mediaType') IS DISTINCT FROM 'string' OR p->>'mediaType' = '' THEN
        RETURN jsonb_build_object('field', at || '.mediaType', 'detail', 'must be a non-empty string (an IANA media type)');
      END IF;
      IF p ? 'filename' AND jsonb_typeof(p->'filename') <> 'string' THEN RETURN jsonb_build_object('field', at || '.filename', 'detail', 'must be a string'); END IF;
    ELSIF t = 'custom' THEN
      IF jsonb_typeof(p->'kind') IS DISTINCT FROM 'string' OR p->>'kind' = '' THEN RETURN jsonb_build_object('field', at || '.kind', 'detail', 'must be a string that is not empty'); END IF;
    ELSIF t IN ('tool-call', 'tool-result') THEN
      IF jsonb_typeof(p->'toolCallId') IS DISTINCT FROM 'string' OR p->>'toolCallId' = '' THEN
        RETURN jsonb_build_object('field', at || '.toolCallId', 'detail', 'must be a string that is not empty');
      END IF;
      IF jsonb_typeof(p->'toolName') IS DISTINCT FROM 'string' OR p->>'toolName' = '' THEN
        RETURN jsonb_build_object('field', at || '.toolName', 'detail', 'must be a string that is not empty');
      END IF;
      IF t = 'tool-call' THEN
        IF jsonb_typeof(p->'input') IS DISTINCT FROM 'object' THEN RETURN jsonb_build_object('field', at || '.input', 'detail', 'must be an object (the tool input)'); END IF;
        IF p ? 'providerExecuted' AND jsonb_typeof(p->'providerExecuted') <> 'boolean' THEN
          RETURN jsonb_build_object('field', at || '.providerExecuted', 'detail', 'must be a boolean');
        END IF;
      ELSE
        found := public.sc_ai_sdk_output_problem(p->'output', at || '.output');
        IF found IS NOT NULL THEN RETURN found; END IF;
      END IF;
    ELSIF t IN ('tool-approval-request', 'tool-approval-response') THEN
      IF jsonb_typeof(p->'approvalId') IS DISTINCT FROM 'string' OR p->>'approvalId' = '' THEN
        RETURN jsonb_build_object('field', at || '.approvalId', 'detail', 'must be a string that is not empty');
      END IF;
      IF t = 'tool-approval-request' AND (jsonb_typeof(p->'toolCallId') IS DISTINCT FROM 'string' OR p->>'toolCallId' = '') THEN
        RETURN jsonb_build_object('field', at || '.toolCallId', 'detail', 'must be a string that is not empty');
      END IF;
      IF t = 'tool-approval-response' AND jsonb_typeof(p->'approved') IS DISTINCT FROM 'boolean' THEN
        RETURN jsonb_build_object('field', at || '.approved', 'detail', 'must be a boolean');
      END IF;
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
