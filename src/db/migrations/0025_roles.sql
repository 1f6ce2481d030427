-- Least privilege (issue 40 §1; docs/security.md, "Roles"): the five roles, created once per
-- cluster (roles are the cluster's, not a database's: every database migrated on it shares
-- them, and two databases may migrate at the same moment). All are NOLOGIN group roles; a
-- deployment creates its login roles and grants them one of these. What each may do on this
-- database's objects is granted by sc_apply_grants() (src/db/functions/sc_apply_grants.sql),
-- which runMigrations calls after applying the function files.
-- A migrating user that may not create roles gets a warning and the schema without them.
DO $$
DECLARE
  role_name text;
BEGIN
  FOREACH role_name IN ARRAY ARRAY['sc_owner', 'sc_migrator', 'sc_worker', 'sc_app', 'sc_reader'] LOOP
    IF to_regrole(role_name) IS NULL THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
      EXCEPTION
        -- Another database of the cluster created it since to_regrole looked.
        WHEN duplicate_object OR unique_violation THEN NULL;
        WHEN insufficient_privilege THEN
          RAISE WARNING 'role % not created (% may not create roles): create the roles of docs/security.md as an administrator', role_name, current_user;
          RETURN;
      END;
    END IF;
  END LOOP;
  BEGIN
    -- The migrator changes what sc_owner owns.
    IF NOT pg_has_role('sc_migrator', 'sc_owner', 'MEMBER') THEN
      GRANT sc_owner TO sc_migrator;
    END IF;
    -- session_compaction_events, run as sc_owner, must see which database a running
    -- transaction belongs to (pg_stat_activity.backend_xid of other users' sessions).
    IF NOT pg_has_role('sc_owner', 'pg_read_all_stats', 'MEMBER') THEN
      GRANT pg_read_all_stats TO sc_owner;
    END IF;
  EXCEPTION
    WHEN duplicate_object OR unique_violation THEN NULL;
    WHEN insufficient_privilege THEN
      RAISE WARNING 'role memberships of sc_owner not granted (% may not): grant them as an administrator (docs/security.md)', current_user;
  END;
END
$$;
