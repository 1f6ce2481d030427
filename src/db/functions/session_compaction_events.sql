-- A lineage's compaction events after a cursor, oldest first, at most p_limit (1 to 1000): what
-- SessionsClient.compactionEvents (TypeScript and Python) reads, polling. p_session_id is any
-- session id of the lineage (its root id is the lineage id); p_after is the cursor of the last
-- event the caller has (NULL: from the first). Answers {lineageId, events, cursor, more}:
-- `cursor` is the last event's (p_after when there is none), `more` whether more are ready now.
--
-- Each event has the shape of the Agent Client Protocol's compaction_update: `sessionUpdate`,
-- `compactionId` (the job id), `status` (in_progress, completed, failed, cancelled), `summary`
-- (the summary text the head holds, as one text block, marker removed; completed only, when the
-- compaction wrote a summary), `error` (failed only: the reason), and `_meta` with what the audit
-- row knows (lineageId, requestIds, trigger, generation, parentSessionId, startedAt, at; once
-- decided: outcome, reason, gate, rung, tokensBefore/After, messagesBefore/After, sessionId of
-- the new head, finishedAt); plus `cursor`, this event's place in the log.
--
-- No loss, no duplicate: the log (compaction_events) is ordered by (writing transaction id, id),
-- and only events of transactions older than every transaction of this database still running
-- are answered (the horizon): those are final, so nothing can later appear before a cursor
-- handed out. A transaction still running in another database of the cluster cannot write
-- here and does not hold the horizon back; one that ended since the snapshot, or whose
-- database is not known, does (it is counted as one of ours). The price: an event waits for
-- any older transaction of this database still open (appends and commits take milliseconds).
CREATE OR REPLACE FUNCTION session_compaction_events(p_session_id text, p_after text, p_limit integer)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_lineage text;
  v_dialect text;
  v_after_tx xid8 := '0'::xid8;
  v_after_id bigint := 0;
  v_snapshot pg_snapshot := pg_current_snapshot();
  v_horizon xid8;
  v_events jsonb;
  v_count integer;
BEGIN
  -- A tenant's login names its own lineages only (sc_tenant_id).
  p_session_id := public.sc_tenant_id(p_session_id);
  IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
    PERFORM public.sc_invalid('limit', 'must be a whole number from 1 to 1000');
  END IF;
  IF p_after IS NOT NULL THEN
    IF p_after !~ '^[0-9]{1,19}\.[0-9]{1,18}$' THEN
      PERFORM public.sc_invalid('after', 'must be the cursor of a compaction event');
    END IF;
    v_after_tx := split_part(p_after, '.', 1)::xid8;
    v_after_id := split_part(p_after, '.', 2)::bigint;
  END IF;
  SELECT coalesce(min(x), pg_snapshot_xmax(v_snapshot)) INTO v_horizon
    FROM pg_snapshot_xip(v_snapshot) AS x
   WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.backend_xid = xid(x) AND a.datname IS NOT NULL AND a.datname <> current_database());
  SELECT l.id, l.dialect INTO v_lineage, v_dialect FROM public.lineages l WHERE l.id = p_session_id;
  IF NOT FOUND THEN
    SELECT l.id, l.dialect INTO v_lineage, v_dialect FROM public.sessions s JOIN public.lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
    IF NOT FOUND THEN
      PERFORM public.sc_not_found(p_session_id);
    END IF;
  END IF;

  WITH page AS (
    SELECT e.* FROM public.compaction_events e
     WHERE e.lineage_id = v_lineage AND e.tx < v_horizon AND (e.tx, e.id) > (v_after_tx, v_after_id)
     ORDER BY e.tx, e.id
     LIMIT p_limit + 1
  ), numbered AS (
    SELECT page.*, row_number() OVER (ORDER BY page.tx, page.id) AS n FROM page
  )
  SELECT count(*)::integer,
         coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'sessionUpdate', 'compaction_update',
           'compactionId', c.id,
           'status', e.status,
           'summary', CASE WHEN e.status = 'completed' THEN (
               SELECT jsonb_build_array(jsonb_build_object('type', 'text', 'text',
                        btrim(regexp_replace(public.sc_marker_text(public.sc_message_text(v_dialect, m.body)),
                                             '^\[CONTEXT SUMMARY: reference only, written by session-compaction\]', ''), E' \t\r\n')))
                 FROM public.messages m
                WHERE m.session_id = c.child_session_id AND m.written_by_compaction = c.id AND m.origin_message_id IS NULL
                  AND public.sc_poses_as_summary(v_dialect, m.body)
                ORDER BY m.seq LIMIT 1) END,
           'error', CASE WHEN e.status = 'failed' THEN coalesce(nullif(e.reason, ''), nullif(c.reason, ''), format('the compaction ended %s', c.outcome)) END,
           'cursor', e.tx::text || '.' || e.id::text,
           '_meta', jsonb_build_object(
             'lineageId', e.lineage_id, 'requestIds', c.request_ids, 'trigger', c.trigger, 'generation', c.generation,
             'parentSessionId', c.parent_session_id, 'startedAt', c.started_at, 'at', e.recorded_at)
             || CASE WHEN e.status = 'in_progress' THEN '{}'::jsonb ELSE jsonb_build_object(
             'outcome', nullif(c.outcome, 'running'), 'reason', coalesce(nullif(e.reason, ''), nullif(c.reason, '')), 'gate', nullif(c.gate, ''),
             'rung', c.rung, 'tokensBefore', c.tokens_before, 'tokensAfter', c.tokens_after,
             'messagesBefore', c.messages_before, 'messagesAfter', c.messages_after,
             'sessionId', CASE WHEN e.status = 'completed' THEN c.child_session_id END, 'finishedAt', c.finished_at) END
         )) ORDER BY e.n) FILTER (WHERE e.n <= p_limit), '[]'::jsonb)
    INTO v_count, v_events
    FROM numbered e JOIN public.compactions c ON c.id = e.compaction_id;

  RETURN jsonb_build_object(
    'lineageId', v_lineage,
    'events', v_events,
    'cursor', CASE WHEN jsonb_array_length(v_events) > 0 THEN v_events->-1->>'cursor' ELSE p_after END,
    'more', v_count > p_limit);
END
$$;
