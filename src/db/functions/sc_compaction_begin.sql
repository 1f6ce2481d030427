-- Opens (or, on a retried attempt, reopens) a job's audit row, keeping the greatest attempt
-- seen (the fencing token), and reads in the same statement the lineage, its head's ledger and
-- the live rows of the parent session. An unknown lineage answers {"missing": true}; with
-- p.incarnation (the job's attempt learnt it from an earlier attempt), a lineage erased and
-- created again since answers {"erased": true} and writes nothing. The lineage's incarnation
-- is in the answer: the commit carries it (sc_compaction_commit).
CREATE OR REPLACE FUNCTION sc_compaction_begin(p jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  c public.compactions;
BEGIN
  SELECT * INTO g FROM public.lineages WHERE id = p->>'lineageId';
  IF NOT FOUND THEN
    RETURN jsonb_build_object('missing', true);
  END IF;
  IF p->>'incarnation' IS NOT NULL AND p->>'incarnation' <> g.incarnation THEN
    RETURN jsonb_build_object('erased', true, 'headSessionId', g.head_session_id, 'generation', g.generation);
  END IF;
  INSERT INTO public.compactions (id, lineage_id, parent_session_id, generation, request_ids, trigger, model, outcome, attempts)
  VALUES (p->>'jobId', g.id, p->>'parentSessionId', (p->>'generation')::int + 1, p->'requestIds', p->>'trigger', p->>'model', 'running', (p->>'attempt')::int)
  ON CONFLICT (id) DO UPDATE SET attempts = greatest(compactions.attempts, excluded.attempts)
  RETURNING * INTO c;
  RETURN jsonb_build_object(
    'job', jsonb_build_object(
      'outcome', c.outcome, 'attempts', c.attempts, 'generation', c.generation, 'parentSessionId', c.parent_session_id,
      'childSessionId', c.child_session_id, 'messagesAfter', c.messages_after, 'reason', c.reason, 'gate', c.gate,
      'followUpRequestId', c.follow_up_request_id),
    'lineage', jsonb_build_object(
      'lineageId', g.id, 'headSessionId', g.head_session_id, 'generation', g.generation, 'mode', g.mode, 'dialect', g.dialect,
      'source', g.source, 'compactAtTokens', g.compact_at_tokens, 'model', g.model, 'contextWindow', g.context_window,
      'closed', g.closed_at IS NOT NULL, 'incarnation', g.incarnation, 'rungs', to_jsonb(g.rungs)),
    'ledger', g.ledger,
    'rows', coalesce((
      SELECT jsonb_agg(jsonb_build_object(
        'id', m.id, 'seq', m.seq, 'body', m.body, 'tokenEstimate', m.token_estimate, 'lineageSeq', m.lineage_seq,
        'originMessageId', m.origin_message_id) ORDER BY m.seq)
      FROM public.messages m WHERE m.session_id = p->>'parentSessionId' AND m.archived_at IS NULL), '[]'::jsonb));
END
$$;
