/**
 * Tracing: with a span processor installed (here an in-memory exporter, in production OTLP),
 * one compaction is one connected trace, from the client's call through the workflow and
 * the activity to the LLM call and the commit. Without one, nothing is installed.
 */
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import * as store from '../../src/db/session-store';
import { clientTracingInterceptors, installTracing, shutdownTracing, tracingEnabled, workerTracingPlugin } from '../../src/tracing';
import { conversation, startTestStack, type TestStack, uniqueId } from '../support/stack';

let stack: TestStack | undefined;
const exporter = new InMemorySpanExporter();
afterAll(async () => {
  await stack?.close();
  await shutdownTracing();
});

describe('tracing', () => {
  it('is off, with nothing installed, when no exporter is configured', () => {
    expect(tracingEnabled()).toBe(false);
    expect(clientTracingInterceptors()).toBeUndefined();
    expect(workerTracingPlugin()).toBeUndefined();
  });

  it('one compaction yields one connected trace: client, workflow, activity, LLM call, commit', async () => {
    installTracing(new SimpleSpanProcessor(exporter));
    // The worker bundles the workflow code itself (with the tracing interceptors).
    stack = await startTestStack();
    const id = uniqueId('trace');
    // The lineage row is created directly, so the compaction's Update starts the workflow and
    // the workflow's run belongs to the compaction's trace.
    await store.createSession(stack.db.db, { sessionId: id, mode: 'rotate' });
    await stack.client.append(id, conversation(12));
    expect((await stack.client.compact(id)).outcome).toBe('compacted');
    // Closing completes the workflow, which ends (and exports) its run span.
    await stack.client.closeSession(id);

    const root = () => exporter.getFinishedSpans().find((s) => s.name === 'UpdateWithStartWorkflow:compact');
    const deadline = Date.now() + 30_000;
    const names = (spans: ReadableSpan[]) => spans.map((s) => s.name);
    let trace: ReadableSpan[] = [];
    for (;;) {
      const traceId = root()?.spanContext().traceId;
      trace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      const have = names(trace);
      if (['RunWorkflow:sessionLineageWorkflow', 'RunActivity:compactSession', 'llm.summarise', 'db.commit'].every((n) => have.includes(n))) break;
      if (Date.now() > deadline) throw new Error(`trace incomplete: ${JSON.stringify(names(exporter.getFinishedSpans()))}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (span: ReadableSpan) => (span.parentSpanId ? byId.get(span.parentSpanId) : undefined);
    const chain = (name: string) => {
      const out: string[] = [];
      for (let s: ReadableSpan | undefined = trace.find((t) => t.name === name); s; s = parentOf(s)) out.push(s.name);
      return out.reverse();
    };
    // Every span but the client's call has its parent in the same trace.
    for (const span of trace) if (span !== root()) expect(parentOf(span), span.name).toBeDefined();
    expect(chain('llm.summarise')).toEqual([
      'UpdateWithStartWorkflow:compact',
      'RunWorkflow:sessionLineageWorkflow',
      'StartActivity:compactSession',
      'RunActivity:compactSession',
      'llm.summarise',
    ]);
    expect(chain('db.commit')).toEqual([
      'UpdateWithStartWorkflow:compact',
      'RunWorkflow:sessionLineageWorkflow',
      'StartActivity:compactSession',
      'RunActivity:compactSession',
      'db.commit',
    ]);
    // The LLM call really happened inside that span, and the span carries what it reported.
    expect(stack.llm.requests.length).toBe(1);
    expect(trace.find((s) => s.name === 'llm.summarise')!.attributes).toMatchObject({
      'llm.model': 'fake-model',
      'llm.prompt_tokens': stack.llm.requests[0].usage.prompt_tokens,
    });
  });

  it('a commit the database refuses leaves no statement parameter (summary, ledger, a card number) in any span', async () => {
    const card = '4111 1111 1111 1111';
    const id = uniqueId('trace-refused');
    await stack!.client.createSession({ sessionId: id });
    const [system, ...rest] = conversation(12);
    await stack!.client.append(id, [
      system,
      { role: 'user', content: `Renew the plan and charge my card ${card}.` },
      { role: 'assistant', content: 'Renewal queued.' },
      ...rest,
    ]);
    const marker = `SUMMARY-MARKER-${Date.now()}`;
    stack!.llm.setDefault({ text: `${marker}: the plan renewal is queued.` });
    // The fault: the database refuses the commit's new head (and only that: a session with a parent).
    await stack!.db.db.execute(
      sql.raw(`create function test_refuse_child() returns trigger language plpgsql as $$ begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$;
        create trigger test_refuse_child before insert on sessions for each row when (new.parent_session_id is not null) execute function test_refuse_child();`),
    );
    try {
      expect((await stack!.client.compact(id, { force: true })).outcome).toBe('aborted');
    } finally {
      await stack!.db.db.execute(sql.raw('drop trigger test_refuse_child on sessions; drop function test_refuse_child();'));
    }
    const commits = exporter.getFinishedSpans().filter((s) => s.name === 'db.commit' && s.status.code === SpanStatusCode.ERROR);
    // The fault landed: commits failed in their spans, each with the database's refusal recorded.
    expect(commits.length).toBeGreaterThan(0);
    for (const span of commits) expect(span.events.map((e) => e.name)).toContain('exception');
    for (const span of exporter.getFinishedSpans()) {
      const recorded = JSON.stringify({ events: span.events, status: span.status, attributes: span.attributes });
      expect(recorded, span.name).not.toContain(card);
      expect(recorded, span.name).not.toContain(marker);
    }
    // What they record instead: the typed error, naming the refusal.
    for (const span of commits)
      expect(span.status.message).toBe('the database failed sc_compaction_commit: could not extend file: No space left on device (SQLSTATE 53100)');
  });
});
