-- The role a message is filed under (each dialect's roleOf).
CREATE OR REPLACE FUNCTION sc_stored_role(p_dialect text, m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_dialect
    WHEN 'openai-chat' THEN CASE WHEN m->>'role' = 'function' THEN 'tool' ELSE m->>'role' END
    WHEN 'anthropic' THEN CASE
      WHEN m->>'role' = 'assistant' THEN 'assistant'
      WHEN jsonb_typeof(m->'content') = 'array' AND jsonb_array_length(m->'content') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'content') b WHERE b->>'type' IS DISTINCT FROM 'tool_result') THEN 'tool'
      ELSE 'user' END
    WHEN 'ai-sdk' THEN CASE WHEN m->>'role' IN ('system', 'assistant', 'tool') THEN m->>'role' ELSE 'user' END
    WHEN 'gemini' THEN CASE
      WHEN m->>'role' = 'model' THEN 'assistant'
      WHEN jsonb_typeof(m->'parts') = 'array' AND jsonb_array_length(m->'parts') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'parts') p WHERE NOT (p ? 'functionResponse' OR p ? 'function_response')) THEN 'tool'
      ELSE 'user' END
    WHEN 'openai-agents' THEN CASE
      WHEN coalesce(m->>'type', CASE WHEN m ? 'role' THEN 'message' END) = 'message' THEN CASE WHEN m->>'role' IN ('system', 'developer', 'user', 'assistant') THEN m->>'role' ELSE 'user' END
      WHEN m->>'type' LIKE '%\_output' OR m->>'type' LIKE '%\_result' OR m->>'type' = 'mcp_approval_response' THEN 'tool'
      ELSE 'assistant' END
    ELSE CASE
      WHEN coalesce(m->>'type', CASE WHEN m ? 'role' THEN 'message' END) = 'message' THEN CASE WHEN m->>'role' IN ('system', 'developer', 'user', 'assistant') THEN m->>'role' ELSE 'user' END
      WHEN m->>'type' LIKE '%\_output' OR m->>'type' = 'mcp_approval_response' THEN 'tool'
      ELSE 'assistant' END
    END;
$$;
