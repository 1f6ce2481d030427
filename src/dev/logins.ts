/**
 * The dev stack's logins (docs/security.md, "Roles"): `npm run dev` migrates as its embedded
 * Postgres' superuser, then runs the worker as `sc_dev_worker` (in sc_worker: no DDL, no
 * ownership) and the inspector as `sc_dev_reader` (in sc_reader: reads only), as a deployment
 * would. Roles are the cluster's, and the embedded cluster is the dev stack's own: each start
 * creates them when missing and gives them a fresh random password, which only this process
 * knows.
 */
import { randomBytes } from 'node:crypto';
import type { DatabaseHandle } from '../db/database';

const DEV_LOGINS = { worker: { user: 'sc_dev_worker', group: 'sc_worker' }, reader: { user: 'sc_dev_reader', group: 'sc_reader' } } as const;

/** Creates (or re-keys) the dev logins through `admin` (a superuser) and answers `databaseUrl` under each. */
export async function ensureDevLogins(admin: DatabaseHandle, databaseUrl: string): Promise<Record<keyof typeof DEV_LOGINS, string>> {
  const urls = {} as Record<keyof typeof DEV_LOGINS, string>;
  for (const [key, login] of Object.entries(DEV_LOGINS) as Array<[keyof typeof DEV_LOGINS, (typeof DEV_LOGINS)[keyof typeof DEV_LOGINS]]>) {
    const password = randomBytes(18).toString('base64url');
    const exists = await admin.pool.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [login.user]);
    // The names are this module's constants and the password is base64url: nothing to quote.
    if (exists.rowCount === 0) await admin.pool.query(`CREATE ROLE ${login.user} LOGIN PASSWORD '${password}' IN ROLE ${login.group}`);
    else await admin.pool.query(`ALTER ROLE ${login.user} LOGIN PASSWORD '${password}'`);
    const url = new URL(databaseUrl);
    url.username = login.user;
    url.password = password;
    urls[key] = url.toString();
  }
  return urls;
}
