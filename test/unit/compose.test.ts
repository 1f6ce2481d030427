/**
 * No Docker engine runs here, so the production compose file is checked against the code:
 * services, pinned images, ports, environment variables the code reads, search attributes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, PROJECT_ROOT } from '../../src/config';
import { SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';

const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<
    string,
    {
      image?: string;
      build?: unknown;
      environment?: Record<string, string>;
      ports?: string[];
      command?: string[];
      depends_on?: Record<string, unknown> | string[];
    }
  >;
};
/** A compose value with `${VAR:?message}` / `${VAR:-default}` replaced by a placeholder. */
const interpolated = (value: string) => value.replace(/\$\{[A-Z_]+(?::[?-][^}]*)?\}/g, 'x');
/** Every environment variable src/config.ts reads. */
const configVariables = new Set(
  [...readFileSync(path.join(PROJECT_ROOT, 'src/config.ts'), 'utf8').matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]),
);

describe('docker-compose.yml', () => {
  it('has Postgres, schema setup by admin-tools, the server, search attribute setup, the UI, the migration step and the worker', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['migrate', 'postgres', 'temporal', 'temporal-schema', 'temporal-setup', 'temporal-ui', 'worker']);
    expect(compose.services['temporal-schema'].image).toMatch(/^temporalio\/admin-tools:/);
    expect(compose.services.temporal.image).toMatch(/^temporalio\/server:/);
    expect(compose.services.temporal.environment?.DB).toBe('postgres12');
    expect(JSON.stringify(compose)).not.toContain('auto-setup');
    expect(compose.services.worker.build).toBeDefined();
    // The worker runs no DDL: the one-shot migration step runs first, the worker only after it succeeded.
    expect(compose.services.migrate.command).toEqual(['node', 'bin/session-compaction.js', 'migrate']);
    expect(compose.services.worker.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' } });
  });

  it('runs each component under its own login of deploy/postgres/roles.sql, which the first start of Postgres runs', () => {
    const loginOf = (url: string | undefined) => new URL(interpolated(url!)).username;
    expect(loginOf(compose.services.migrate.environment?.DATABASE_URL)).toBe('sessions_deploy');
    expect(loginOf(compose.services.worker.environment?.DATABASE_URL)).toBe('sessions_worker');
    expect(compose.services['temporal-schema'].environment?.SQL_USER).toBe('temporal');
    expect(compose.services.temporal.environment?.POSTGRES_USER).toBe('temporal');
    const roles = readFileSync(path.join(PROJECT_ROOT, 'deploy/postgres/roles.sql'), 'utf8');
    expect(roles).toMatch(/CREATE ROLE sessions_deploy LOGIN .* IN ROLE sc_migrator;/);
    expect(roles).toMatch(/CREATE ROLE sessions_worker LOGIN .* IN ROLE sc_worker;/);
    expect(roles).toMatch(/CREATE ROLE temporal LOGIN PASSWORD :'temporal_password' CREATEDB;/);
    const volumes = (compose.services.postgres as { volumes?: string[] }).volumes ?? [];
    expect(volumes).toContain('./deploy/postgres/10-roles.sh:/docker-entrypoint-initdb.d/10-roles.sh:ro');
    expect(readFileSync(path.join(PROJECT_ROOT, 'deploy/postgres/10-roles.sh'), 'utf8')).toContain('-f /session-compaction/roles.sql');
    expect(volumes).toContain('./deploy/postgres/roles.sql:/session-compaction/roles.sql:ro');
  });

  it('pins every image to a version', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (!service.image) continue;
      expect(service.image, name).toMatch(/:[0-9][\w.-]*$/);
    }
  });

  it('gives the worker only variables the code reads, with the code defaults where it matters', () => {
    const env = compose.services.worker.environment!;
    for (const name of Object.keys(env)) expect(configVariables, name).toContain(name);
    const defaults = loadConfig({});
    expect(env.TEMPORAL_TASK_QUEUE).toBe(defaults.temporal.taskQueue);
    expect(env.TEMPORAL_NAMESPACE).toBe(defaults.temporal.namespace);
    expect(env.TEMPORAL_ADDRESS).toBe('temporal:7233');
    const databaseUrl = new URL(interpolated(env.DATABASE_URL));
    expect(databaseUrl.hostname).toBe('postgres');
    expect(databaseUrl.pathname).toBe(`/${compose.services.postgres.environment!.POSTGRES_DB}`);
  });

  it('creates the search attributes the workflows set', () => {
    const setup = compose.services['temporal-setup'].command!.join('\n');
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(setup).toContain(`--name ${name} --type ${type}`);
  });

  it('exposes the Temporal frontend and the UI on their usual ports, on 127.0.0.1 only', () => {
    expect(compose.services.temporal.ports).toEqual(['127.0.0.1:7233:7233']);
    expect(compose.services['temporal-ui'].ports).toEqual(['127.0.0.1:8080:8080']);
    for (const [name, service] of Object.entries(compose.services)) for (const port of service.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
  });

  it('takes every credential from the environment, with no default password, and publishes no Postgres port', () => {
    const credentials: Array<[string, string]> = [];
    for (const [name, service] of Object.entries(compose.services)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        // A login's name is not a credential (the logins of roles.sql); its password is.
        if (/PASSWORD|PWD|_USER$/.test(key) && value !== 'temporal') credentials.push([`${name}.${key}`, value]);
      }
    }
    expect(credentials.length).toBeGreaterThanOrEqual(6);
    // Required (`:?`), never defaulted (`:-`), never a literal.
    for (const [where, value] of credentials) expect(value, where).toMatch(/^\$\{[A-Z_]+:\?[^}]*\}$/);
    const url = compose.services.worker.environment!.DATABASE_URL;
    expect(url).toMatch(/^postgres:\/\/sessions_worker:\$\{SESSIONS_WORKER_PASSWORD:\?[^}]*\}@/);
    expect(compose.services.postgres.ports).toBeUndefined();
    expect(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')).not.toMatch(/:-postgres\}|PASSWORD: postgres|:postgres@/);
  });

  describe('the Dockerfile', () => {
    // Its stages: the instructions from each FROM to the next, comments dropped.
    const lines = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    const stages: Array<{ from: string; name?: string; lines: string[] }> = [];
    for (const line of lines) {
      const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
      if (from) stages.push({ from: from[1], name: from[2], lines: [] });
      else stages.at(-1)?.lines.push(line);
    }
    const final = stages.at(-1)!;
    const build = stages.find((stage) => stage.lines.includes('RUN npm run build'));

    it('has a build stage that installs every dependency and runs npm run build', () => {
      expect(stages.length).toBeGreaterThanOrEqual(2);
      expect(build, 'a stage with RUN npm run build').toBeDefined();
      expect(build).not.toBe(final);
      expect(build!.name).toBeTruthy();
      expect(build!.from).toMatch(/^node:20/);
      expect(build!.lines).toContain('RUN npm ci --no-audit --no-fund --strict-allow-scripts');
    });

    it("has a final stage from a node image with production dependencies, the worker's peers and dist/ only, run by plain node as a non-root user", () => {
      expect(final.from).toMatch(/^node:20/);
      expect(final.lines.some((line) => /^RUN node scripts\/image-package\.cjs && npm install --omit=dev\b/.test(line))).toBe(true);
      expect(final.lines).toContain(`COPY --from=${build!.name} /app/dist ./dist`);
      expect(final.lines.at(-1)).toBe('CMD ["node", "dist/worker.js"]');
      const user = final.lines.filter((line) => line.startsWith('USER ')).at(-1);
      expect(user).toBeDefined();
      expect(user).not.toMatch(/^USER (root|0)(:|$)/);
      // No tsx, no TypeScript sources: nothing copies src/ or a .ts file into it.
      const text = final.lines.join('\n');
      expect(text).not.toMatch(/tsx/);
      expect(text).not.toMatch(/\.ts\b/);
      expect(final.lines.filter((line) => /^(COPY|ADD)\s/.test(line) && /\bsrc\b/.test(line))).toEqual([]);
    });
  });
});
