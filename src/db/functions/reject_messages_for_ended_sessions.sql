-- No message may be written into a session that has ended (a rotated parent): writes go to
-- the lineage head. This holds for every writer, including ones that bypass the service
-- (the trigger messages_live_sessions_only, src/db/migrations/0001_live_sessions_only.sql).
-- A check without a lock would hold only between statements: under READ COMMITTED a writer
-- could pass it while a compaction was committing, and land its message in the parent after
-- the commit had read the rows to carry. So the trigger locks the session row it reads (FOR
-- SHARE, held to the writer's commit), and a commit locks it FOR UPDATE before reading what
-- to carry: a racing writer either commits first (and is carried) or waits and then sees the
-- session ended (and is refused).
CREATE OR REPLACE FUNCTION reject_messages_for_ended_sessions() RETURNS trigger AS $$
DECLARE
  ended timestamptz;
BEGIN
  SELECT ended_at INTO ended FROM public.sessions WHERE id = NEW.session_id FOR SHARE;
  IF ended IS NOT NULL THEN
    RAISE EXCEPTION 'session % has ended; messages belong in its lineage head', NEW.session_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
