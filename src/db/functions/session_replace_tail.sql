-- Takes back the last p_count live messages of the lineage's head (all of them when NULL)
-- and appends p_replacement after them (session_append), in one transaction under the lineage
-- lock. With p_expected (an array; p_count is then its length) the messages taken back must be
-- JSON-equal to it, in order, or nothing changes (HistoryMismatchError). A message taken back
-- stays in its row, archived, with retracted_by naming the operation (the audit counts it as
-- taken back, not lost). With p_key the operation is stored once, in the lineage's append keys:
-- the same key with the same operation answers the first call again (`replayed`); with another
-- operation, or an append's key, it is refused. With p_incarnation (as session_append's), a
-- lineage erased since, even one whose id was created again, is a LineageErasedError and
-- nothing changes. Answers {sessionId, lineageId, removed (the bodies taken back), appended
-- (session_append's answer, or null), replayed}.
DROP FUNCTION IF EXISTS public.session_replace_tail(text, integer, jsonb, jsonb, text, integer[]);
CREATE OR REPLACE FUNCTION session_replace_tail(p_session_id text, p_count integer DEFAULT 1, p_expected jsonb DEFAULT NULL, p_replacement jsonb DEFAULT '[]',
                                     p_key text DEFAULT NULL, p_token_counts bigint[] DEFAULT NULL, p_incarnation text DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  n integer;
  live integer;
  hash text;
  prior public.append_keys;
  removed jsonb;
  removed_ids bigint[];
  removed_tokens bigint;
  appended jsonb;
  v_result jsonb;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  IF p_key IS NOT NULL AND (length(p_key) = 0 OR length(p_key) > 200) THEN
    PERFORM public.sc_invalid('appendKey', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_count IS NOT NULL AND p_count < 0 THEN
    PERFORM public.sc_invalid('count', 'must be 0 or more');
  END IF;
  IF p_expected IS NOT NULL AND jsonb_typeof(p_expected) <> 'array' THEN
    PERFORM public.sc_invalid('expected', 'must be an array of messages');
  END IF;
  IF p_expected IS NOT NULL AND p_count IS NOT NULL AND p_count <> jsonb_array_length(p_expected) THEN
    PERFORM public.sc_invalid('count', 'must be the number of expected messages');
  END IF;
  IF p_replacement IS NULL OR jsonb_typeof(p_replacement) <> 'array' THEN
    PERFORM public.sc_invalid('replacement', 'must be an array of messages');
  END IF;
  SELECT l.* INTO g FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND AND p_incarnation IS NULL THEN
    PERFORM public.sc_not_found(p_session_id);
  END IF;
  IF NOT FOUND OR g.incarnation <> p_incarnation THEN
    PERFORM public.sc_erased(p_session_id);
  END IF;
  IF jsonb_array_length(p_replacement) > 0 THEN
    PERFORM public.sc_check_batch(g.dialect, p_replacement);
  END IF;
  IF p_token_counts IS NOT NULL AND cardinality(p_token_counts) <> jsonb_array_length(p_replacement) THEN
    PERFORM public.sc_invalid('tokenCounts', format('must hold one non-negative count per message (%s)', jsonb_array_length(p_replacement)));
  END IF;
  IF p_key IS NOT NULL THEN
    hash := md5(jsonb_build_object('replaceTail', jsonb_build_object('count', p_count, 'expected', p_expected, 'replacement', p_replacement))::text);
    SELECT * INTO prior FROM public.append_keys WHERE lineage_id = g.id AND append_key = p_key;
    IF FOUND THEN
      IF prior.batch_hash <> hash THEN
        PERFORM public.sc_invalid('appendKey', 'was already used for a different batch in this lineage');
      END IF;
      RETURN prior.result || '{"replayed": true}';
    END IF;
  END IF;
  IF g.closed_at IS NOT NULL THEN
    PERFORM public.sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  SELECT count(*) INTO live FROM public.messages WHERE session_id = g.head_session_id AND archived_at IS NULL;
  n := least(coalesce(jsonb_array_length(p_expected), p_count, live), live);
  IF p_expected IS NOT NULL AND jsonb_array_length(p_expected) > live THEN
    PERFORM public.sc_raise('HistoryMismatchError', format('the head of %s holds %s messages, fewer than the %s expected', to_jsonb(g.id)::text, live, jsonb_array_length(p_expected)),
      jsonb_build_object('sessionId', g.head_session_id, 'detail', format('holds %s messages, fewer than the %s expected', live, jsonb_array_length(p_expected))));
  END IF;
  SELECT coalesce(jsonb_agg(t.body ORDER BY t.seq), '[]'::jsonb), coalesce(array_agg(t.id), '{}'), coalesce(sum(t.token_estimate), 0)
    INTO removed, removed_ids, removed_tokens
    FROM (SELECT id, seq, body, token_estimate FROM public.messages WHERE session_id = g.head_session_id AND archived_at IS NULL ORDER BY seq DESC LIMIT n) t;
  IF p_expected IS NOT NULL AND removed <> p_expected THEN
    PERFORM public.sc_raise('HistoryMismatchError', format('the last %s messages of the head of %s are not the ones expected', n, to_jsonb(g.id)::text),
      jsonb_build_object('sessionId', g.head_session_id, 'detail', format('the last %s messages are not the ones expected', n)));
  END IF;
  IF n > 0 THEN
    UPDATE public.messages SET archived_at = clock_timestamp(), retracted_by = coalesce(p_key, 'unkeyed') WHERE id = ANY (removed_ids);
    UPDATE public.lineages SET head_tokens = greatest(0, head_tokens - removed_tokens) WHERE id = g.id;
  END IF;
  IF jsonb_array_length(p_replacement) > 0 THEN
    appended := public.session_append(p_session_id, p_replacement, NULL, p_token_counts, p_incarnation => p_incarnation);
  END IF;
  v_result := jsonb_build_object('sessionId', g.head_session_id, 'lineageId', g.id, 'removed', removed, 'appended', coalesce(appended - 'replayed', 'null'::jsonb));
  IF p_key IS NOT NULL THEN
    INSERT INTO public.append_keys (lineage_id, append_key, batch_hash, result) VALUES (g.id, p_key, hash, v_result);
  END IF;
  RETURN v_result || '{"replayed": false}';
END
$$;
