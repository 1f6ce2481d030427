-- Tenants (issue 40 §2; docs/security.md, "Tenants"), off until an administrator maps a login.
-- `tenant_logins` maps a login role to its tenant. The tenant is the login's, never a setting
-- the client can change: the functions read it from session_user, which SET ROLE and SECURITY
-- DEFINER leave alone. A tenant's lineages are stored as `<tenant>:<id>`, so two tenants each
-- own `chat-42` (the data plane qualifies every id a tenant's login passes: sc_tenant_id).
-- Row-level security, forced so that it binds the owner the data-plane functions run as, is the
-- second line: a tenant's login, through any function or any grant, sees and writes only rows
-- whose name carries its prefix; a login with no tenant (the worker, the migrator, an operator's
-- reader) sees every row.
CREATE TABLE IF NOT EXISTS "tenant_logins" (
  "login" text PRIMARY KEY,
  "tenant" text NOT NULL CONSTRAINT "tenant_logins_tenant_name" CHECK ("tenant" ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
  "created_at" timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The caller's tenant, or null. SECURITY DEFINER so that no login needs to read the mapping
-- (sc_apply_grants grants SELECT on no table to anyone for it); STABLE, and the policies call it
-- in a scalar subquery, so a statement evaluates it once.
CREATE OR REPLACE FUNCTION sc_caller_tenant() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT tenant FROM public.tenant_logins WHERE login = session_user;
$$;
--> statement-breakpoint
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT * FROM (VALUES ('lineages', 'id'), ('sessions', 'lineage_id'), ('messages', 'session_id'), ('compactions', 'lineage_id'),
                                  ('append_keys', 'lineage_id'), ('pruned_messages', 'lineage_id'), ('compaction_events', 'lineage_id')) AS t(tbl, col) LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', r.tbl);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', r.tbl);
    EXECUTE format('DROP POLICY IF EXISTS tenant_rows ON %I', r.tbl);
    -- Session ids start with their lineage's id (children are `<lineage>--g<n>`), so each table's
    -- row names its tenant by prefix, without a join.
    EXECUTE format($p$CREATE POLICY tenant_rows ON %I
      USING ((SELECT sc_caller_tenant()) IS NULL OR starts_with(%I, (SELECT sc_caller_tenant()) || ':'))
      WITH CHECK ((SELECT sc_caller_tenant()) IS NULL OR starts_with(%I, (SELECT sc_caller_tenant()) || ':'))$p$, r.tbl, r.col, r.col);
  END LOOP;
END
$$;
