-- Gives the roles of src/db/migrations/0025_roles.sql their privileges on the schema as it is
-- now (docs/security.md, "Roles"). runMigrations calls it after applying the function files,
-- every time, in their transaction: a function a file creates anew starts owned by whoever
-- applied it and executable by PUBLIC, so each apply hands it to sc_owner and revokes that.
-- - sc_owner (no login) owns every table, sequence and function, so the data-plane functions,
--   SECURITY DEFINER with a pinned search_path, run as a role no one logs in as;
-- - sc_app: EXECUTE on the data-plane functions only, no privilege on any table;
-- - sc_reader: the read functions and SELECT on every table (the inspector, operators);
-- - sc_worker: EXECUTE on what the worker's jobs and retention call (the data-plane functions,
--   which its agent activities use, and worker_functions below, each SECURITY DEFINER), SELECT on
--   schema_level (the migration level it checks at start), no other privilege on any table;
-- - sc_migrator: a member of sc_owner (the migration granted it), so it can change what sc_owner owns.
-- Without the roles (a cluster where the migrating user could not create them), or run by a user
-- that cannot act as sc_owner, it changes nothing and answers why; else 'applied'.
CREATE OR REPLACE FUNCTION sc_apply_grants() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  app_functions text[] := ARRAY['session_create', 'session_append', 'session_replace_tail', 'session_transcript', 'session_lineage',
    'session_lineage_state', 'session_messages', 'session_appended_under', 'session_close', 'session_erase', 'session_recorded_answer',
    'session_ledger', 'session_release_auto_compaction', 'session_compaction_events',
    'session_list_lineages', 'session_history', 'session_compaction_detail', 'session_audit'];
  worker_functions text[] := ARRAY['sc_compaction_begin', 'sc_compaction_commit', 'sc_compaction_lock', 'sc_job_record_joined', 'sc_job_abort',
    'sc_job_finish', 'sc_settle_auto_compaction', 'retention_prune'];
  read_functions text[] := ARRAY['session_transcript', 'session_lineage', 'session_lineage_state', 'session_messages', 'session_appended_under',
    'session_recorded_answer', 'session_ledger', 'session_compaction_events',
    'session_list_lineages', 'session_history', 'session_compaction_detail', 'session_audit'];
  r record;
BEGIN
  IF to_regrole('sc_owner') IS NULL OR to_regrole('sc_migrator') IS NULL OR to_regrole('sc_worker') IS NULL
     OR to_regrole('sc_app') IS NULL OR to_regrole('sc_reader') IS NULL THEN
    RETURN 'skipped: the roles do not exist (0025_roles could not create them)';
  END IF;
  IF NOT pg_has_role(current_user, 'sc_owner', 'MEMBER') THEN
    RETURN format('skipped: %s cannot act as sc_owner', current_user);
  END IF;
  -- Ownership: tables first (their sequences and row types follow), then what is left.
  FOR r IN SELECT c.oid::regclass AS object, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relowner <> 'sc_owner'::regrole LOOP
    EXECUTE format('ALTER %s %s OWNER TO sc_owner',
      CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.object);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS object FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind = 'S' AND c.relowner <> 'sc_owner'::regrole LOOP
    EXECUTE format('ALTER SEQUENCE %s OWNER TO sc_owner', r.object);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS object FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.proowner <> 'sc_owner'::regrole LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO sc_owner', r.object);
  END LOOP;

  -- No one calls a function, or touches a table, unless granted here.
  REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC, sc_app, sc_reader, sc_worker;
  REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC, sc_app, sc_reader, sc_worker;
  REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM PUBLIC, sc_app, sc_reader, sc_worker;
  -- Nobody else creates objects the schema's names could resolve to (PUBLIC had CREATE here before Postgres 15).
  REVOKE CREATE ON SCHEMA public FROM PUBLIC;
  GRANT USAGE ON SCHEMA public TO sc_app, sc_reader, sc_worker;
  GRANT USAGE, CREATE ON SCHEMA public TO sc_owner;

  FOR r IN SELECT p.oid::regprocedure AS object, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.proname = ANY (app_functions) LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO sc_app, sc_worker', r.object);
    IF r.proname = ANY (read_functions) THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO sc_reader', r.object);
    END IF;
  END LOOP;
  GRANT SELECT ON ALL TABLES IN SCHEMA public TO sc_reader;

  -- The worker's jobs and retention: functions that run as sc_owner, no table of its own.
  FOR r IN SELECT p.oid::regprocedure AS object FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'public' AND p.proname = ANY (worker_functions) LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO sc_worker', r.object);
  END LOOP;
  -- The migration level (0026) is written by the migrator only; the worker reads it at start.
  IF to_regclass('public.schema_level') IS NOT NULL THEN
    GRANT SELECT ON schema_level TO sc_worker;
  END IF;
  -- Which login is which tenant's (0027) is the administrator's: no role reads or writes it,
  -- the row policies learn the caller's tenant through sc_caller_tenant (run as sc_owner), which
  -- the reader's own SELECTs evaluate and so may call.
  IF to_regclass('public.tenant_logins') IS NOT NULL THEN
    REVOKE ALL ON tenant_logins FROM sc_reader;
    GRANT EXECUTE ON FUNCTION public.sc_caller_tenant() TO sc_reader;
  END IF;
  RETURN 'applied';
END
$$;
