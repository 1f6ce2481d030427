-- The structure of an append batch in its lineage's dialect. Size limits are each client's
-- configuration and checked there; the text rule (no NUL, well-formed Unicode) holds by
-- construction here: Postgres text and jsonb cannot carry a NUL or a lone surrogate.
CREATE OR REPLACE FUNCTION sc_check_batch(p_dialect text, p_messages jsonb) RETURNS void
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
      WHEN 'openai-agents' THEN sc_agents_problem(m)
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
