-- The trigger compactions_event_log (migration 0024): every change of a job's status, as its
-- audit row records it, appends one row to compaction_events, the log session_compaction_events
-- reads. A new row logs its status; an update logs one only when the status changes (a retried
-- attempt reopening its row logs nothing). A lineage runs one job at a time, so a job that
-- starts while an older one of its lineage is still recorded as running means that the run
-- holding the older one ended without deciding it (terminated, or the abort could not be
-- written): the older one is logged cancelled first, with that reason. Each event row carries
-- the id of the transaction that wrote it, which orders the log for readers (see
-- session_compaction_events). Runs inside the writer's transaction: no lock of its own.
CREATE OR REPLACE FUNCTION sc_log_compaction_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status text := public.sc_compaction_event_status(NEW.outcome);
BEGIN
  IF TG_OP = 'UPDATE' AND public.sc_compaction_event_status(OLD.outcome) = v_status THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO public.compaction_events (lineage_id, compaction_id, status, reason)
    SELECT c.lineage_id, c.id, 'cancelled',
           'a later job of the lineage started while this one was still recorded as running: the run that held it ended without deciding it'
      FROM public.compactions c
     WHERE c.lineage_id = NEW.lineage_id AND c.id <> NEW.id AND c.outcome = 'running'
       AND NOT EXISTS (SELECT 1 FROM public.compaction_events e WHERE e.compaction_id = c.id AND e.status <> 'in_progress')
     ORDER BY c.started_at, c.id;
  END IF;
  INSERT INTO public.compaction_events (lineage_id, compaction_id, status) VALUES (NEW.lineage_id, NEW.id, v_status);
  RETURN NULL;
END
$$;
