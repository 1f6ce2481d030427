-- The answer a decided job gave a request id, for every client: a request id answered by a
-- workflow run that is gone is answered again from its audit row, never run again (the next
-- run does not know it). NULL while no decided job holds the request id. A compacted job's
-- answer names the head it committed; any other outcome changed nothing, so its answer names
-- the head Postgres holds now.
CREATE OR REPLACE FUNCTION session_recorded_answer(p_lineage_id text, p_request_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  c public.compactions;
  g public.lineages;
  figures jsonb;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_lineage_id := public.sc_tenant_id(p_lineage_id);
  SELECT * INTO c FROM public.compactions
   WHERE lineage_id = p_lineage_id AND request_ids @> jsonb_build_array(p_request_id) AND outcome <> 'running'
   ORDER BY started_at LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  figures := jsonb_strip_nulls(jsonb_build_object(
    'tokensBefore', c.tokens_before, 'tokensAfter', c.tokens_after,
    'messagesBefore', c.messages_before, 'messagesAfter', c.messages_after,
    'reason', nullif(c.reason, ''), 'gate', nullif(c.gate, '')));
  IF c.outcome = 'compacted' THEN
    RETURN jsonb_strip_nulls(jsonb_build_object(
      'requestId', p_request_id, 'outcome', 'compacted', 'sessionId', c.child_session_id,
      'previousSessionId', CASE WHEN c.child_session_id <> c.parent_session_id THEN c.parent_session_id END,
      'generation', c.generation)) || figures;
  END IF;
  SELECT * INTO g FROM public.lineages WHERE id = p_lineage_id;
  RETURN jsonb_build_object('requestId', p_request_id, 'outcome', c.outcome, 'sessionId', g.head_session_id, 'generation', g.generation) || figures;
END
$$;
