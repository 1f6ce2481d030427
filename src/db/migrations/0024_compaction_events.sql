-- The compaction event log (issue 37 §5): one row per change of a job's status, written by the
-- trigger compactions_event_log from the audit rows themselves (src/db/functions/
-- sc_log_compaction_event.sql), read only through session_compaction_events (the clients'
-- compactionEvents). `tx` is the writing transaction's id: readers order by (tx, id) and answer
-- only transactions older than every one still running, so a cursor never skips an event that
-- commits late. `reason` is set on an event the log derived (a job left running by a run that
-- ended). An event goes with its audit row (erase, retention): ON DELETE CASCADE.
CREATE TABLE IF NOT EXISTS "compaction_events" (
  "id" bigserial PRIMARY KEY,
  "lineage_id" text NOT NULL,
  "compaction_id" text NOT NULL REFERENCES "compactions"("id") ON DELETE CASCADE,
  "status" text NOT NULL,
  "reason" text,
  "tx" xid8 NOT NULL DEFAULT pg_current_xact_id(),
  "recorded_at" timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT "compaction_events_status_known" CHECK ("status" IN ('in_progress', 'completed', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "compaction_events_lineage" ON "compaction_events" ("lineage_id", "tx", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "compaction_events_compaction" ON "compaction_events" ("compaction_id");
--> statement-breakpoint
CREATE OR REPLACE FUNCTION sc_compaction_event_status(p_outcome text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_outcome
    WHEN 'running' THEN 'in_progress'
    WHEN 'compacted' THEN 'completed'
    WHEN 'refused' THEN 'failed'
    WHEN 'aborted' THEN 'failed'
    ELSE 'cancelled' END;
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION sc_log_compaction_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status text := sc_compaction_event_status(NEW.outcome);
BEGIN
  IF TG_OP = 'UPDATE' AND sc_compaction_event_status(OLD.outcome) = v_status THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    INSERT INTO compaction_events (lineage_id, compaction_id, status, reason)
    SELECT c.lineage_id, c.id, 'cancelled',
           'a later job of the lineage started while this one was still recorded as running: the run that held it ended without deciding it'
      FROM compactions c
     WHERE c.lineage_id = NEW.lineage_id AND c.id <> NEW.id AND c.outcome = 'running'
       AND NOT EXISTS (SELECT 1 FROM compaction_events e WHERE e.compaction_id = c.id AND e.status <> 'in_progress')
     ORDER BY c.started_at, c.id;
  END IF;
  INSERT INTO compaction_events (lineage_id, compaction_id, status) VALUES (NEW.lineage_id, NEW.id, v_status);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS "compactions_event_log" ON "compactions";
--> statement-breakpoint
CREATE TRIGGER "compactions_event_log" AFTER INSERT OR UPDATE OF "outcome" ON "compactions"
  FOR EACH ROW EXECUTE FUNCTION sc_log_compaction_event();
--> statement-breakpoint
-- The audit rows from before the log: each one's status now (sc_compaction_event_status's mapping,
-- written out: a migration calls no function file), in the order the jobs started.
INSERT INTO "compaction_events" ("lineage_id", "compaction_id", "status", "recorded_at")
SELECT c.lineage_id, c.id,
       CASE c.outcome WHEN 'running' THEN 'in_progress' WHEN 'compacted' THEN 'completed' WHEN 'refused' THEN 'failed' WHEN 'aborted' THEN 'failed' ELSE 'cancelled' END,
       coalesce(c.finished_at, c.started_at)
  FROM "compactions" c
 ORDER BY c.started_at, c.id;
