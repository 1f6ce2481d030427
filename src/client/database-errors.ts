/**
 * What a Postgres failure says to an operator. pg reports an unreachable server as a bare
 * socket error (ECONNREFUSED, ENOTFOUND, ...) and drizzle wraps it in "Failed query: <sql>
 * params: <every parameter>", which for an append is the whole batch of messages.
 * databaseErrorFrom turns the first kind into a DatabaseUnreachableError naming host:port (from
 * the URL, never its password); queryErrorMessage gives any other failed query's message
 * without its parameters. Pure: no I/O.
 */
import { DatabaseUnreachableError } from '../errors';

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
  const seen = new Set<unknown>();
  for (let e: unknown = error; isObject(e) && !seen.has(e); e = e.cause) {
    seen.add(e);
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

const FAILED_QUERY = /^Failed query: ([\s\S]*?)\nparams: [\s\S]*$/;

/**
 * The message of `error` fit to print: for a failed query (drizzle's "Failed query: <sql>
 * params: <values>"), the query and its cause's message without the parameters, which may be
 * a whole batch of messages; any other error's message as it is.
 */
export function queryErrorMessage(error: unknown): string {
  const message = isObject(error) && typeof error.message === 'string' ? error.message : String(error);
  const failed = FAILED_QUERY.exec(message);
  if (!failed) return message;
  const query = failed[1].replace(/\s+/g, ' ').trim();
  // The cause's message may be drizzle's too (a nested wrapper): it is stripped the same way.
  const cause = isObject(error) && error.cause !== undefined && error.cause !== error ? queryErrorMessage(error.cause).trim() : '';
  return `Failed query: ${query}${cause ? `: ${cause}` : ''}`;
}
