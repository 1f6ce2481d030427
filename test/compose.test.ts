/**
 * No Docker engine runs here, so the production compose file is checked against the code:
 * services, pinned images, ports, environment variables the code reads, search attributes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig, PROJECT_ROOT } from '../src/config';
import { SEARCH_ATTRIBUTES } from '../src/workflows/search-attributes';

const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
  services: Record<string, { image?: string; build?: unknown; environment?: Record<string, string>; ports?: string[]; command?: string[]; depends_on?: Record<string, unknown> | string[] }>;
};
/** Every environment variable src/config.ts reads. */
const configVariables = new Set([...readFileSync(path.join(PROJECT_ROOT, 'src/config.ts'), 'utf8').matchAll(/env(?:\.|, ')([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]));

describe('docker-compose.yml', () => {
  it('has Postgres, schema setup by admin-tools, the server, search attribute setup, the UI and the worker', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['postgres', 'temporal', 'temporal-schema', 'temporal-setup', 'temporal-ui', 'worker']);
    expect(compose.services['temporal-schema'].image).toMatch(/^temporalio\/admin-tools:/);
    expect(compose.services.temporal.image).toMatch(/^temporalio\/server:/);
    expect(compose.services.temporal.environment?.DB).toBe('postgres12');
    expect(JSON.stringify(compose)).not.toContain('auto-setup');
    expect(compose.services.worker.build).toBeDefined();
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
    expect(new URL(env.DATABASE_URL).hostname).toBe('postgres');
    expect(new URL(env.DATABASE_URL).pathname).toBe(`/${compose.services.postgres.environment!.POSTGRES_DB}`);
  });

  it('creates the search attributes the workflows set', () => {
    const setup = compose.services['temporal-setup'].command!.join('\n');
    for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) expect(setup).toContain(`--name ${name} --type ${type}`);
  });

  it('exposes the Temporal frontend and the UI on their usual ports', () => {
    expect(compose.services.temporal.ports).toContain('7233:7233');
    expect(compose.services['temporal-ui'].ports).toContain('8080:8080');
  });

  it('builds a worker image that runs the worker', () => {
    const dockerfile = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:20/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/CMD \["node", "--import", "tsx", "src\/worker\.ts"\]/);
  });
});
