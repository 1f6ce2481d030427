-- One bounded batch of retention, in one transaction. p_policy: {endedSessionDays,
-- archivedDays, auditDays, appendKeyDays}, each a number of days (fractions allowed) or null
-- (keep for ever). Deletes at most p_batch rows of each kind:
-- - the messages of sessions that ended more than endedSessionDays ago (the parents a
--   rotation left behind: the head holds the kept messages' copies and the summary);
-- - archived rows (replaced by an in-place compaction, or taken back) older than archivedDays;
-- - audit rows older than auditDays that no remaining message needs: the audit of a
--   message reads the compaction that summarised it, so a committed compaction's row goes
--   only once its parent's rows are gone;
-- - append keys older than appendKeyDays (a resend after that is stored again).
-- Messages deleted whose lineage holds no other copy are recorded in pruned_messages as
-- ranges. One batch at a time per database: a batch first takes a transaction-scoped advisory
-- lock (key 727002) and a second batch waits for the first to commit (at most 60 s, then it
-- fails and its caller retries). Two batches at once would each see the other's not yet
-- deleted copy of a message, and neither would record it as pruned: the audit would count a
-- gap. No lineage lock is taken (pruned_messages has no foreign key, migration 0018): appends
-- go on while a batch's caller writes its export before the commit.
-- Answers {messages, compactions, appendKeys, prunedRanges, more} (`more`: a kind filled its
-- batch, run again); with p_export, also `exported`: the messages deleted, as
-- [{lineageId, sessionId, seq, lineageSeq, createdAt, message}], for the caller to write
-- out before it commits.
CREATE OR REPLACE FUNCTION retention_prune(p_policy jsonb, p_batch integer DEFAULT 1000, p_export boolean DEFAULT false) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  ended_cutoff timestamptz := CASE WHEN jsonb_typeof(p_policy->'endedSessionDays') = 'number'
    THEN now() - make_interval(secs => (p_policy->>'endedSessionDays')::float8 * 86400) END;
  archived_cutoff timestamptz := CASE WHEN jsonb_typeof(p_policy->'archivedDays') = 'number'
    THEN now() - make_interval(secs => (p_policy->>'archivedDays')::float8 * 86400) END;
  audit_cutoff timestamptz := CASE WHEN jsonb_typeof(p_policy->'auditDays') = 'number'
    THEN now() - make_interval(secs => (p_policy->>'auditDays')::float8 * 86400) END;
  key_cutoff timestamptz := CASE WHEN jsonb_typeof(p_policy->'appendKeyDays') = 'number'
    THEN now() - make_interval(secs => (p_policy->>'appendKeyDays')::float8 * 86400) END;
  n_messages integer := 0;
  n_compactions integer := 0;
  n_keys integer := 0;
  n_ranges integer := 0;
  exported jsonb;
  prior_lock_timeout text := current_setting('lock_timeout');
BEGIN
  IF p_policy IS NULL OR jsonb_typeof(p_policy) <> 'object' THEN
    PERFORM public.sc_invalid('policy', 'must be an object of {endedSessionDays, archivedDays, auditDays, appendKeyDays}');
  END IF;
  IF p_batch IS NULL OR p_batch < 1 THEN
    PERFORM public.sc_invalid('batch', 'must be a positive whole number');
  END IF;
  PERFORM set_config('lock_timeout', '60s', true);
  BEGIN
    PERFORM pg_advisory_xact_lock(727002);
  EXCEPTION WHEN lock_not_available THEN
    RAISE EXCEPTION 'another retention batch has held the retention lock for 60 s; this batch pruned nothing (retry once it commits)'
      USING ERRCODE = 'lock_not_available';
  END;
  PERFORM set_config('lock_timeout', prior_lock_timeout, true);
  CREATE TEMP TABLE IF NOT EXISTS pg_temp.sc_doomed (id bigint PRIMARY KEY, lineage_id text, lineage_seq integer) ON COMMIT DROP;
  TRUNCATE pg_temp.sc_doomed;
  INSERT INTO pg_temp.sc_doomed
    SELECT m.id, s.lineage_id, m.lineage_seq FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
    WHERE (ended_cutoff IS NOT NULL AND s.ended_at < ended_cutoff)
       OR (archived_cutoff IS NOT NULL AND m.archived_at < archived_cutoff)
    ORDER BY m.id LIMIT p_batch
    FOR UPDATE OF m SKIP LOCKED;
  GET DIAGNOSTICS n_messages = ROW_COUNT;
  -- Appended messages whose last copy goes: pruned, in ranges of consecutive numbers.
  WITH gone AS (
    SELECT DISTINCT d.lineage_id, d.lineage_seq FROM pg_temp.sc_doomed d
    WHERE d.lineage_seq IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM public.messages m JOIN public.sessions s ON s.id = m.session_id
                      WHERE s.lineage_id = d.lineage_id AND m.lineage_seq = d.lineage_seq AND NOT EXISTS (SELECT 1 FROM pg_temp.sc_doomed x WHERE x.id = m.id))
  ), islands AS (
    SELECT lineage_id, lineage_seq, lineage_seq - row_number() OVER (PARTITION BY lineage_id ORDER BY lineage_seq) AS island FROM gone
  ), ranges AS (
    INSERT INTO public.pruned_messages (lineage_id, from_seq, to_seq, rows)
    SELECT lineage_id, min(lineage_seq), max(lineage_seq), count(*) FROM islands GROUP BY lineage_id, island
    RETURNING 1
  )
  SELECT count(*) INTO n_ranges FROM ranges;
  IF p_export THEN
    SELECT coalesce(jsonb_agg(jsonb_build_object('lineageId', d.lineage_id, 'sessionId', m.session_id, 'seq', m.seq, 'lineageSeq', m.lineage_seq,
             'createdAt', to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'message', m.body) ORDER BY m.id), '[]'::jsonb)
      INTO exported FROM pg_temp.sc_doomed d JOIN public.messages m ON m.id = d.id;
  END IF;
  DELETE FROM public.messages WHERE id IN (SELECT id FROM pg_temp.sc_doomed);
  IF audit_cutoff IS NOT NULL THEN
    WITH doomed AS (
      SELECT c.id FROM public.compactions c
      WHERE c.started_at < audit_cutoff AND c.outcome <> 'running'
        AND (c.outcome <> 'compacted'
             OR NOT EXISTS (SELECT 1 FROM public.messages m WHERE m.session_id = c.parent_session_id AND (c.child_session_id <> c.parent_session_id OR m.archived_by_compaction = c.id)))
      ORDER BY c.started_at LIMIT p_batch
      FOR UPDATE OF c SKIP LOCKED
    )
    DELETE FROM public.compactions WHERE id IN (SELECT id FROM doomed);
    GET DIAGNOSTICS n_compactions = ROW_COUNT;
  END IF;
  IF key_cutoff IS NOT NULL THEN
    WITH doomed AS (SELECT lineage_id, append_key FROM public.append_keys WHERE created_at < key_cutoff LIMIT p_batch FOR UPDATE SKIP LOCKED)
    DELETE FROM public.append_keys k USING doomed d WHERE k.lineage_id = d.lineage_id AND k.append_key = d.append_key;
    GET DIAGNOSTICS n_keys = ROW_COUNT;
  END IF;
  RETURN jsonb_build_object('messages', n_messages, 'compactions', n_compactions, 'appendKeys', n_keys, 'prunedRanges', n_ranges,
    'more', n_messages = p_batch OR n_compactions = p_batch OR n_keys = p_batch)
    || CASE WHEN p_export THEN jsonb_build_object('exported', exported) ELSE '{}'::jsonb END;
END
$$;
