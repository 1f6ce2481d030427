/**
 * `sessions doctor`: checks what the service needs and says what is wrong in plain words.
 * Temporal (reachable, namespace, search attributes, a worker polling), Postgres (reachable,
 * migrations applied) and the LLM endpoint (or that the built-in summariser is in use).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import OpenAI, { APIError } from 'openai';
import { Pool } from 'pg';
import type { Config } from '../config';
import { MIGRATIONS_DIR } from '../db/database';
import { SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const TIMEOUT_MS = 5000;

function reason(error: unknown): string {
  const e = error as { message?: string; code?: string; cause?: { message?: string } };
  return e.cause?.message ?? e.message ?? String(error);
}

async function checkTemporal(config: Config): Promise<Check[]> {
  const { address, namespace, taskQueue } = config.temporal;
  let connection: Connection;
  try {
    connection = await Connection.connect({ address, connectTimeout: TIMEOUT_MS });
    await connection.ensureConnected();
  } catch (error) {
    return [{ name: 'temporal', ok: false, detail: `cannot reach Temporal at ${address} (${reason(error)}). Start it with \`npm run dev\`, or set TEMPORAL_ADDRESS.` }];
  }
  const checks: Check[] = [{ name: 'temporal', ok: true, detail: `reachable at ${address}` }];
  try {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      checks.push({ name: 'namespace', ok: true, detail: `namespace ${namespace} exists` });
    } catch (error) {
      checks.push({ name: 'namespace', ok: false, detail: `namespace ${namespace} is missing (${reason(error)}). Create it: temporal operator namespace create --namespace ${namespace}` });
      return checks;
    }
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((name) => !(name in (listed.customAttributes ?? {})));
    checks.push(
      missing.length === 0
        ? { name: 'search attributes', ok: true, detail: Object.keys(SEARCH_ATTRIBUTES).join(', ') }
        : {
            name: 'search attributes',
            ok: false,
            detail: `missing ${missing.join(', ')}: workflows cannot start without them. ${missing
              .map((n) => `temporal operator search-attribute create --namespace ${namespace} --name ${n} --type ${SEARCH_ATTRIBUTES[n]}`)
              .join('; ')}`,
          },
    );
    const queue = await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: taskQueue }, taskQueueType: 1 });
    const pollers = queue.pollers?.length ?? 0;
    checks.push(
      pollers > 0
        ? { name: 'worker', ok: true, detail: `${pollers} poller(s) on task queue ${taskQueue}` }
        : { name: 'worker', ok: false, detail: `no worker polls task queue ${taskQueue}: compactions will wait. Start one with \`npm run worker\` (or \`npm run dev\`).` },
    );
  } finally {
    await connection.close();
  }
  return checks;
}

async function checkPostgres(config: Config): Promise<Check[]> {
  const url = new URL(config.databaseUrl);
  const where = `${url.host}${url.pathname}`;
  const pool = new Pool({ connectionString: config.databaseUrl, max: 1, connectionTimeoutMillis: TIMEOUT_MS });
  pool.on('error', () => undefined);
  try {
    await pool.query('select 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    return [{ name: 'postgres', ok: false, detail: `cannot connect to Postgres at ${where} (${reason(error)}). Start it with \`npm run dev\`, or set DATABASE_URL.` }];
  }
  const checks: Check[] = [{ name: 'postgres', ok: true, detail: `connected to ${where}` }];
  try {
    const journal = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
    const applied = await pool.query('select count(*)::int as n from drizzle.__drizzle_migrations').then(
      (r) => r.rows[0].n as number,
      () => 0,
    );
    checks.push(
      applied >= journal.entries.length
        ? { name: 'migrations', ok: true, detail: `${applied} of ${journal.entries.length} applied` }
        : { name: 'migrations', ok: false, detail: `${applied} of ${journal.entries.length} applied. Run \`npm run db:migrate\` (a starting worker also applies them).` },
    );
  } finally {
    await pool.end();
  }
  return checks;
}

async function checkLlm(config: Config): Promise<Check> {
  const { llm } = config;
  if (!llm.apiKey) return { name: 'summariser', ok: true, detail: 'no OPENAI_API_KEY: the built-in deterministic extractive summariser is used' };
  const where = llm.baseURL ?? 'the OpenAI API';
  const client = new OpenAI({ apiKey: llm.apiKey, baseURL: llm.baseURL, maxRetries: 0, timeout: TIMEOUT_MS });
  try {
    // The smallest real request: one token from the configured model.
    await client.chat.completions.create({ model: llm.model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 });
    return { name: 'summariser', ok: true, detail: `model ${llm.model} answers at ${where}` };
  } catch (error) {
    if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
      return { name: 'summariser', ok: false, detail: `${where} rejected the API key (${error.status}). Check OPENAI_API_KEY.` };
    }
    if (error instanceof APIError && error.status === 404) {
      return { name: 'summariser', ok: false, detail: `${where} does not know model ${llm.model} or has no chat completions endpoint (404). Check COMPACTION_MODEL and OPENAI_BASE_URL.` };
    }
    if (error instanceof APIError && error.status !== undefined) {
      return { name: 'summariser', ok: false, detail: `${where} answered ${error.status}: ${error.message}` };
    }
    return { name: 'summariser', ok: false, detail: `cannot reach ${where} (${reason(error)}). Check OPENAI_BASE_URL.` };
  }
}

export async function runDoctor(config: Config): Promise<Check[]> {
  const [temporal, postgres, llm] = await Promise.all([checkTemporal(config), checkPostgres(config), checkLlm(config)]);
  return [...temporal, ...postgres, llm];
}
