-- One openai-agents item's structural problem (src/compaction/dialects/openai-agents.ts check).
CREATE OR REPLACE FUNCTION sc_openai_agents_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_type text := m->>'type';
  v_field text;
BEGIN
  IF NOT m ? 'type' OR v_type = 'message' THEN
    RETURN public.sc_openai_responses_problem(m);
  END IF;
  IF jsonb_typeof(m->'type') <> 'string' OR v_type = '' THEN
    RETURN jsonb_build_object('field', 'type', 'detail', 'must be a non-empty string');
  END IF;
  IF v_type IN ('function_call', 'function_call_result', 'function_call_output', 'computer_call', 'computer_call_result', 'computer_call_output',
                'shell_call', 'shell_call_output', 'apply_patch_call', 'apply_patch_call_output', 'program', 'program_output') THEN
    v_field := CASE WHEN NOT m ? 'callId' AND m ? 'call_id' THEN 'call_id' ELSE 'callId' END;
    IF jsonb_typeof(m->v_field) IS DISTINCT FROM 'string' OR m->>v_field = '' THEN
      RETURN jsonb_build_object('field', v_field, 'detail', 'must be a string that is not empty');
    END IF;
  END IF;
  IF v_type = 'function_call' THEN
    IF jsonb_typeof(m->'name') IS DISTINCT FROM 'string' OR m->>'name' = '' THEN RETURN jsonb_build_object('field', 'name', 'detail', 'must be a string that is not empty'); END IF;
    IF jsonb_typeof(m->'arguments') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', 'arguments', 'detail', 'must be a string'); END IF;
  ELSIF v_type IN ('function_call_result', 'function_call_output') THEN
    IF coalesce(jsonb_typeof(m->'output'), 'missing') NOT IN ('string', 'array', 'object') THEN
      RETURN jsonb_build_object('field', 'output', 'detail', CASE WHEN m ? 'output' THEN 'must be a string, a content part or a list of them' ELSE 'is required' END);
    END IF;
  ELSIF v_type = 'reasoning' THEN
    IF m ? 'content' AND jsonb_typeof(m->'content') <> 'array' THEN RETURN jsonb_build_object('field', 'content', 'detail', 'must be an array of parts'); END IF;
    IF m ? 'summary' AND jsonb_typeof(m->'summary') <> 'array' THEN RETURN jsonb_build_object('field', 'summary', 'detail', 'must be an array of parts'); END IF;
  END IF;
  RETURN NULL;
END
$$;
