/** How the command line reports a failure: one line on stderr (and JSON on stdout with --json), and its exit code. */
import { typedDatabaseError } from '../db/postgres-errors';
import { CallTimeoutError, DatabaseQueryError, DatabaseUnreachableError, RequestLostError, RetentionRunningError, SessionCompactionError } from '../errors';
import { USAGE } from './commands';
import { UsageError } from './input';

/** 3: wait for the request or send it again (or for the running retention); 1: operational (the database unreachable, ...); 2: bad input or an unknown session. */
function exitCodeOf(error: unknown): number {
  if (error instanceof CallTimeoutError || error instanceof RequestLostError || error instanceof RetentionRunningError) return 3;
  if (error instanceof DatabaseUnreachableError || error instanceof DatabaseQueryError) return 1;
  if (error instanceof SessionCompactionError || error instanceof UsageError) return 2;
  return 1;
}

/** Prints `error` (on stderr, and as JSON on stdout with --json) and returns the exit code. */
export function report(error: unknown, json: boolean, databaseUrl: string | undefined, out: (text: string) => void, err: (text: string) => void): number {
  // A failed query's message without its parameters (for an append, every message of the batch).
  const mapped = typedDatabaseError(error, databaseUrl);
  const message = mapped instanceof Error ? mapped.message : String(mapped);
  if (json) {
    const fields = mapped && typeof mapped === 'object' ? (mapped as { field?: unknown; requestId?: unknown }) : {};
    const type = mapped instanceof UsageError ? 'UsageError' : mapped instanceof Error ? mapped.name : 'Error';
    out(
      JSON.stringify(
        {
          error: {
            type,
            message,
            ...(typeof fields.field === 'string' ? { field: fields.field } : {}),
            ...(mapped instanceof CallTimeoutError || mapped instanceof RequestLostError ? { requestId: fields.requestId } : {}),
            ...(mapped instanceof DatabaseUnreachableError ? { address: mapped.address, ...(mapped.code ? { code: mapped.code } : {}) } : {}),
            ...(mapped instanceof RetentionRunningError ? { workflowId: mapped.workflowId } : {}),
            ...(mapped instanceof DatabaseQueryError ? { operation: mapped.operation, ...(mapped.code ? { code: mapped.code } : {}) } : {}),
          },
        },
        null,
        2,
      ),
    );
  }
  err(`error: ${message}${mapped instanceof UsageError ? `\n\n${USAGE}` : ''}`);
  return exitCodeOf(mapped);
}
