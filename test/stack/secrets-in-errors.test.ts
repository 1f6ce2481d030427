/**
 * No secret and no transcript in error text (issue 33, point 5), on the real stack: an LLM
 * gateway's 401 that echoes the API key, a statement the database refuses while it holds an
 * appended card number, the connection cut while a commit (summary and ledger) is on the wire,
 * and a client without the payload keys of an encrypted deployment.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { SessionsClient } from '../../src/client';
import { loadConfig, PROJECT_ROOT } from '../../src/config';
import { auditRows } from '../../src/db/session-store';
import { DatabaseQueryError, PayloadKeysMissingError } from '../../src/errors';
import { createInspectorApp } from '../../src/inspector/server';
import { lineageWorkflowId } from '../../src/workflows/contract';
import { startTestStack, type TestStack, uniqueId } from '../support/stack';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

const run = promisify(execFile);
const CARD = '4111 1111 1111 1111';

let stack: TestStack | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await proxy?.close();
  proxy = undefined;
});

/** A coding agent's session in which the user pastes a card number, with parallel tool calls and JSON tool outputs. */
function agentSession(turns: number): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [{ role: 'system', content: 'You are a billing support agent with shell and HTTP tools.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: 'user',
      content: i === 1 ? `Renew the plan for team ${i} and charge my card ${CARD} (exp 12/29).` : `Check invoice INV-${1000 + i} and tell me why it failed.`,
    });
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: `call_${i}_a`,
          type: 'function',
          function: { name: 'http_get', arguments: JSON.stringify({ url: `https://billing.internal/invoices/INV-${1000 + i}` }) },
        },
        { id: `call_${i}_b`, type: 'function', function: { name: 'shell', arguments: JSON.stringify({ cmd: `grep -c declined logs/billing-${i}.log` }) } },
      ],
    });
    messages.push({
      role: 'tool',
      tool_call_id: `call_${i}_a`,
      content: JSON.stringify({
        id: `INV-${1000 + i}`,
        status: 'failed',
        amount_cents: 4900 + i,
        lines: Array.from({ length: 6 }, (_, n) => ({ sku: `seat-${n}`, qty: n + 1 })),
      }),
    });
    messages.push({ role: 'tool', tool_call_id: `call_${i}_b`, content: JSON.stringify({ exit: 0, stdout: `${i + 2}\n` }) });
    messages.push({ role: 'assistant', content: `Invoice INV-${1000 + i} failed because the card was declined ${i + 2} times.` });
  }
  return messages;
}

/** Every string reachable from `error`: its message, stack, own properties and its whole cause chain. */
function everythingIn(error: unknown): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (depth > 8 || value === null || value === undefined || seen.has(value)) return;
    if (typeof value === 'string') return void parts.push(value);
    if (typeof value !== 'object') return void parts.push(String(value));
    seen.add(value);
    if (value instanceof Error) parts.push(value.message, value.stack ?? '');
    for (const key of Object.getOwnPropertyNames(value)) visit((value as Record<string, unknown>)[key], depth + 1);
  };
  visit(error, 0);
  return parts.join('\n');
}

async function rawHistory(lineageId: string): Promise<string> {
  const connection = await Connection.connect({ address: inject('stack').temporalAddress });
  try {
    return historyToJSON(await new Client({ connection }).workflow.getHandle(lineageWorkflowId(lineageId)).fetchHistory());
  } finally {
    await connection.close();
  }
}

async function sessionsCommand(args: string[], env: Record<string, string>): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, [path.join(PROJECT_ROOT, 'bin/sessions.js'), ...args], {
    env: { ...process.env, ...env },
    cwd: PROJECT_ROOT,
  });
  return stdout + stderr;
}

describe('an LLM gateway that echoes the API key in its 401', () => {
  it('is stored as a classified reason with the HTTP status, and the key is nowhere', async () => {
    const key = `sk-proj-${randomBytes(24).toString('hex')}`;
    stack = await startTestStack({ noWorker: true, env: { OPENAI_API_KEY: key } });
    const worker = await stack.spawnWorkerProcess();
    const id = uniqueId('echo');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, agentSession(8));
    stack.llm.script({ status: 401, errorCode: 'invalid_api_key', errorMessage: 'Incorrect API key provided', echoAuthorization: true });
    const result = await stack.client.compactAnswer(id, { force: true });

    // The fault landed: the gateway got the key and answered 401 (its body quoting it).
    expect(stack.llm.requests).toHaveLength(1);
    expect(stack.llm.requests[0].authorization).toBe(`Bearer ${key}`);
    expect(result.outcome).toBe('aborted');

    const [row] = await auditRows(stack.db.db, id);
    expect(row).toMatchObject({ outcome: 'aborted', reason: result.reason });
    const app = createInspectorApp({ client: stack.reader, temporalUiUrl: 'http://127.0.0.1:8233' });
    const lineagePage = await (await app.request(`/lineages/${id}`)).text();
    const compactionPage = await (await app.request(`/compactions/${encodeURIComponent(row.id)}`)).text();
    const asReader = { ...stack.env, DATABASE_URL: stack.readerDatabaseUrl };
    const history = await sessionsCommand(['history', id, '--json'], asReader);
    const workflowHistory = await rawHistory(id);
    expect(workflowHistory).toContain('SummariserAuthError');

    const places = {
      result: JSON.stringify(result),
      auditRow: JSON.stringify(row),
      lineagePage,
      compactionPage,
      history,
      historyText: await sessionsCommand(['history', id], asReader),
      workflowHistory,
      workerLog: worker.output(),
    };
    for (const [place, text] of Object.entries(places)) {
      expect(text, place).not.toContain(key);
      expect(text, place).not.toContain(key.slice(8, 32)); // nor a part of it
      expect(text, place).not.toContain('Incorrect API key provided'); // nor the provider's body
    }
    // What is stored instead: the kind of failure, the provider's status and its error code.
    expect(result.reason).toBe('summariser failed: auth (HTTP 401, invalid_api_key): the endpoint refused the API key');
    expect(compactionPage).toContain('auth (HTTP 401, invalid_api_key)');
    expect(history).toContain('auth (HTTP 401, invalid_api_key)');
  });
});

describe('reasons an earlier release recorded', () => {
  it('lose the provider body and the parameters they quoted (migration 0017), keeping the status or SQLSTATE', async () => {
    stack = await startTestStack({ noWorker: true });
    const id = uniqueId('old-reasons');
    await stack.client.createSession({ sessionId: id });
    const key = `sk-proj-${randomBytes(24).toString('hex')}`;
    const old = {
      auth: `summariser failed: LLM endpoint answered 401: 401 Incorrect API key provided: ${key}`,
      unreachable: `summariser failed: LLM endpoint unreachable: getaddrinfo ENOTFOUND gateway?key=${key}`,
      other: `summariser failed: summariser failed: request to https://gw/?key=${key} failed`,
      database: `database failed: database error 22P02: invalid input syntax for type integer: "${CARD}"`,
      params: `compaction failed: Failed query: select sc_compaction_commit($1::jsonb) as answer\nparams: {"summary":"card ${CARD}"}`,
      recent: 'summariser failed: auth (HTTP 401, invalid_api_key): the endpoint refused the API key',
      refused: 'nothing to summarise: all 4 messages fit in the kept head and tail',
    };
    for (const [name, reason] of Object.entries(old)) {
      await stack.db.db.execute(
        sql`insert into compactions (id, lineage_id, parent_session_id, generation, request_ids, trigger, outcome, reason) values (${`${id}/${name}`}, ${id}, ${id}, 0, '[]'::jsonb, 'update', ${name === 'refused' ? 'refused' : 'aborted'}, ${reason})`,
      );
    }
    // The migration as the database applied it (it ran on this database's template before the rows existed).
    await stack.db.db.execute(sql.raw(readFileSync(path.join(PROJECT_ROOT, 'src/db/migrations/0017_classified_reasons.sql'), 'utf8')));
    const rows = Object.fromEntries((await auditRows(stack.db.db, id)).map((r) => [r.id.slice(id.length + 1), r.reason]));
    expect(rows).toEqual({
      auth: "summariser failed: HTTP 401: the provider's message is not kept (recorded before failures were classified)",
      unreachable: 'summariser failed: connection: the endpoint could not be reached',
      other: 'summariser failed: other: the call failed (its message is not kept)',
      database: "database failed: database error 22P02: the database's message is not kept (recorded before failures were classified)",
      params: 'compaction failed: its message is not kept (recorded before failures were classified)',
      recent: old.recent,
      refused: old.refused,
    });
  });
});

describe('a statement the database refuses while it holds the appended batch', () => {
  it('reaches a library caller as a DatabaseQueryError without the batch', async () => {
    stack = await startTestStack({ noWorker: true });
    const id = uniqueId('refused');
    await stack.client.createSession({ sessionId: id });
    // The fault: the database refuses to store any more messages (as a full disk would).
    await stack.db.db.execute(
      sql.raw(`create function test_refuse_insert() returns trigger language plpgsql as $$ begin raise exception 'could not extend file: No space left on device' using errcode = '53100', detail = 'Failing row contains ' || new.body::text; end $$;
        create trigger test_refuse_insert before insert on messages for each row execute function test_refuse_insert();`),
    );
    try {
      const error = await stack.client.append(id, agentSession(3)).then(
        () => undefined,
        (e: unknown) => e,
      );
      // The fault landed: the append failed with the trigger's message.
      const text = everythingIn(error);
      expect(text).toContain('No space left on device');
      expect(text).not.toContain(CARD);
      expect(text).not.toContain('INV-100');
      expect(text).not.toContain('params');
      expect(error).toBeInstanceOf(DatabaseQueryError);
      expect(error).toMatchObject({ name: 'DatabaseQueryError', code: '53100', operation: 'session_append' });
      expect((error as Error).message).toBe('the database failed session_append: could not extend file: No space left on device (SQLSTATE 53100)');
    } finally {
      await stack.db.db.execute(sql.raw('drop trigger test_refuse_insert on messages; drop function test_refuse_insert();'));
    }
    expect((await stack.client.transcript(id)).messages).toHaveLength(0);
  });
});

describe('the connection cut while a commit is on the wire', () => {
  it('leaves the summary and the ledger out of the worker log and the workflow history; the retry commits', async () => {
    stack = await startTestStack({ noWorker: true });
    const url = new URL(stack.workerDatabaseUrl);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const worker = await stack.spawnWorkerProcess({ DATABASE_URL: proxied.toString() });
    const id = uniqueId('cut');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, agentSession(8));
    const summary = `SUMMARY-MARKER-${randomBytes(6).toString('hex')}: renewing the plan; the card was declined.`;
    stack.llm.script({ delayMs: 1000, text: summary });
    const pending = stack.client.compact(id, { force: true });
    await stack.llm.waitForRequests(1);
    // The summary is being written: hold what the worker sends next (the commit) and cut it.
    proxy.pause();
    const deadline = Date.now() + 15_000;
    while (proxy.held() < summary.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // The fault landed: the commit (which carries the summary) was held, then its connection broken.
    expect(proxy.held()).toBeGreaterThanOrEqual(summary.length);
    expect(proxy.cut()).toBeGreaterThan(0);

    const result = await pending;
    expect(result.outcome).toBe('compacted');
    // The test's own count: the first attempt's commit never arrived, a second attempt summarised again.
    expect(stack.llm.requests).toHaveLength(2);
    const head = await stack.client.transcript(result.sessionId);
    expect(JSON.stringify(head.messages)).not.toContain('SUMMARY-MARKER');

    const workerLog = worker.output();
    const workflowHistory = await rawHistory(id);
    expect(workerLog).toMatch(/Activity failed/); // the failed attempt is in the log...
    expect(workflowHistory).toMatch(/"attempt": 2/); // ...and the retry in history
    for (const [place, text] of Object.entries({ workerLog, workflowHistory })) {
      expect(text, place).not.toContain('SUMMARY-MARKER');
      expect(text, place).not.toContain(CARD);
      expect(text, place).not.toContain('params:');
    }
    // What they say instead: a database failure, the database unreachable.
    expect(workerLog).toMatch(/DatabaseError/);
    expect(workflowHistory).toMatch(/the database is unreachable/);
  });
});

describe('a client without the payload keys of an encrypted deployment', () => {
  it('gets a PayloadKeysMissingError that says so', async () => {
    const keys = `k1:${randomBytes(32).toString('base64')}`;
    stack = await startTestStack({ env: { PAYLOAD_ENCRYPTION_KEYS: keys } });
    const id = uniqueId('nokeys');
    await stack.client.createSession({ sessionId: id });
    await stack.client.append(id, agentSession(8));
    const plain = await SessionsClient.connect({ config: loadConfig({ ...stack.env, PAYLOAD_ENCRYPTION_KEYS: '' }), database: stack.db });
    try {
      const error = await plain.compact(id, { force: true, timeoutMs: 30_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(PayloadKeysMissingError);
      expect((error as Error).message).toMatch(/encrypts its Temporal payloads and this client has no PAYLOAD_ENCRYPTION_KEYS/);
      // The fault is the client's alone: the compaction ran, and a keyed client reads the lineage it made.
      const { headSessionId } = await stack.client.lineage(id);
      expect(headSessionId).not.toBe(id);
      expect(await stack.client.compact(headSessionId, { force: true })).toMatchObject({ outcome: 'refused', sessionId: headSessionId });
    } finally {
      await plain.close();
    }
  });
});
