/**
 * Errors a user of the service can cause. Each has a stable `name` (also the Temporal
 * failure type when thrown from workflow code) so callers in any language can match on it.
 * This module has no imports: workflow code may use it.
 */

export class SessionCompactionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Input that breaks the contract: the field names the offending path, e.g. `messages[3].role`. */
export class InvalidInputError extends SessionCompactionError {
  constructor(
    public readonly field: string,
    detail: string,
  ) {
    super(`invalid ${field}: ${detail}`);
  }
}

export class SessionNotFoundError extends SessionCompactionError {
  constructor(public readonly sessionId: string) {
    super(`session ${JSON.stringify(sessionId)} does not exist`);
  }
}

/** A session with this id exists with other parameters. */
export class SessionConflictError extends SessionCompactionError {
  constructor(
    public readonly sessionId: string,
    detail: string,
  ) {
    super(`session ${JSON.stringify(sessionId)} already exists ${detail}`);
  }
}

/** Background helpers (review agents sharing a session id) may never compact a session. */
export class BackgroundCompactionRejectedError extends SessionCompactionError {
  constructor() {
    super('a background request may not compact a session; only the session owner can');
  }
}

/** The lineage was closed: it takes no more compactions or appends. */
export class LineageClosedError extends SessionCompactionError {
  constructor(public readonly lineageId: string) {
    super(`session lineage ${JSON.stringify(lineageId)} is closed`);
  }
}

/**
 * The lineage this caller wrote to (the incarnation it learnt at create or first use) was
 * erased; its id is gone, or names a lineage created again since. Nothing was written: the
 * old writer's messages never land in the new lineage. Create the session again to write to
 * the lineage that has the id now.
 */
export class LineageErasedError extends SessionCompactionError {
  constructor(public readonly sessionId: string) {
    super(
      `the session lineage of ${JSON.stringify(sessionId)} that this caller wrote to was erased; create the session again to write to the lineage that has its id now`,
    );
  }
}

/**
 * The head's last messages are not the ones the caller said they would be (a framework's
 * "replace this exact suffix"): nothing was changed. Read the head again and decide anew.
 */
export class HistoryMismatchError extends SessionCompactionError {
  constructor(
    public readonly sessionId: string,
    public readonly detail: string,
  ) {
    super(`the head of session ${JSON.stringify(sessionId)} changed: ${detail}; nothing was changed`);
  }
}

export const USER_ERROR_TYPES = [
  'InvalidInputError',
  'SessionNotFoundError',
  'SessionConflictError',
  'BackgroundCompactionRejectedError',
  'LineageClosedError',
  'LineageErasedError',
] as const;

export class CompactionNotFoundError extends SessionCompactionError {
  constructor(public readonly compactionId: string) {
    super(`compaction ${JSON.stringify(compactionId)} does not exist`);
  }
}

/**
 * The caller's deadline passed (or its AbortSignal fired) before the answer came. The request
 * may still complete: wait again with the same request id.
 */
export class CallTimeoutError extends SessionCompactionError {
  constructor(
    public readonly requestId: string | undefined,
    detail: string,
  ) {
    super(`${detail}${requestId ? `; the request may still complete: wait for request ${requestId} again` : ''}`);
  }
}

/**
 * The request will never be answered by the workflow that was asked: its run ended without
 * it (closed, or completed while idle), or a signal never landed. Send it again with the same
 * request id: a request id is never run twice.
 */
export class RequestLostError extends SessionCompactionError {
  constructor(
    public readonly requestId: string,
    detail: string,
  ) {
    super(`request ${requestId} was lost: ${detail}; send it again with the same requestId`);
  }
}

/**
 * Postgres could not be reached: it is down, the address (DATABASE_URL) is wrong, it refused
 * the connection or the login, or the connection broke. Operational, not bad input: try again
 * once the database is back (a write whose connection broke mid-call may have landed: resend
 * it the way its API says, e.g. an append with the same appendKey). `address` is host:port,
 * never the password; `code` is the cause's code when it has one (ECONNREFUSED, ENOTFOUND,
 * 57P03, ...). Not in USER_ERROR_TYPES.
 */
export class DatabaseUnreachableError extends SessionCompactionError {
  constructor(
    public readonly address: string,
    public readonly reason: string,
    public readonly code?: string,
  ) {
    super(`the database is unreachable at ${address}: ${reason}`);
  }
}

/**
 * A manual retention run was asked for while one is still running (an earlier run whose
 * caller went away, e.g. an interrupted `sessions retention run`, or a scheduled run): it
 * would overlap it. Nothing was started. Wait for the running one (`workflowId`) to finish,
 * or cancel it, and run again.
 */
export class RetentionRunningError extends SessionCompactionError {
  constructor(public readonly workflowId: string) {
    super(`retention is already running (workflow ${workflowId}); nothing was started: wait for that run to finish, or cancel it, then run again`);
  }
}

/**
 * Postgres failed a statement for a reason other than not being reachable: it refused a value,
 * ran out of room, was cancelled, or a constraint held. `operation` names the data plane's SQL
 * function (session_append, ...) or the statement's first words; `code` is the SQLSTATE when
 * the server gave one; `reason` is the server's message with every quoted value blanked. Never
 * a statement's parameters (an appended batch, a summary): the driver's own error, which holds
 * them, is not kept. Operational: not in USER_ERROR_TYPES.
 */
export class DatabaseQueryError extends SessionCompactionError {
  constructor(
    public readonly operation: string,
    public readonly reason: string,
    public readonly code?: string,
  ) {
    super(`the database failed ${operation}: ${reason}${code ? ` (SQLSTATE ${code})` : ''}`);
  }
}

/**
 * The deployment encrypts what it puts in Temporal history (PAYLOAD_ENCRYPTION_KEYS, AES-GCM)
 * and this client cannot read it: it has no payload keys, or not the key (`keyId`) the answer
 * was encrypted with. Configure the client with the worker's PAYLOAD_ENCRYPTION_KEYS. The
 * request may have run: send it again with the same request id once the keys are set.
 */
export class PayloadKeysMissingError extends SessionCompactionError {
  constructor(public readonly keyId?: string) {
    super(
      keyId === undefined
        ? 'the deployment encrypts its Temporal payloads and this client has no PAYLOAD_ENCRYPTION_KEYS: configure the keys the worker uses'
        : `the deployment encrypted a payload with key ${JSON.stringify(keyId)}, which this client's PAYLOAD_ENCRYPTION_KEYS lack: configure the keys the worker uses`,
    );
  }
}

/**
 * An encrypted payload this process holds the key for does not decrypt: too short to be one,
 * an unknown envelope, altered, or bound to another namespace or workflow than the one
 * reading it (src/codec/aes-gcm-codec.ts).
 */
export class PayloadDecryptionError extends SessionCompactionError {
  constructor(public readonly reason: string) {
    super(`an encrypted payload was refused: ${reason}`);
  }
}

/** `error` and each of its causes, outermost first (a cycle ends the walk). */
export function* causeChain(error: unknown): Generator<{ readonly [key: string]: unknown }> {
  const seen = new Set<unknown>();
  for (let e: unknown = error; typeof e === 'object' && e !== null && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    yield e as { readonly [key: string]: unknown };
  }
}
