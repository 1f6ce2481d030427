-- The structure of an append batch in its lineage's dialect, and the data plane's size limits,
-- which hold for every caller (docs/wire-contract.md, "Limits"): at most 1,000 messages, at
-- most 200,000 characters of text in one message and 2,000,000 in the batch (the clients'
-- default MAX_APPEND_MESSAGES, MAX_MESSAGE_CHARS and MAX_APPEND_CHARS; text here is each
-- message's readable text, sc_message_text, which the clients' measure always includes), and
-- at most 64 MiB of JSON in the batch (tool-call arguments, images and everything else).
-- The text rule (no NUL, well-formed Unicode) holds by construction here: Postgres text and
-- jsonb cannot carry a NUL or a lone surrogate. The dialect's own rules come from its row in the
-- dialects table (src/compaction/dialects/registry.ts): its problem function, named
-- sc_<dialect>_problem, its reserved summary name and the field a forged marker is reported at.
CREATE OR REPLACE FUNCTION sc_check_batch(p_dialect text, p_messages jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m jsonb;
  i integer;
  f text;
  problem jsonb;
  chars bigint;
  total bigint := 0;
  d public.dialects;
BEGIN
  SELECT * INTO d FROM public.dialects WHERE name = p_dialect;
  IF NOT FOUND THEN
    PERFORM public.sc_invalid('dialect', format('%s is not a known dialect', coalesce(to_jsonb(p_dialect)::text, 'null')));
  END IF;
  IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
    PERFORM public.sc_invalid('messages', 'must be an array of messages');
  END IF;
  IF jsonb_array_length(p_messages) = 0 THEN
    PERFORM public.sc_invalid('messages', 'must hold at least one message');
  END IF;
  IF jsonb_array_length(p_messages) > 1000 THEN
    PERFORM public.sc_invalid('messages', format('holds %s messages; at most 1000 per append', jsonb_array_length(p_messages)));
  END IF;
  IF octet_length(p_messages::text) > 67108864 THEN
    PERFORM public.sc_invalid('messages', format('is %s bytes of JSON; at most 67108864 per append', octet_length(p_messages::text)));
  END IF;
  FOR m, i IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_messages) WITH ORDINALITY LOOP
    f := format('messages[%s]', i);
    IF jsonb_typeof(m) <> 'object' THEN
      PERFORM public.sc_invalid(f, 'must be an object');
    END IF;
    EXECUTE format('SELECT %I($1)', d.problem_function) INTO problem USING m;
    IF problem IS NOT NULL THEN
      PERFORM public.sc_invalid(f || CASE WHEN problem->>'field' = '' THEN '' WHEN left(problem->>'field', 1) = '[' THEN problem->>'field' ELSE '.' || (problem->>'field') END, problem->>'detail');
    END IF;
    -- Nothing appended may pose as a summary this service wrote (src/compaction/messages.ts).
    IF d.reserved_name IS NOT NULL AND m->>'name' = d.reserved_name THEN
      PERFORM public.sc_invalid(f || '.name', format('"%s" is reserved for the summaries this service writes', d.reserved_name));
    END IF;
    chars := length(public.sc_message_text(p_dialect, m));
    IF chars > 200000 THEN
      PERFORM public.sc_invalid(f, format('is %s characters; at most 200000', chars));
    END IF;
    total := total + chars;
    IF public.sc_poses_as_summary(p_dialect, m) THEN
      PERFORM public.sc_invalid(f || '.' || d.summary_marker_field,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes');
    END IF;
  END LOOP;
  IF total > 2000000 THEN
    PERFORM public.sc_invalid('messages', format('total %s characters; at most 2000000 per append', total));
  END IF;
END
$$;
