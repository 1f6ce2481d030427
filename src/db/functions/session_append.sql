-- Appends a batch to the head of the session's lineage, whichever session id of the lineage
-- is given, in one statement: validates the batch in the lineage's dialect, locks the
-- lineage row (which orders the append against a compaction's commit), numbers the messages
-- in the head and in the lineage, stores each message as its body, exactly as sent, filed
-- under its dialect's role, with its token count (the caller's, or
-- sc_estimate_message_tokens) and answers with the head and the ranges. Under the same lock
-- it applies the auto-compaction policy: when the head is at or above the lineage's
-- threshold, no request of the appends is pending for the current generation (one older than
-- p_resend_after_ms counts as lost) and no cooldown runs, it records a request and answers
-- its id (autoCompactionRequestId), which the caller sends as the requestCompaction signal.
-- An append that takes the head across the lineage's ceiling (sc_ceiling_tokens: the context
-- window or twice the threshold, whichever is lower) requests one even during a cooldown: the
-- head never passes the ceiling without a compaction requested. Appends while it stays above
-- wait for the cooldown as usual, so a head no compaction can shrink does not pay the
-- summariser at every append.
-- With p_append_key, a resend of the same batch answers the first append and writes nothing,
-- and each row stored carries the key, so the audit can count a batch stored twice under one
-- key. With p_incarnation (the lineage's incarnation the caller learnt at create or first
-- use), an append or resend to a lineage that was erased since, even if its id was created
-- again, is a LineageErasedError and writes nothing. Each token count is a whole number from 0
-- to 10,000,000; the head's sum is 64-bit.
DROP FUNCTION IF EXISTS public.session_append(text, jsonb, text, integer[], bigint);
CREATE OR REPLACE FUNCTION session_append(p_session_id text, p_messages jsonb, p_append_key text DEFAULT NULL, p_token_counts bigint[] DEFAULT NULL,
                               p_resend_after_ms bigint DEFAULT 300000, p_incarnation text DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  n integer;
  max_seq integer;
  added bigint;
  new_head_tokens bigint;
  hash text;
  prior public.append_keys;
  v_result jsonb;
  fire boolean;
  request_id text;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  IF p_append_key IS NOT NULL AND (length(p_append_key) = 0 OR length(p_append_key) > 200) THEN
    PERFORM public.sc_invalid('appendKey', 'must be a string of 1 to 200 characters');
  END IF;
  SELECT l.* INTO g FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND AND p_incarnation IS NULL THEN
    PERFORM public.sc_not_found(p_session_id);
  END IF;
  IF NOT FOUND OR g.incarnation <> p_incarnation THEN
    PERFORM public.sc_erased(p_session_id);
  END IF;
  PERFORM public.sc_check_batch(g.dialect, p_messages);
  n := jsonb_array_length(p_messages);
  IF p_token_counts IS NOT NULL AND (cardinality(p_token_counts) <> n OR array_position(p_token_counts, NULL) IS NOT NULL
      OR EXISTS (SELECT 1 FROM unnest(p_token_counts) t WHERE t < 0 OR t > 10000000)) THEN
    PERFORM public.sc_invalid('tokenCounts', format('must hold one count per message (%s), each a whole number from 0 to 10000000', n));
  END IF;
  IF p_append_key IS NOT NULL THEN
    hash := md5(p_messages::text);
    SELECT * INTO prior FROM public.append_keys WHERE lineage_id = g.id AND append_key = p_append_key;
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
  SELECT coalesce(max(seq), 0) INTO max_seq FROM public.messages WHERE session_id = g.head_session_id;
  WITH inserted AS (
    INSERT INTO public.messages (session_id, seq, role, body, token_estimate, lineage_seq, append_key)
    SELECT g.head_session_id, max_seq + t.ord, public.sc_stored_role(g.dialect, t.m), t.m,
           coalesce(p_token_counts[t.ord], public.sc_estimate_message_tokens(g.dialect, t.m)), g.appended_count + t.ord, p_append_key
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
    AND (g.auto_cooldown_until IS NULL OR g.auto_cooldown_until <= now()
         OR (g.head_tokens < public.sc_ceiling_tokens(g.compact_at_tokens, g.context_window)
             AND new_head_tokens >= public.sc_ceiling_tokens(g.compact_at_tokens, g.context_window)));
  UPDATE public.lineages SET
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
    INSERT INTO public.append_keys (lineage_id, append_key, batch_hash, result) VALUES (g.id, p_append_key, hash, v_result);
  END IF;
  RETURN v_result || '{"replayed": false}';
END
$$;
