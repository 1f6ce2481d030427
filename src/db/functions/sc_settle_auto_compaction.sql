-- How a job ended, for the threshold policy (src/db/auto-compaction.ts documents the ladder).
-- p_how: 'succeeded' (the head is under the threshold: the ladder starts again, whoever
-- asked), 'failed' (climbs the ladder) or 'settled' (ends the pending request only); the last
-- two touch the lineage only when the job answered its pending automatic request.
CREATE OR REPLACE FUNCTION sc_settle_auto_compaction(p_lineage_id text, p_request_ids jsonb, p_how text, p_cooldowns_ms bigint[])
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF jsonb_array_length(p_request_ids) = 0 THEN
    RETURN;
  END IF;
  IF p_how = 'succeeded' THEN
    UPDATE public.lineages SET auto_request_id = NULL, auto_failures = 0, auto_cooldown_until = NULL, auto_follow_ups = 0 WHERE id = p_lineage_id;
  ELSIF p_how = 'settled' THEN
    UPDATE public.lineages SET auto_request_id = NULL WHERE id = p_lineage_id AND p_request_ids ? auto_request_id;
  ELSIF p_how = 'failed' THEN
    UPDATE public.lineages
    SET auto_request_id = NULL,
        auto_failures = auto_failures + 1,
        auto_cooldown_until = now() + make_interval(secs => coalesce(p_cooldowns_ms[least(auto_failures + 1, cardinality(p_cooldowns_ms))], 0) / 1000.0)
    WHERE id = p_lineage_id AND p_request_ids ? auto_request_id;
  ELSE
    RAISE EXCEPTION 'unknown settlement %', p_how;
  END IF;
END
$$;
