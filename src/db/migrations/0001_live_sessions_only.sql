-- No message may be written into a session that has ended (a rotated parent): writes go to
-- the lineage head. This holds for every writer, including ones that bypass the service.
CREATE FUNCTION reject_messages_for_ended_sessions() RETURNS trigger AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM sessions WHERE id = NEW.session_id AND ended_at IS NOT NULL) THEN
    RAISE EXCEPTION 'session % has ended; messages belong in its lineage head', NEW.session_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER messages_live_sessions_only BEFORE INSERT ON messages
  FOR EACH ROW EXECUTE FUNCTION reject_messages_for_ended_sessions();
