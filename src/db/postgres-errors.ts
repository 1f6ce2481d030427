/**
 * What a Postgres failure says to its caller, its log and its trace: the one place every layer
 * (the library, the CLI, the worker's activities, spans) turns a database error into a typed
 * one. pg reports an unreachable server as a bare socket error (ECONNREFUSED, ENOTFOUND, ...)
 * and drizzle wraps every failure in "Failed query: <sql> params: <every parameter>", which for
 * an append is the whole batch of messages and for a commit the summary and the ledger; the
 * server's own message may quote a value too (`invalid input syntax for type integer: "…"`),
 * and its DETAIL and WHERE fields quote rows. databaseErrorFrom turns the first kind into a
 * DatabaseUnreachableError naming host:port (from the URL, never its password); typedDatabaseError
 * turns any other into a DatabaseQueryError naming the SQL function or statement, the SQLSTATE
 * and the server's message with every quoted value blanked, and with no cause: nothing that
 * holds a parameter survives. Pure: no I/O.
 */
import {
  causeChain,
  DatabaseQueryError,
  DatabaseUnreachableError,
  HistoryMismatchError,
  InvalidInputError,
  LineageClosedError,
  LineageErasedError,
  SessionCompactionError,
  SessionConflictError,
  SessionNotFoundError,
} from '../errors';

/** Socket and DNS failures of reaching the server. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
]);
/**
 * SQLSTATEs of a server that will not take the connection: 08xxx connection exceptions,
 * shutting down or starting up, too many connections, the database does not exist, the login
 * is refused.
 */
const UNREACHABLE_SQLSTATE = /^(08...|57P0[123]|53300|3D000|28000|28P01)$/;
/** pg's own messages for a connection it lost or never got. */
const UNREACHABLE_MESSAGE =
  /^(Connection terminated unexpectedly|Connection terminated due to connection timeout|Connection terminated|timeout expired|Client has encountered a connection error and is not queryable|The server does not support SSL connections)$/;

interface ErrorLike {
  message?: unknown;
  code?: unknown;
  syscall?: unknown;
  cause?: unknown;
  errors?: unknown;
  metadata?: unknown;
}

const isObject = (value: unknown): value is ErrorLike => typeof value === 'object' && value !== null;

/** The error of not reaching the server in `error`'s cause chain, if it has one. */
function unreachableCause(error: unknown): ErrorLike | undefined {
  for (const e of causeChain(error) as Iterable<ErrorLike>) {
    // A gRPC status (a Temporal call) is no database error, whatever its message quotes.
    if (typeof e.code === 'number' && e.metadata !== undefined) return undefined;
    const code = typeof e.code === 'string' ? e.code : '';
    const message = typeof e.message === 'string' ? e.message : '';
    if (UNREACHABLE_CODES.has(code) || UNREACHABLE_SQLSTATE.test(code) || UNREACHABLE_MESSAGE.test(message)) return e;
    // A Unix socket that is not there: connect ENOENT /var/run/postgresql/.s.PGSQL.5432.
    if ((code === 'ENOENT' || code === 'EACCES') && e.syscall === 'connect') return e;
  }
  return undefined;
}

/** The cause as one line: its message (the messages of each address tried, for an AggregateError), with its code. */
function reasonOf(cause: ErrorLike): string {
  const messageOf = (e: unknown) => (isObject(e) && typeof e.message === 'string' ? e.message.trim() : '');
  let reason = messageOf(cause);
  if (!reason && Array.isArray(cause.errors)) reason = [...new Set(cause.errors.map(messageOf).filter(Boolean))].join('; ');
  const code = typeof cause.code === 'string' ? cause.code : '';
  if (code && !reason.includes(code)) reason = reason ? `${reason} (${code})` : code;
  return (reason || 'the connection failed').replace(/\s*\n\s*/g, ' ');
}

function parsedUrl(url: string | undefined): URL | undefined {
  try {
    return url ? new URL(url) : undefined;
  } catch {
    return undefined;
  }
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * host:port of a postgres:// URL (default port 5432; a Unix socket directory as
 * dir/.s.PGSQL.port). Never the user or the password; a URL that does not parse says so.
 */
export function databaseAddress(url: string | undefined): string {
  const parsed = parsedUrl(url);
  if (!parsed) return url ? 'DATABASE_URL (not a valid URL)' : 'DATABASE_URL (not set)';
  const host = decoded(parsed.hostname) || parsed.searchParams.get('host') || 'localhost';
  const port = parsed.port || parsed.searchParams.get('port') || '5432';
  return host.startsWith('/') ? `${host.replace(/\/$/, '')}/.s.PGSQL.${port}` : `${host}:${port}`;
}

/** `text` with the URL's password (when it is long enough to be told apart) replaced by ***. */
function redacted(text: string, url: string | undefined): string {
  const parsed = parsedUrl(url);
  let result = text;
  for (const secret of new Set(parsed ? [parsed.password, decoded(parsed.password)] : [])) {
    if (secret.length >= 3) result = result.split(secret).join('***');
  }
  return result;
}

/**
 * A DatabaseUnreachableError when `error` (or its cause chain) is the database not being
 * reachable at `url` (refused, unknown host, timed out, connection lost, the server shutting
 * down or refusing the login); otherwise `error` itself, unchanged.
 */
export function databaseErrorFrom<E>(error: E, url: string | undefined): E | DatabaseUnreachableError {
  if (error instanceof DatabaseUnreachableError) return error;
  const cause = unreachableCause(error);
  if (!cause) return error;
  const code = typeof cause.code === 'string' ? cause.code : undefined;
  const unreachable = new DatabaseUnreachableError(redacted(databaseAddress(url), url), redacted(reasonOf(cause), url), code);
  // The socket error, not drizzle's wrapper: that one's message holds every parameter.
  if (cause instanceof Error) Object.defineProperty(unreachable, 'cause', { value: cause, enumerable: false, configurable: true, writable: true });
  return unreachable;
}

/** The SQLSTATE of `error` or the first error of its cause chain that has one. */
function sqlStateOf(error: unknown): string | undefined {
  for (const e of causeChain(error)) {
    // Five characters, and no Node errno (EPIPE, EPERM, EROFS: no SQLSTATE class starts with E).
    if (typeof e.code === 'string' && /^[0-9A-DF-Z][0-9A-Z]{4}$/.test(e.code)) return e.code;
  }
  return undefined;
}

/** drizzle's wrapper of a failed statement (DrizzleQueryError: `query`, `params`, "Failed query: ..."). */
function failedQueryOf(error: unknown): { query: string; cause: unknown } | undefined {
  for (const e of causeChain(error) as Iterable<ErrorLike>) {
    const query = (e as { query?: unknown }).query;
    if (typeof query === 'string' && 'params' in e) return { query, cause: e.cause };
    if (typeof e.message === 'string' && e.message.startsWith('Failed query: ')) {
      return { query: e.message.slice('Failed query: '.length).split('\nparams: ')[0], cause: e.cause };
    }
  }
  return undefined;
}

/** What a statement did, from its parameterised SQL: the data plane's function it calls, its verb and table (`select from lineages`), or its first words. */
function operationOf(query: string): string {
  const call = /\b((?:session|sc|retention)_[a-z_]+)\s*\(/.exec(query);
  if (call) return call[1];
  const words = query.replace(/\s+/g, ' ').trim();
  const verb = /^(select|insert|update|delete)\b/i.exec(words)?.[1].toLowerCase();
  const table = /\b(from|into|update) "?([A-Za-z_][\w$]*)"?/i.exec(words);
  if (verb && table) return verb === 'update' ? `update ${table[2]}` : `${verb} ${table[1].toLowerCase()} ${table[2]}`;
  return words.length > 80 ? `${words.slice(0, 80)}…` : words;
}

/** A double-quoted fragment that names something (a column, a constraint, a type), not a value. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$.]{0,62}$/;

/**
 * The server's message of `cause`, fit to show: its first line, every quoted value (anything
 * quoted that is not an identifier) blanked, at most 200 characters. Never DETAIL or WHERE.
 */
function serverMessage(cause: unknown): string {
  const raw = isObject(cause) && typeof cause.message === 'string' ? cause.message : '';
  const line = raw.split('\n')[0].trim();
  const blanked = line.replace(/"([^"]*)"/g, (quoted, inner: string) => (IDENTIFIER.test(inner) ? quoted : '"…"')).replace(/'[^']*'/g, "'…'");
  return blanked.length > 200 ? `${blanked.slice(0, 200)}…` : blanked;
}

/**
 * Any error of a database call as a typed error that carries no parameter: an error that is
 * already typed (a SessionCompactionError) as it is; the database not reachable as a
 * DatabaseUnreachableError; a failed statement (drizzle's wrapper, or a pg error with a
 * SQLSTATE) as a DatabaseQueryError; anything else (not a database error) unchanged.
 */
export function typedDatabaseError(error: unknown, url: string | undefined): unknown {
  if (error instanceof SessionCompactionError) return error;
  const unreachable = databaseErrorFrom(error, url);
  if (unreachable instanceof DatabaseUnreachableError) return unreachable;
  const failed = failedQueryOf(error);
  const code = sqlStateOf(error);
  if (!failed && !code) return error;
  const cause = failed ? innermost(failed.cause) : error;
  return new DatabaseQueryError(failed ? operationOf(failed.query) : 'a statement', redacted(serverMessage(cause), url) || 'the statement failed', code);
}

/** The last error of a chain of drizzle wrappers (a nested wrapper's cause). */
function innermost(error: unknown): unknown {
  let e = error;
  for (let depth = 0; depth < 10 && isObject(e) && isObject(e.cause) && typeof e.message === 'string' && e.message.startsWith('Failed query: '); depth++)
    e = e.cause;
  return e;
}

/**
 * Errors raised by the data-plane SQL functions (SQLSTATE SC400..SC412, DETAIL a JSON object
 * naming the type), mapped to the typed errors every other layer uses; and jsonb's refusal
 * of U+0000 (22P05), which the client's text rule refuses first, so only a message past it
 * meets it.
 */
export function dataPlaneError(error: unknown): unknown {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === '22P05') return new InvalidInputError('messages', 'contains a NUL character or an unpaired surrogate');
  }
  let e: unknown = error;
  while (e && !(typeof (e as { code?: unknown }).code === 'string' && /^SC\d{3}$/.test((e as { code: string }).code))) e = (e as { cause?: unknown }).cause;
  if (!e) return error;
  let detail: Record<string, string>;
  try {
    detail = JSON.parse(String((e as { detail?: string }).detail ?? '{}'));
  } catch {
    return error;
  }
  switch (detail.type) {
    case 'InvalidInputError':
      return new InvalidInputError(detail.field, detail.detail);
    case 'SessionNotFoundError':
      return new SessionNotFoundError(detail.sessionId);
    case 'SessionConflictError':
      return new SessionConflictError(detail.sessionId, detail.detail);
    case 'LineageClosedError':
      return new LineageClosedError(detail.lineageId);
    case 'LineageErasedError':
      return new LineageErasedError(detail.sessionId);
    case 'HistoryMismatchError':
      return new HistoryMismatchError(detail.sessionId, detail.detail);
    default:
      return error;
  }
}

/**
 * A connection the server refuses while it cannot take it yet, or that it lost: the server
 * shutting down, starting up or out of connection slots, the connection reset or timed out.
 * Not a refused login (28000, 28P01), a database that does not exist (3D000), a host name
 * that does not resolve, a socket file that is not there, or a server without SSL: those
 * stay the same on the next attempt.
 */
const UNREACHABLE_FOR_GOOD = new Set(['28000', '28P01', '3D000', 'ENOTFOUND', 'EAI_FAIL', 'EAI_NONAME', 'ENOENT', 'EACCES']);

/**
 * SQLSTATEs of a write the database will refuse on every attempt (a value it cannot store):
 * an activity's job fails at once, named as a database failure, instead of retrying to its limit.
 */
const REFUSED_FOR_GOOD = new Set(['22P05', '22021', '22P02', '22001', '22003', '54000']);

/** What a Postgres failure means to whoever meets it. */
export interface PostgresErrorClass {
  /**
   * `unreachable`: the server was not reached or the connection was lost (DatabaseUnreachableError);
   * `data-plane`: a data-plane SQL function's typed refusal (SQLSTATE SCnnn);
   * `query`: any other statement the server failed (a SQLSTATE, or drizzle's wrapper);
   * `other`: not a database error.
   */
  kind: 'unreachable' | 'data-plane' | 'query' | 'other';
  /** The SQLSTATE or the Node error code that decided it, if any. */
  code?: string;
  /** The same call may succeed if made again: an idempotent read retries it (readWithRetry). */
  transient: boolean;
  /** The server will refuse the same write on every attempt: an activity does not retry it. */
  refusedForGood: boolean;
}

/** The one classification of a Postgres error, used by the client, the CLI, the activities and the retrying reader. */
export function classifyPostgresError(error: unknown): PostgresErrorClass {
  const unreachable = error instanceof DatabaseUnreachableError ? error : unreachableCause(error);
  if (unreachable) {
    const code = typeof unreachable.code === 'string' ? unreachable.code : undefined;
    const message = typeof unreachable.message === 'string' ? unreachable.message : '';
    const forGood = (code !== undefined && UNREACHABLE_FOR_GOOD.has(code)) || message === 'The server does not support SSL connections';
    return { kind: 'unreachable', code, transient: !forGood, refusedForGood: false };
  }
  if (error instanceof DatabaseQueryError)
    return { kind: 'query', code: error.code, transient: false, refusedForGood: error.code !== undefined && REFUSED_FOR_GOOD.has(error.code) };
  const code = sqlStateOf(error);
  if (code !== undefined && /^SC\d{3}$/.test(code)) return { kind: 'data-plane', code, transient: false, refusedForGood: false };
  if (code !== undefined || failedQueryOf(error))
    return { kind: 'query', code, transient: false, refusedForGood: code !== undefined && REFUSED_FOR_GOOD.has(code) };
  return { kind: 'other', transient: false, refusedForGood: false };
}
