-- The status a compaction job's outcome shows a caller, in the Agent Client Protocol's terms
-- (compaction_update): a running job is in_progress; a committed one completed; a refused or
-- aborted one failed (it was tried and did not compact); a stale one cancelled (the service
-- dropped it without trying: the lineage closed or erased, the head moved on, a later attempt
-- took it over). The event log (compaction_events, migration 0024) records these.
CREATE OR REPLACE FUNCTION sc_compaction_event_status(p_outcome text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_outcome
    WHEN 'running' THEN 'in_progress'
    WHEN 'compacted' THEN 'completed'
    WHEN 'refused' THEN 'failed'
    WHEN 'aborted' THEN 'failed'
    ELSE 'cancelled' END;
$$;
