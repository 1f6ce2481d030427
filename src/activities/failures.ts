/**
 * What an activity's failure may say. Temporal records it in workflow history, the worker logs
 * it and the activity's span records it, so it is built here, once for every activity: a
 * database failure as a `DatabaseError` failure that carries no statement parameter (drizzle's
 * error holds them all: a commit's summary and ledger, an appended batch; src/db/postgres-errors.ts), a
 * typed error of src/errors.ts as it is, any other error as a failure of its name with its
 * first line and no configured secret; never the original error's stack or cause.
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { classifyPostgresError, typedDatabaseError } from '../db/postgres-errors';
import { DatabaseQueryError, DatabaseUnreachableError, SessionCompactionError } from '../errors';
import { redactSecrets } from '../secrets';

export interface FailureContext {
  /** Config.secrets: never in a failure's text. */
  secrets: readonly string[];
  /** DATABASE_URL: its host:port may be named, never its password. */
  databaseUrl?: string;
}

function activityFailure(error: unknown, context: FailureContext): unknown {
  // Temporal's own (a cancellation, a summariser's classified failure) are built without provider text.
  if (error instanceof TemporalFailure) {
    if (error instanceof ApplicationFailure) error.message = redactSecrets(error.message, context.secrets);
    return error;
  }
  const typed = typedDatabaseError(error, context.databaseUrl);
  if (typed instanceof DatabaseQueryError) {
    const message = `database error ${typed.code ?? 'without SQLSTATE'}: ${typed.message}`;
    return ApplicationFailure.create({ message, type: 'DatabaseError', nonRetryable: classifyPostgresError(typed).refusedForGood });
  }
  if (typed instanceof DatabaseUnreachableError) return ApplicationFailure.retryable(typed.message, 'DatabaseError');
  if (typed instanceof SessionCompactionError) return typed;
  const name = typed instanceof Error && /^[A-Za-z]\w{0,63}$/.test(typed.name) ? typed.name : 'Error';
  const line = (typed instanceof Error ? typed.message : String(typed)).split('\n')[0].slice(0, 300);
  return ApplicationFailure.retryable(redactSecrets(line, context.secrets), name);
}

/** `activities` with every failure made by activityFailure. */
export function withActivityFailures<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T, context: FailureContext): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: never[]) => {
        try {
          return await fn(...args);
        } catch (error) {
          throw activityFailure(error, context);
        }
      },
    ]),
  ) as T;
}
