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

export const USER_ERROR_TYPES = [
  'InvalidInputError',
  'SessionNotFoundError',
  'SessionConflictError',
  'BackgroundCompactionRejectedError',
  'LineageClosedError',
] as const;

export class CompactionNotFoundError extends SessionCompactionError {
  constructor(public readonly compactionId: string) {
    super(`compaction ${JSON.stringify(compactionId)} does not exist`);
  }
}
