/**
 * Login roles mapped to tenants (issue 40 §2; migration 0027's tenant_logins), for the tenant
 * tests: roles are the cluster's, so each gets a unique name and is dropped afterwards; the
 * mapping is the test database's own.
 */
import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';

export interface TenantLogin {
  login: string;
  /** DATABASE_URL of the same database under this login. */
  url: string;
  /** A small pool of its own, for statements the test sends as this login. */
  pool: Pool;
}

/** Creates a login in `group`, maps it to `tenant` in the database `admin` is connected to. */
export async function createTenantLogin(admin: Pool, databaseUrl: string, group: 'sc_app' | 'sc_reader' | 'sc_worker', tenant: string): Promise<TenantLogin> {
  const login = `sc_test_tenant_${tenant.replaceAll('-', '_')}_${randomUUID().slice(0, 8)}`;
  const password = randomUUID();
  await admin.query(`CREATE ROLE ${login} LOGIN PASSWORD '${password}' IN ROLE ${group}`);
  await admin.query('INSERT INTO tenant_logins (login, tenant) VALUES ($1, $2)', [login, tenant]);
  const url = new URL(databaseUrl);
  url.username = login;
  url.password = password;
  return { login, url: url.toString(), pool: new Pool({ connectionString: url.toString(), max: 2 }) };
}

/** Ends its pool and drops the login (and what it owns: a test may have granted it something). */
export async function dropTenantLogin(admin: Pool, tenant: TenantLogin): Promise<void> {
  await tenant.pool.end();
  await admin.query(`DROP OWNED BY ${tenant.login}`);
  await admin.query(`DROP ROLE IF EXISTS ${tenant.login}`);
}
