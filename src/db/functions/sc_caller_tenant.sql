-- The caller's tenant (issue 40 §2; docs/security.md, "Tenants"), or null: the tenant_logins row
-- of session_user, the login, which SET ROLE and SECURITY DEFINER leave alone, so no setting a
-- client sends decides it. SECURITY DEFINER so that no login needs to read the mapping (no role
-- may); STABLE, and the row policies of migration 0027 call it in a scalar subquery, so a
-- statement evaluates it once. Migration 0027 created it first, for the policies to refer to.
CREATE OR REPLACE FUNCTION sc_caller_tenant() RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
  SELECT tenant FROM public.tenant_logins WHERE login = session_user;
$$;
