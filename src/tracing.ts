/**
 * OpenTelemetry tracing, through Temporal's interceptors: spans from the client call through
 * the workflow and the activity to the LLM call and the commit, in one trace.
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (then spans go over OTLP/HTTP to it) or a
 * process installs a span processor itself (tests, with an in-memory exporter). When off,
 * no interceptor or plugin is installed and `withSpan` calls straight through: it costs
 * nothing.
 */
// Type-only imports: the OpenTelemetry packages are loaded (require) only when tracing is
// installed, so a process without it does not even pay their load time (~0.5 s).
import type * as otel from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { OpenTelemetryPlugin, OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Summariser } from './activities/summariser';
import { typedDatabaseError } from './db/postgres-errors';

/* eslint-disable @typescript-eslint/no-require-imports */
const api = () => require('@opentelemetry/api') as typeof import('@opentelemetry/api');
const interceptors = () => require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');

interface Tracing {
  provider: NodeTracerProvider;
  spanProcessor: SpanProcessor;
  resource: Resource;
  tracer: otel.Tracer;
}

let installed: Tracing | undefined;

/** Installs tracing for this process with the given span processor (tests: an in-memory exporter). */
export function installTracing(spanProcessor: SpanProcessor, serviceName = 'session-compaction'): void {
  if (installed) throw new Error('tracing is already installed in this process');
  const { Resource } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Registers the global tracer provider and the async-local-storage context manager, so
  // spans started inside an activity nest under the activity's span.
  provider.register();
  installed = { provider, spanProcessor, resource, tracer: api().trace.getTracer('session-compaction') };
}

/**
 * Installs OTLP export when `otlpEndpoint` (OTEL_EXPORTER_OTLP_ENDPOINT) is set. Returns
 * whether tracing is on for this process. Safe to call more than once.
 */
export function installTracingFromConfig(config: { otlpEndpoint?: string }): boolean {
  if (!installed && config.otlpEndpoint) {
    // The exporter reads the OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers).
    const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
    installTracing(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  return installed !== undefined;
}

export function tracingEnabled(): boolean {
  return installed !== undefined;
}

/** Client interceptors that start a span per call and pass it to the workflow, or undefined when off. */
export function clientTracingInterceptors(): OpenTelemetryWorkflowClientInterceptor[] | undefined {
  return installed ? [new (interceptors().OpenTelemetryWorkflowClientInterceptor)({ tracer: installed.tracer })] : undefined;
}

/** The worker plugin (client, workflow and activity interceptors, workflow span sink), or undefined when off. */
export function workerTracingPlugin(): OpenTelemetryPlugin | undefined {
  return installed
    ? new (interceptors().OpenTelemetryPlugin)({ resource: installed.resource, spanProcessor: installed.spanProcessor, tracer: installed.tracer })
    : undefined;
}

/** Runs `fn` in a span named `name` when tracing is on; calls it directly when off. */
export async function withSpan<T>(name: string, attributes: otel.Attributes, fn: () => Promise<T>): Promise<T> {
  if (!installed) return fn();
  return installed.tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (error) {
      // The span gets the typed error's name and message only: a driver's error (its message
      // and stack) holds the statement's parameters, a commit's summary and ledger.
      const typed = typedDatabaseError(error, undefined);
      const recorded = typed instanceof Error ? { name: typed.name, message: typed.message } : { name: 'Error', message: String(typed) };
      span.recordException(recorded);
      span.setStatus({ code: api().SpanStatusCode.ERROR, message: recorded.message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A summariser whose every call is a span (`llm.summarise`) with the model and token counts. */
export function tracedSummariser(summariser: Summariser): Summariser {
  return {
    model: summariser.model,
    description: summariser.description,
    summarise: (request, context) =>
      withSpan('llm.summarise', { 'llm.model': summariser.model, 'compaction.messages': request.lines.length }, async () => {
        const result = await summariser.summarise(request, context);
        api()
          .trace.getActiveSpan()
          ?.setAttributes({
            ...(result.promptTokens !== undefined ? { 'llm.prompt_tokens': result.promptTokens } : {}),
            ...(result.completionTokens !== undefined ? { 'llm.completion_tokens': result.completionTokens } : {}),
          });
        return result;
      }),
  };
}

/** Flushes and stops the exporter (the worker calls this on shutdown). */
export async function shutdownTracing(): Promise<void> {
  const current = installed;
  installed = undefined;
  await current?.provider.shutdown();
}
