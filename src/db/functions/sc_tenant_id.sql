-- The stored name of an id a caller passes to the data plane (issue 40 §2; docs/security.md,
-- "Tenants"). For a login with a tenant (tenant_logins, migration 0027): `<tenant>:<id>`, so
-- two tenants each own `chat-42` and no id a tenant can pass names another tenant's lineage; an
-- id that already carries the caller's own prefix (a name the data plane answered with) is kept
-- as it is. For a login with no tenant: the id itself. Once tenants are on (any login mapped), an
-- application's login (in sc_app, not a worker or migrator, not a superuser) with no tenant is
-- refused, so a login someone forgot to map does not see every tenant's lineages.
CREATE OR REPLACE FUNCTION sc_tenant_id(p_id text) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_tenant text := public.sc_caller_tenant();
BEGIN
  IF v_tenant IS NOT NULL THEN
    RETURN CASE WHEN p_id IS NULL OR starts_with(p_id, v_tenant || ':') THEN p_id ELSE v_tenant || ':' || p_id END;
  END IF;
  IF EXISTS (SELECT 1 FROM public.tenant_logins) AND to_regrole('sc_app') IS NOT NULL
     AND pg_has_role(session_user, 'sc_app', 'MEMBER')
     AND NOT pg_has_role(session_user, 'sc_worker', 'MEMBER') AND NOT pg_has_role(session_user, 'sc_migrator', 'MEMBER') THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
      MESSAGE = format('login %s has no tenant, and tenants are on: map it in tenant_logins (docs/security.md, "Tenants")', session_user);
  END IF;
  RETURN p_id;
END
$$;
