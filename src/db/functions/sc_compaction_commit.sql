-- Publishes a compaction in one statement (src/db/commit.ts builds `p`). Under the lineage
-- lock and the job row's lock it writes nothing and answers `stale` when the lineage is not
-- the incarnation the job began on (p.incarnation: erased and created again), the job's row is
-- gone (erased while summarising), the attempt was superseded, the job already ended, the
-- lineage closed or moved on, or a message the summary read was taken back; answers `appended` with the rows when the live rows after the watermark
-- are not exactly p.carriedIds (the rows the gates saw); and answers a committed job from its
-- audit row. With p.checkOnly (the gates refused the head) it writes nothing and answers
-- `checked` once every check passed, so a refusal is only given for the lineage's real head. Otherwise it writes the new head (a child, or the same session with its old rows
-- archived): p.head, then the carried rows copied inside Postgres, ends the parent (rotate),
-- moves the lineage, settles the automatic request and writes the audit row. A commit that
-- shrank what it summarised but leaves the head at or above the threshold with the rows
-- appended during the summary (a busy lineage), its own head under the threshold, asks for a
-- follow-up compaction at once, up to p.maxFollowUps in a row: it answers followUpRequestId,
-- which the workflow queues. A commit whose own head is that large cools down, as a refusal does.
-- p.costs (what each rung that ran was billed) and p.gain (the minimum-gain guard's figures) go
-- into the audit row as they are.
CREATE OR REPLACE FUNCTION sc_compaction_commit(p jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  c public.compactions;
  v_job text := p->>'jobId';
  v_parent text := p->>'parentSessionId';
  v_attempt integer := (p->>'attempt')::integer;
  v_watermark integer := (p->>'watermarkSeq')::integer;
  v_snapshot_rows integer := (p->>'snapshotRows')::integer;
  v_generation integer := (p->>'generation')::integer + 1;
  v_head text := v_parent;
  v_first_seq integer := 1;
  v_head_count integer := jsonb_array_length(p->'head');
  v_live integer;
  v_carried bigint[];
  v_tokens bigint;
  v_ended integer;
  v_notes text[] := '{}';
  v_reason text;
  v_still_above boolean;
  v_summarised_tokens bigint;
  v_follow_up text;
BEGIN
  SELECT * INTO g FROM public.lineages WHERE id = p->>'lineageId' FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('outcome', 'missing');
  END IF;
  IF p->>'incarnation' IS NOT NULL AND p->>'incarnation' <> g.incarnation THEN
    RETURN public.sc_compaction_stale(g.head_session_id, g.generation, 'the lineage was erased and created again while summarising');
  END IF;
  -- A statement of its own after the lineage lock, so it reads the job's latest state.
  SELECT * INTO c FROM public.compactions WHERE id = v_job FOR UPDATE;
  IF NOT FOUND THEN
    -- The job opened its row before summarising (sc_compaction_begin): only an erase removes it.
    RETURN public.sc_compaction_stale(g.head_session_id, g.generation, 'the job''s audit row is gone: the lineage was erased while summarising');
  END IF;
  IF FOUND THEN
    IF c.outcome = 'compacted' THEN
      RETURN jsonb_strip_nulls(jsonb_build_object('outcome', 'compacted', 'headSessionId', coalesce(c.child_session_id, g.head_session_id),
        'generation', c.generation, 'carried', 0, 'tokensAfter', coalesce(c.tokens_after, 0),
        'messagesAfter', coalesce(c.messages_after, 0), 'alreadyCommitted', true, 'followUpRequestId', c.follow_up_request_id));
    END IF;
    IF v_attempt IS NOT NULL AND c.attempts <> v_attempt THEN
      RETURN public.sc_compaction_stale(g.head_session_id, g.generation, format('attempt %s was superseded by attempt %s', v_attempt, c.attempts));
    END IF;
    IF c.outcome <> 'running' THEN
      -- The job was already decided (refused, stale or aborted): a late attempt may not commit it.
      RETURN public.sc_compaction_stale(g.head_session_id, g.generation, format('the compaction already ended as %s', c.outcome));
    END IF;
  END IF;
  IF g.closed_at IS NOT NULL THEN
    RETURN public.sc_compaction_stale(g.head_session_id, g.generation, 'the lineage was closed');
  END IF;
  IF g.head_session_id <> v_parent OR g.generation <> v_generation - 1 THEN
    RETURN public.sc_compaction_stale(g.head_session_id, g.generation,
      format('the lineage moved on to %s (generation %s) while summarising', g.head_session_id, g.generation));
  END IF;

  -- Lock the parent's row before reading what to carry: a writer that bypasses the lineage
  -- lock holds it FOR SHARE from its insert (the ended-session trigger) to its commit, so it
  -- either commits first and is seen below, or waits and then finds the parent ended.
  PERFORM 1 FROM public.sessions WHERE id = v_parent FOR UPDATE;
  -- A message the summary read may have been taken back since (session_replace_tail): the
  -- head this job built would bring it back, so it does not commit.
  SELECT count(*) INTO v_live FROM public.messages WHERE session_id = v_parent AND archived_at IS NULL AND seq <= v_watermark;
  IF v_live <> v_snapshot_rows THEN
    RETURN public.sc_compaction_stale(g.head_session_id, g.generation,
      format('%s message(s) the summary read were taken back while summarising', v_snapshot_rows - v_live));
  END IF;
  SELECT coalesce(array_agg(id ORDER BY seq), '{}') INTO v_carried
  FROM public.messages WHERE session_id = v_parent AND archived_at IS NULL AND seq > v_watermark;
  IF v_carried <> ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(p->'carriedIds') WITH ORDINALITY AS t(x, o) ORDER BY o) THEN
    -- The gates did not see this head: nothing is written, and the activity gates again.
    RETURN jsonb_build_object('outcome', 'appended', 'rows', coalesce((
      SELECT jsonb_agg(jsonb_build_object(
        'id', m.id, 'seq', m.seq, 'body', m.body, 'tokenEstimate', m.token_estimate, 'lineageSeq', m.lineage_seq,
        'originMessageId', m.origin_message_id) ORDER BY m.seq)
      FROM public.messages m WHERE m.id = ANY (v_carried)), '[]'::jsonb));
  END IF;
  -- A head the gates refused is only refused if it is the real one: every check above passed.
  IF coalesce((p->>'checkOnly')::boolean, false) THEN
    RETURN jsonb_build_object('outcome', 'checked');
  END IF;

  IF p->>'mode' = 'rotate' THEN
    v_head := p->>'childSessionId';
    INSERT INTO public.sessions (id, lineage_id, parent_session_id, generation, source) VALUES (v_head, g.id, v_parent, v_generation, g.source);
  ELSE
    SELECT coalesce(max(seq), 0) + 1 INTO v_first_seq FROM public.messages WHERE session_id = v_head;
    UPDATE public.messages SET archived_at = now(), archived_by_compaction = v_job WHERE session_id = v_head AND archived_at IS NULL;
    UPDATE public.sessions SET generation = v_generation WHERE id = v_head;
  END IF;
  -- A kept message (copyOf) takes its body from the row it copies: the body never passes
  -- through JavaScript, whose numbers would round a 64-bit id another client stored.
  INSERT INTO public.messages (session_id, seq, role, body, token_estimate, lineage_seq, origin_message_id, written_by_compaction)
  SELECT v_head, v_first_seq + h.ord::integer - 1, h.e->>'role',
         CASE WHEN h.e ? 'copyOf' THEN (SELECT m.body FROM public.messages m WHERE m.id = (h.e->>'copyOf')::bigint) ELSE h.e->'body' END,
         (h.e->>'tokens')::integer, (h.e->>'lineageSeq')::integer, (h.e->>'originMessageId')::bigint, v_job
  FROM jsonb_array_elements(p->'head') WITH ORDINALITY AS h(e, ord);
  INSERT INTO public.messages (session_id, seq, role, body, token_estimate, lineage_seq, origin_message_id, written_by_compaction)
  SELECT v_head, v_first_seq + v_head_count + k.ord::integer - 1, m.role, m.body, m.token_estimate, m.lineage_seq,
         coalesce(m.origin_message_id, m.id), v_job
  FROM unnest(v_carried) WITH ORDINALITY AS k(id, ord) JOIN public.messages m ON m.id = k.id;
  IF p->>'mode' = 'rotate' THEN
    UPDATE public.sessions SET ended_at = clock_timestamp(), end_reason = 'compression' WHERE id = v_parent AND ended_at IS NULL;
    GET DIAGNOSTICS v_ended = ROW_COUNT;
    IF v_ended <> 1 THEN
      RAISE EXCEPTION 'parent % was not live at commit; rolling back', v_parent;
    END IF;
  END IF;

  SELECT coalesce(sum((e->>'tokens')::bigint), 0) INTO v_summarised_tokens FROM jsonb_array_elements(p->'head') e;
  v_tokens := v_summarised_tokens + coalesce((SELECT sum(token_estimate) FROM public.messages WHERE id = ANY (v_carried)), 0);
  UPDATE public.lineages SET head_session_id = v_head, generation = v_generation, head_tokens = v_tokens, ledger = nullif(p->'ledger', 'null'::jsonb)
  WHERE id = g.id;

  IF nullif(p->>'note', '') IS NOT NULL THEN
    v_notes := v_notes || (p->>'note');
  END IF;
  IF cardinality(v_carried) > 0 THEN
    v_notes := v_notes || format('carried %s message(s) appended during the summary', cardinality(v_carried));
  END IF;
  IF (p->>'commitRetries')::integer > 0 THEN
    v_notes := v_notes || format('committed after %s re-gate(s) of rows appended at commit', p->>'commitRetries');
  END IF;
  v_still_above := g.compact_at_tokens IS NOT NULL AND v_tokens >= g.compact_at_tokens;
  IF NOT v_still_above THEN
    PERFORM public.sc_settle_auto_compaction(g.id, p->'requestIds', 'succeeded', '{}');
  ELSIF cardinality(v_carried) = 0 OR v_summarised_tokens >= g.compact_at_tokens OR v_summarised_tokens >= (p->>'tokensBefore')::bigint THEN
    -- The job's own head (its summary and the messages it kept) is at or above the threshold by
    -- itself, or summarising saved nothing: another job now would do no better. The cooldown
    -- ladder applies, whatever was appended meanwhile.
    v_notes := v_notes || format('the compacted head still holds %s tokens, at or above the threshold of %s', v_tokens, g.compact_at_tokens);
    PERFORM public.sc_settle_auto_compaction(g.id, p->'requestIds', 'failed',
      ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(p->'cooldownsMs') WITH ORDINALITY AS t(x, o) ORDER BY o));
  ELSE
    -- It shrank what it summarised, and the rows appended meanwhile keep the head above the
    -- threshold (a busy lineage): no cooldown. Follow up at once, up to p.maxFollowUps in a
    -- row; past that the next append asks.
    IF g.auto_follow_ups < coalesce((p->>'maxFollowUps')::integer, 0) THEN
      v_follow_up := format('follow-up:%s', v_job);
    END IF;
    v_notes := v_notes || format('the compacted head still holds %s tokens with the rows appended meanwhile, at or above the threshold of %s; %s',
      v_tokens, g.compact_at_tokens,
      CASE WHEN v_follow_up IS NULL THEN format('%s follow-up(s) in a row already: the next append asks again', g.auto_follow_ups)
           ELSE 'compacting again at once' END);
    UPDATE public.lineages SET auto_request_id = NULL, auto_failures = 0, auto_cooldown_until = NULL,
      auto_follow_ups = auto_follow_ups + CASE WHEN v_follow_up IS NULL THEN 0 ELSE 1 END
    WHERE id = g.id;
  END IF;
  v_reason := nullif(array_to_string(v_notes, '; '), '');

  INSERT INTO public.compactions AS x (
    id, lineage_id, parent_session_id, request_ids, trigger, outcome, child_session_id, generation, tokens_before, tokens_after,
    messages_before, messages_after, summariser_prompt_tokens, summariser_completion_tokens, summariser_cached_prompt_tokens,
    watermark_seq, summarised_from_seq, summarised_to_seq, gate_results, reason, rung, passed_rungs, costs, gain, ledger, commit_retries, follow_up_request_id, finished_at)
  VALUES (
    v_job, g.id, v_parent, p->'requestIds', p->>'trigger', 'compacted', v_head, v_generation, (p->>'tokensBefore')::bigint, v_tokens,
    (p->>'messagesBefore')::integer, v_head_count + cardinality(v_carried), (p->>'promptTokens')::integer,
    (p->>'completionTokens')::integer, (p->>'cachedPromptTokens')::integer, v_watermark, (p->>'summarisedFromSeq')::integer,
    (p->>'summarisedToSeq')::integer, nullif(p->'gateResults', 'null'::jsonb), v_reason, coalesce(p->>'rung', 'summary'),
    nullif(p->'passedRungs', 'null'::jsonb), nullif(p->'costs', 'null'::jsonb), nullif(p->'gain', 'null'::jsonb),
    nullif(p->'ledger', 'null'::jsonb), (p->>'commitRetries')::integer, v_follow_up, now())
  ON CONFLICT (id) DO UPDATE SET
    outcome = excluded.outcome, child_session_id = excluded.child_session_id, generation = excluded.generation,
    tokens_before = excluded.tokens_before, tokens_after = excluded.tokens_after, messages_before = excluded.messages_before,
    messages_after = excluded.messages_after, summariser_prompt_tokens = excluded.summariser_prompt_tokens,
    summariser_completion_tokens = excluded.summariser_completion_tokens,
    summariser_cached_prompt_tokens = excluded.summariser_cached_prompt_tokens, watermark_seq = excluded.watermark_seq,
    summarised_from_seq = excluded.summarised_from_seq, summarised_to_seq = excluded.summarised_to_seq,
    gate_results = excluded.gate_results, reason = excluded.reason, rung = excluded.rung,
    passed_rungs = excluded.passed_rungs, costs = excluded.costs, gain = excluded.gain, ledger = excluded.ledger,
    commit_retries = excluded.commit_retries, follow_up_request_id = excluded.follow_up_request_id, finished_at = excluded.finished_at;

  -- No reason is no key (not null): the answer's optional fields are absent when empty.
  RETURN jsonb_strip_nulls(jsonb_build_object('outcome', 'compacted', 'headSessionId', v_head, 'generation', v_generation,
    'carried', cardinality(v_carried), 'tokensAfter', v_tokens, 'messagesAfter', v_head_count + cardinality(v_carried),
    'alreadyCommitted', false, 'reason', v_reason, 'followUpRequestId', v_follow_up));
END
$$;
