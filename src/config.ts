/**
 * All configuration, read from the environment in one place. docs/configuration.md lists
 * every variable; keep the two in step.
 */
import path from 'node:path';
import { DEFAULT_GAIN_POLICY, type GainPolicy } from './compaction/gain';
import { DEFAULT_MESSAGE_LIMITS, type MessageLimits } from './compaction/message-schema';
import { type AutoCompactionPolicy, DEFAULT_AUTO_COMPACTION_POLICY } from './db/session-store';
import { secretsFromEnv } from './secrets';

export const PROJECT_ROOT = path.resolve(__dirname, '..');
/** Repo-local, git-ignored state of the dev stack (Postgres data, Temporal's SQLite file). */
export const DEV_STATE_DIR = path.join(PROJECT_ROOT, '.dev');
/** Repo-local, git-ignored tools (the Temporal CLI). */
export const TOOLS_DIR = path.join(PROJECT_ROOT, '.tools');

export const DEV_POSTGRES_PORT = 54329;
const DEV_DATABASE_URL = `postgres://postgres:postgres@127.0.0.1:${DEV_POSTGRES_PORT}/session_compaction`;

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * How to reach a secured Temporal (a production cluster, Temporal Cloud). The names follow
 * the Temporal CLI's and SDKs' environment configuration. src/temporal-connection.ts turns
 * this into connection options; files are read there, not here.
 */
export interface TemporalSecurityConfig {
  /** Use TLS. Implied by any of the settings below. */
  tls: boolean;
  /** PEM file of the CA that signed the server's certificate (else the system's roots). */
  serverCaCertPath?: string;
  /** Name to verify the server's certificate against (and send as SNI) instead of the address' host. */
  serverName?: string;
  /** PEM files of the client certificate and its key, for mTLS. Both or neither. */
  clientCertPath?: string;
  clientKeyPath?: string;
  /** API key (Temporal Cloud): sent as `Authorization: Bearer <key>`; implies TLS. */
  apiKey?: string;
}

function msListFrom(env: NodeJS.ProcessEnv, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((part) => Number(part.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 0)) {
    throw new Error(`${name} must be a comma-separated list of non-negative integers (milliseconds), got ${JSON.stringify(raw)}`);
  }
  return values;
}

export interface TemporalConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  security: TemporalSecurityConfig;
}

function percentFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = intFrom(env, name, fallback);
  if (value < 1 || value > 100) throw new Error(`${name} must be a percentage from 1 to 100, got ${value}`);
  return value;
}

function boolFrom(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

export function loadTemporalSecurity(env: NodeJS.ProcessEnv = process.env): TemporalSecurityConfig {
  const security = {
    serverCaCertPath: env.TEMPORAL_TLS_SERVER_CA_CERT_PATH || undefined,
    serverName: env.TEMPORAL_TLS_SERVER_NAME || undefined,
    clientCertPath: env.TEMPORAL_TLS_CLIENT_CERT_PATH || undefined,
    clientKeyPath: env.TEMPORAL_TLS_CLIENT_KEY_PATH || undefined,
    apiKey: env.TEMPORAL_API_KEY || undefined,
  };
  const implied = Object.values(security).some((value) => value !== undefined);
  const tls = boolFrom(env, 'TEMPORAL_TLS') ?? implied;
  if (!tls && implied) {
    throw new Error('TEMPORAL_TLS=false contradicts TEMPORAL_TLS_* / TEMPORAL_API_KEY settings: unset them or TEMPORAL_TLS');
  }
  if ((security.clientCertPath === undefined) !== (security.clientKeyPath === undefined)) {
    throw new Error('mTLS needs both TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH, or neither');
  }
  return { tls, ...Object.fromEntries(Object.entries(security).filter(([, v]) => v !== undefined)) };
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')} (got ${JSON.stringify(raw)})`);
  return raw as T;
}

/** The summariser's API from COMPACTION_API; Anthropic reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL. */
function llmConfig(env: NodeJS.ProcessEnv): LlmConfig {
  const api = env.COMPACTION_API || 'chat';
  if (api !== 'chat' && api !== 'responses' && api !== 'anthropic')
    throw new Error(`COMPACTION_API must be one of chat, responses, anthropic (got ${JSON.stringify(api)})`);
  const anthropic = api === 'anthropic';
  return {
    api,
    apiKey: (anthropic ? env.ANTHROPIC_API_KEY : env.OPENAI_API_KEY) || undefined,
    baseURL: (anthropic ? env.ANTHROPIC_BASE_URL : env.OPENAI_BASE_URL) || undefined,
    model: env.COMPACTION_MODEL || (anthropic ? 'claude-haiku-4-5' : 'gpt-4o-mini'),
    stream: env.COMPACTION_STREAM !== 'false',
  };
}

/** One provider's endpoint for the native rung: its key and base URL, and the model used when a lineage names none. */
export interface NativeProviderConfig {
  apiKey?: string;
  baseURL?: string;
  model?: string;
}

/**
 * The native rung (src/activities/native-compaction): the provider's own compaction, tried after
 * masking and before the summary, where the lineage's dialect allows it. Off unless
 * NATIVE_COMPACTION=on; a provider without a key is not used.
 */
export interface NativeCompactionConfig {
  enabled: boolean;
  /** OpenAI Responses `POST /responses/compact` (openai-responses and openai-agents lineages): OPENAI_API_KEY, NATIVE_OPENAI_BASE_URL (default OPENAI_BASE_URL), NATIVE_OPENAI_MODEL. */
  openai: NativeProviderConfig;
  /** Anthropic Messages with the compact_20260112 edit (anthropic lineages): ANTHROPIC_API_KEY, NATIVE_ANTHROPIC_BASE_URL (default ANTHROPIC_BASE_URL), NATIVE_ANTHROPIC_MODEL. */
  anthropic: NativeProviderConfig;
  /** Upper bound of one native call (NATIVE_COMPACTION_TIMEOUT_MS); a call that takes longer passes to the summary. */
  timeoutMs: number;
}

function nativeConfig(env: NodeJS.ProcessEnv): NativeCompactionConfig {
  const provider = (key: string | undefined, baseURL: string | undefined, model: string | undefined): NativeProviderConfig => ({
    ...(key ? { apiKey: key } : {}),
    ...(baseURL ? { baseURL } : {}),
    ...(model ? { model } : {}),
  });
  return {
    enabled: oneOf(env, 'NATIVE_COMPACTION', ['off', 'on'] as const, 'off') === 'on',
    openai: provider(env.OPENAI_API_KEY, env.NATIVE_OPENAI_BASE_URL || env.OPENAI_BASE_URL, env.NATIVE_OPENAI_MODEL),
    anthropic: provider(env.ANTHROPIC_API_KEY, env.NATIVE_ANTHROPIC_BASE_URL || env.ANTHROPIC_BASE_URL, env.NATIVE_ANTHROPIC_MODEL),
    timeoutMs: intFrom(env, 'NATIVE_COMPACTION_TIMEOUT_MS', 120_000),
  };
}

export interface LlmConfig {
  /** Which API the summariser speaks: OpenAI-compatible Chat Completions (default) or Responses, or Anthropic's Messages API. */
  api: 'chat' | 'responses' | 'anthropic';
  /** Absent: the built-in deterministic extractive summariser is used. */
  apiKey?: string;
  baseURL?: string;
  model: string;
  stream: boolean;
}

interface CompactionConfig {
  /** Heartbeat timeout of the summarise activity: the lease TTL. */
  leaseTtlMs: number;
  /** A summariser stream silent for this long is abandoned and retried. */
  stallTimeoutMs: number;
  /** Upper bound for one summarise attempt, however much it heartbeats. */
  attemptTimeoutMs: number;
  /** A non-streamed summary (no progress to watch) is abandoned and retried after this long. */
  requestTimeoutMs: number;
  maxAttempts: number;
  tailTokenBudget: number;
  headGroups: number;
  minTailGroups: number;
  /** Tokens of conversation one summariser request may hold; a larger middle is summarised in chunks. */
  summaryInputTokens: number;
  /** How long a client call that waits (compact, waitForResult, closeSession) waits by default. */
  callTimeoutMs: number;
  /** The masking rung (src/compaction/masking.ts): tried before a summary when on. */
  masking: boolean;
  /**
   * 'prefix': when the summariser is the lineage's own model and speaks its dialect, the summary
   * request is the head as the agent sends it followed by the instruction, so the provider's
   * prompt cache serves the head; 'rendered': always a re-rendered middle.
   */
  summaryLayout: 'prefix' | 'rendered';
  /** The masking rung applies when it brings the head to this share (percent) of the threshold (or, without one, of the context window). */
  maskingTargetPercent: number;
  /** The ledger's bound: this share (percent) of the context window, and at most ledgerMaxTokens. */
  ledgerPercent: number;
  ledgerMaxTokens: number;
  /** A user request is kept verbatim in the ledger up to this many characters. */
  ledgerRequestChars: number;
  /**
   * The rungs a lineage created without a setting may use (COMPACTION_RUNGS, a comma list of
   * rung names); absent: every rung. The worker checks the names when it starts.
   */
  rungs?: string[];
  /** The minimum-gain guard for automatic compactions (COMPACTION_MIN_GAIN_TURNS and the price ratios; src/compaction/gain.ts). */
  minGain: GainPolicy;
}

interface InspectorTenantConfig {
  name: string;
  token: string;
  databaseUrl: string;
}

/** INSPECTOR_TENANTS (tenant names, as in tenant_logins) and each one's token and database. */
function inspectorTenantsFrom(env: NodeJS.ProcessEnv): InspectorTenantConfig[] {
  return (namesFrom(env, 'INSPECTOR_TENANTS') ?? []).map((name) => {
    if (!/^[a-z0-9][a-z0-9_-]{0,31}$/.test(name)) throw new Error(`INSPECTOR_TENANTS must name tenants (a-z, 0-9, _ and -), got ${JSON.stringify(name)}`);
    const prefix = `INSPECTOR_TENANT_${name.toUpperCase().replaceAll('-', '_')}_`;
    const [token, databaseUrl] = [env[`${prefix}TOKEN`], env[`${prefix}DATABASE_URL`]];
    if (!token) throw new Error(`${prefix}TOKEN is required for tenant ${name} (INSPECTOR_TENANTS)`);
    if (!databaseUrl) throw new Error(`${prefix}DATABASE_URL is required for tenant ${name}: a reader login mapped to it`);
    return { name, token, databaseUrl };
  });
}

function namesFrom(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw.split(',').map((part) => part.trim());
}

function ratioFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(raw)}`);
  return value;
}

/** Worker capacity. Idle lineages cost only a slot in the workflow cache. */
interface WorkerTuning {
  /** How long a stopping worker lets in-flight summaries finish before cancelling them. */
  shutdownGraceTimeMs: number;
  maxCachedWorkflows: number;
  maxConcurrentWorkflowTaskExecutions: number;
  maxConcurrentActivityTaskExecutions: number;
  maxConcurrentLocalActivityExecutions: number;
}

/** `host:port`, or a bare port (bound on 127.0.0.1): operator endpoints bind loopback unless told otherwise. */
export function bindAddress(raw: string | undefined, fallback?: string): string | undefined {
  const value = raw?.trim() || fallback;
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return `127.0.0.1:${value}`;
  if (!/^[^\s:]+:\d+$|^\[[0-9a-fA-F:]+\]:\d+$/.test(value)) throw new Error(`a bind address must look like host:port or a port, got ${JSON.stringify(value)}`);
  return value;
}

export interface Config {
  /** host:port for the worker's Prometheus endpoint (/metrics); none when absent. A bare port binds 127.0.0.1. */
  metricsBindAddress?: string;
  /** host:port of the inspector web page (default 127.0.0.1:8234). */
  inspectorBindAddress: string;
  /** Token the inspector requires (Basic password or Bearer); required when it binds anything but loopback. */
  inspectorAuthToken?: string;
  /**
   * Host names the inspector answers to besides loopback names and its bind host (the `Host`
   * header of any other request is refused: DNS rebinding). Lower-case, without ports.
   */
  inspectorAllowedHosts: string[];
  /** The database the inspector reads (a read-only role, once there is one); DATABASE_URL when unset. */
  inspectorDatabaseUrl: string;
  /**
   * Tenant mode of the inspector (docs/security.md, "Tenants"): INSPECTOR_TENANTS names them,
   * each with INSPECTOR_TENANT_<NAME>_TOKEN (what its people present) and
   * INSPECTOR_TENANT_<NAME>_DATABASE_URL (a reader login mapped to that tenant).
   */
  inspectorTenants: InspectorTenantConfig[];
  /** The Temporal Web UI, for links from the inspector. */
  temporalUiUrl: string;
  /** OTLP endpoint for traces; tracing is off without it. */
  otlpEndpoint?: string;
  /** Bearer token the codec endpoint requires (the Web UI forwards it); it refuses to start without one unless codecInsecureNoAuth. */
  codecAuthToken?: string;
  /** Serve the codec endpoint without a token (CODEC_INSECURE_NO_AUTH=true): a developer's machine only. */
  codecInsecureNoAuth: boolean;
  /** Serve /encode too (the UI needs it only to send encoded input, e.g. a signal); off by default. */
  codecEnableEncode: boolean;
  /** Largest request body the codec endpoint reads. */
  codecMaxBodyBytes: number;
  /** `id:base64key,...`: payloads in Temporal history are AES-GCM encrypted when set. */
  payloadEncryptionKeys?: string;
  codecServerPort: number;
  codecCorsOrigins: string[];
  temporal: TemporalConfig;
  worker: WorkerTuning;
  databaseUrl: string;
  /**
   * MIGRATE_ON_START=true: the worker runs the migrations at start (its login must then be a
   * member of sc_migrator), for a single-process setup. Default: it only checks the migration
   * level and refuses to start behind it (SchemaBehindError); `npm run db:migrate` migrates.
   */
  migrateOnStart: boolean;
  messageLimits: MessageLimits;
  llm: LlmConfig;
  /** The provider's own compaction as a rung (NATIVE_COMPACTION, default off). */
  native: NativeCompactionConfig;
  compaction: CompactionConfig;
  autoCompaction: AutoCompactionPolicy;
  /** Where retention exports the messages it prunes (JSON lines) before deleting them; none: not exported. */
  retentionExportDir?: string;
  /**
   * Every secret value this configuration read (both LLM providers' keys, the Temporal API key,
   * the codec and inspector tokens, the payload encryption keys, the database password):
   * redacted from any error text the service stores, logs or traces (src/secrets.ts).
   */
  secrets: readonly string[];
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const leaseTtlMs = intFrom(env, 'COMPACTION_LEASE_TTL_MS', 60_000);
  return {
    metricsBindAddress: bindAddress(env.METRICS_BIND_ADDRESS),
    inspectorBindAddress: bindAddress(env.INSPECTOR_BIND_ADDRESS, '127.0.0.1:8234')!,
    inspectorAuthToken: env.INSPECTOR_AUTH_TOKEN || undefined,
    inspectorAllowedHosts: (env.INSPECTOR_ALLOWED_HOSTS || '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    inspectorDatabaseUrl: env.INSPECTOR_DATABASE_URL || env.DATABASE_URL || DEV_DATABASE_URL,
    inspectorTenants: inspectorTenantsFrom(env),
    temporalUiUrl: (env.TEMPORAL_UI_URL || 'http://127.0.0.1:8233').replace(/\/+$/, ''),
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    codecAuthToken: env.CODEC_AUTH_TOKEN || undefined,
    codecInsecureNoAuth: boolFrom(env, 'CODEC_INSECURE_NO_AUTH') ?? false,
    codecEnableEncode: env.CODEC_ENABLE_ENCODE === 'true',
    codecMaxBodyBytes: intFrom(env, 'CODEC_MAX_BODY_BYTES', 4 * 1024 * 1024),
    payloadEncryptionKeys: env.PAYLOAD_ENCRYPTION_KEYS || undefined,
    retentionExportDir: env.RETENTION_EXPORT_DIR || undefined,
    codecServerPort: intFrom(env, 'CODEC_SERVER_PORT', 8888),
    codecCorsOrigins: (env.CODEC_CORS_ORIGINS || 'http://127.0.0.1:8233,http://localhost:8233').split(',').map((o) => o.trim()),
    temporal: {
      address: env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
      namespace: env.TEMPORAL_NAMESPACE || 'default',
      taskQueue: env.TEMPORAL_TASK_QUEUE || 'session-compaction',
      security: loadTemporalSecurity(env),
    },
    worker: {
      shutdownGraceTimeMs: intFrom(env, 'WORKER_SHUTDOWN_GRACE_MS', 30_000),
      maxCachedWorkflows: intFrom(env, 'WORKER_MAX_CACHED_WORKFLOWS', 2_000),
      maxConcurrentWorkflowTaskExecutions: intFrom(env, 'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS', 40),
      maxConcurrentActivityTaskExecutions: intFrom(env, 'WORKER_MAX_CONCURRENT_ACTIVITIES', 100),
      maxConcurrentLocalActivityExecutions: intFrom(env, 'WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES', 100),
    },
    databaseUrl: env.DATABASE_URL || DEV_DATABASE_URL,
    migrateOnStart: boolFrom(env, 'MIGRATE_ON_START') ?? false,
    messageLimits: {
      maxMessageChars: intFrom(env, 'MAX_MESSAGE_CHARS', DEFAULT_MESSAGE_LIMITS.maxMessageChars),
      maxBatchMessages: intFrom(env, 'MAX_APPEND_MESSAGES', DEFAULT_MESSAGE_LIMITS.maxBatchMessages),
      maxBatchChars: intFrom(env, 'MAX_APPEND_CHARS', DEFAULT_MESSAGE_LIMITS.maxBatchChars),
    },
    llm: llmConfig(env),
    native: nativeConfig(env),

    compaction: {
      leaseTtlMs,
      stallTimeoutMs: intFrom(env, 'COMPACTION_STALL_TIMEOUT_MS', leaseTtlMs),
      attemptTimeoutMs: intFrom(env, 'COMPACTION_ATTEMPT_TIMEOUT_MS', 30 * 60_000),
      requestTimeoutMs: intFrom(env, 'COMPACTION_REQUEST_TIMEOUT_MS', 5 * 60_000),
      maxAttempts: intFrom(env, 'COMPACTION_MAX_ATTEMPTS', 5),
      tailTokenBudget: intFrom(env, 'COMPACTION_TAIL_TOKENS', 2000),
      headGroups: intFrom(env, 'COMPACTION_HEAD_MESSAGES', 2),
      minTailGroups: intFrom(env, 'COMPACTION_MIN_TAIL_MESSAGES', 2),
      // Sized for a 128k-token summariser model, leaving room for the instructions and the answer.
      summaryInputTokens: intFrom(env, 'COMPACTION_SUMMARY_INPUT_TOKENS', 100_000),
      callTimeoutMs: intFrom(env, 'COMPACTION_CALL_TIMEOUT_MS', 60 * 60_000),
      masking: boolFrom(env, 'COMPACTION_MASKING') ?? true,
      summaryLayout: oneOf(env, 'COMPACTION_SUMMARY_LAYOUT', ['prefix', 'rendered'] as const, 'prefix'),
      maskingTargetPercent: percentFrom(env, 'COMPACTION_MASKING_TARGET_PERCENT', 50),
      ledgerPercent: percentFrom(env, 'COMPACTION_LEDGER_PERCENT', 10),
      ledgerMaxTokens: intFrom(env, 'COMPACTION_LEDGER_MAX_TOKENS', 8000),
      ledgerRequestChars: intFrom(env, 'COMPACTION_LEDGER_REQUEST_CHARS', 500),
      rungs: namesFrom(env, 'COMPACTION_RUNGS'),
      minGain: {
        turns: intFrom(env, 'COMPACTION_MIN_GAIN_TURNS', DEFAULT_GAIN_POLICY.turns),
        cacheReadRatio: ratioFrom(env, 'COMPACTION_CACHE_READ_RATIO', DEFAULT_GAIN_POLICY.cacheReadRatio),
        cacheWriteRatio: ratioFrom(env, 'COMPACTION_CACHE_WRITE_RATIO', DEFAULT_GAIN_POLICY.cacheWriteRatio),
        outputRatio: ratioFrom(env, 'COMPACTION_OUTPUT_RATIO', DEFAULT_GAIN_POLICY.outputRatio),
      },
    },
    autoCompaction: {
      cooldownsMs: msListFrom(env, 'AUTO_COMPACTION_COOLDOWNS_MS', DEFAULT_AUTO_COMPACTION_POLICY.cooldownsMs),
      resendAfterMs: intFrom(env, 'AUTO_COMPACTION_RESEND_MS', DEFAULT_AUTO_COMPACTION_POLICY.resendAfterMs),
      maxFollowUps: intFrom(env, 'AUTO_COMPACTION_MAX_FOLLOW_UPS', DEFAULT_AUTO_COMPACTION_POLICY.maxFollowUps),
    },
    secrets: secretsFromEnv(env),
  };
}
