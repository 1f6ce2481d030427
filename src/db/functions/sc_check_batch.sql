-- The structure of an append batch in its lineage's dialect, and the data plane's size limits,
-- which hold for every caller (docs/wire-contract.md, "Limits"): at most 1,000 messages, at
-- most 200,000 characters of text in one message and 2,000,000 in the batch (the clients'
-- default MAX_APPEND_MESSAGES, MAX_MESSAGE_CHARS and MAX_APPEND_CHARS; text here is each
-- message's readable text, sc_message_text, which the clients' measure always includes), and
-- at most 64 MiB of JSON in the batch (tool-call arguments, images and everything else).
-- The text rule (no NUL, well-formed Unicode) holds by construction here: Postgres text and
-- jsonb cannot carry a NUL or a lone surrogate.
CREATE OR REPLACE FUNCTION sc_check_batch(p_dialect text, p_messages jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m jsonb;
  i integer;
  f text;
  problem jsonb;
  chars bigint;
  total bigint := 0;
BEGIN
  IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
    PERFORM sc_invalid('messages', 'must be an array of messages');
  END IF;
  IF jsonb_array_length(p_messages) = 0 THEN
    PERFORM sc_invalid('messages', 'must hold at least one message');
  END IF;
  IF jsonb_array_length(p_messages) > 1000 THEN
    PERFORM sc_invalid('messages', format('holds %s messages; at most 1000 per append', jsonb_array_length(p_messages)));
  END IF;
  IF octet_length(p_messages::text) > 67108864 THEN
    PERFORM sc_invalid('messages', format('is %s bytes of JSON; at most 67108864 per append', octet_length(p_messages::text)));
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
    chars := length(sc_message_text(p_dialect, m));
    IF chars > 200000 THEN
      PERFORM sc_invalid(f, format('is %s characters; at most 200000', chars));
    END IF;
    total := total + chars;
    IF sc_poses_as_summary(p_dialect, m) THEN
      PERFORM sc_invalid(f || CASE WHEN p_dialect = 'gemini' THEN '.parts' ELSE '.content' END,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes');
    END IF;
  END LOOP;
  IF total > 2000000 THEN
    PERFORM sc_invalid('messages', format('total %s characters; at most 2000000 per append', total));
  END IF;
END
$$;
