/**
 * The inspector in tenant mode (issue 40 §3 and §5; docs/security.md, "Tenants"), in process on
 * the real stack: two tenants, each with an application login that writes its lineages and a
 * reader login the inspector reads that tenant's pages through. A tenant's token lists, opens
 * and searches its own lineages only, and another tenant's lineage is a 404 whether named by its
 * stored name or its bare id; the operator's token sees both; no token, a wrong one, or a
 * foreign Host gets nothing. Tokens that are short or shared are refused at start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { openDatabase, type DatabaseHandle } from '../../src/db/database';
import { InvalidInputError } from '../../src/errors';
import { checkTenantLogins, createInspectorApp, startInspector } from '../../src/inspector/server';
import { agentTurn } from '../support/agent-turn';
import { uniqueId, useTestStack } from '../support/stack';
import { createTenantLogin, dropTenantLogin, type TenantLogin } from '../support/tenant-logins';

const stack = useTestStack({ noWorker: true });
const operatorToken = 'operator-token-0123456789';
const tokens = { acme: 'acme-token-0123456789ab', beta: 'beta-token-0123456789ab' } as const;
type TenantName = keyof typeof tokens;

const logins: TenantLogin[] = [];
const handles: DatabaseHandle[] = [];
const clients: SessionsClient[] = [];
const readers = {} as Record<TenantName, SessionsClient>;
const lineage = uniqueId('invoices');

async function connectAs(login: TenantLogin): Promise<SessionsClient> {
  const database = openDatabase(login.url);
  handles.push(database);
  const client = await SessionsClient.connect({ config: stack().config, database });
  clients.push(client);
  return client;
}

beforeAll(async () => {
  for (const tenant of Object.keys(tokens) as TenantName[]) {
    const app = await createTenantLogin(stack().db.pool, stack().env.DATABASE_URL, 'sc_app', tenant);
    const reader = await createTenantLogin(stack().db.pool, stack().env.DATABASE_URL, 'sc_reader', tenant);
    logins.push(app, reader);
    const writer = await connectAs(app);
    await writer.createSession({ sessionId: lineage, source: `${tenant}-billing` });
    await writer.append(lineage, [{ role: 'user', content: `[${tenant}] reconcile the March invoices` }, ...agentTurn(1)]);
    readers[tenant] = await connectAs(reader);
  }
});

afterAll(async () => {
  for (const client of clients) await client.close();
  for (const handle of handles) await handle.close();
  for (const login of logins) await dropTenantLogin(stack().db.pool, login);
});

const app = () =>
  createInspectorApp({
    client: stack().reader,
    temporalUiUrl: 'http://127.0.0.1:8233',
    authToken: operatorToken,
    tenants: (Object.keys(tokens) as TenantName[]).map((name) => ({ name, token: tokens[name], client: readers[name] })),
  });

async function get(path: string, token?: string, host = '127.0.0.1:8234'): Promise<{ status: number; body: string }> {
  const response = await app().request(path, { headers: { host, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  return { status: response.status, body: await response.text() };
}

describe('the inspector in tenant mode', () => {
  it("shows each tenant its own lineages only: the list, a search, the lineage's page", async () => {
    for (const [tenant, other] of [
      ['acme', 'beta'],
      ['beta', 'acme'],
    ] as const) {
      const list = await get('/', tokens[tenant]);
      expect(list.status).toBe(200);
      expect(list.body).toContain(`${tenant}:${lineage}`);
      expect(list.body).not.toContain(`${other}:`);
      expect(list.body).not.toContain(`${other}-billing`);
      expect(list.body).not.toContain(`[${other}]`);
      const search = await get(`/?q=${encodeURIComponent(lineage)}`, tokens[tenant]);
      expect(search.body).toContain(`${tenant}:${lineage}`);
      expect(search.body).not.toContain(`${other}:${lineage}`);
      const own = await get(`/lineages/${encodeURIComponent(`${tenant}:${lineage}`)}`, tokens[tenant]);
      expect(own.status).toBe(200);
      expect(own.body).toContain(`source ${tenant}-billing`);
      const foreign = await get(`/lineages/${encodeURIComponent(`${other}:${lineage}`)}`, tokens[tenant]);
      expect({ status: foreign.status, leaked: foreign.body.includes(`${other}-billing`) }).toEqual({ status: 404, leaked: false });
    }
  });

  it("shows the operator's token every tenant's lineages", async () => {
    const list = await get(`/?q=${encodeURIComponent(lineage)}`, operatorToken);
    expect(list.status).toBe(200);
    expect(list.body).toContain(`acme:${lineage}`);
    expect(list.body).toContain(`beta:${lineage}`);
  });

  it('answers no token, a wrong token and a foreign Host with nothing', async () => {
    expect((await get('/')).status).toBe(401);
    expect((await get('/', 'acme-token-0123456789ac')).status).toBe(401);
    expect((await get(`/lineages/${encodeURIComponent(`acme:${lineage}`)}`)).status).toBe(401);
    const rebound = await get('/', tokens.acme, 'attacker.example:8234');
    expect({ status: rebound.status, leaked: rebound.body.includes(lineage) }).toEqual({ status: 421, leaked: false });
  });

  it("refuses a tenant's database login that is not mapped to that tenant: mapped to none, it would read every tenant", async () => {
    const acmeReader = logins[1]; // created second: acme's reader
    await expect(checkTenantLogins([{ name: 'acme', databaseUrl: acmeReader.url }])).resolves.toBeUndefined();
    await expect(checkTenantLogins([{ name: 'beta', databaseUrl: acmeReader.url }])).rejects.toThrow(
      /INSPECTOR_TENANT_BETA_DATABASE_URL.*mapped to tenant acme/,
    );
    // The stack's own reader login is mapped to no tenant.
    await expect(checkTenantLogins([{ name: 'acme', databaseUrl: stack().readerDatabaseUrl }])).rejects.toThrow(/mapped to none/);
  });

  it("refuses to start with a tenant's token short, or the same as another's", async () => {
    const common = { client: stack().reader, temporalUiUrl: 'http://127.0.0.1:8233', bindAddress: '127.0.0.1:0', authToken: operatorToken };
    await expect(startInspector({ ...common, tenants: [{ name: 'acme', token: 'short', client: readers.acme }] })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(
      startInspector({
        ...common,
        tenants: [
          { name: 'acme', token: tokens.acme, client: readers.acme },
          { name: 'beta', token: tokens.acme, client: readers.beta },
        ],
      }),
    ).rejects.toThrow(/INSPECTOR_TENANT_BETA_TOKEN.*must differ/);
    await expect(startInspector({ ...common, tenants: [{ name: 'acme', token: operatorToken, client: readers.acme }] })).rejects.toThrow(/must differ/);
  });
});
