/**
 * What the error of a Temporal call means to SessionsClient: the server's in-flight Update
 * limit (go by signal), a run that ended before it answered (send the same request id again),
 * a server it cannot reach (resend), a workflow that is not there, and the typed error an
 * Update validator's failure stands for. Each walks the error's cause chain, since the SDK
 * wraps the gRPC status. Pure: no I/O. contract/vectors/rpc-errors.json and
 * failure-errors.json hold the cases the Python client agrees on.
 */
import { isGrpcServiceError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { BackgroundCompactionRejectedError, causeChain, InvalidInputError, LineageClosedError } from '../errors';

/** The gRPC status codes the client tells apart (grpc-js's Status enum is not our dependency). */
export const GRPC_STATUS = { DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, RESOURCE_EXHAUSTED: 8, UNAVAILABLE: 14 } as const;

const textOf = (value: unknown) => (value === undefined || value === null ? '' : String(value));

/**
 * True for the server's refusal of an Update beyond the per-workflow in-flight limit, and
 * nothing else (not other rate limits): RESOURCE_EXHAUSTED with the in-flight Update message.
 */
export function isUpdateLimitError(error: unknown): boolean {
  for (const e of causeChain(error)) {
    if (e.code === GRPC_STATUS.RESOURCE_EXHAUSTED && /in-flight update|inflight update/i.test(textOf(e.message) + textOf(e.details))) return true;
  }
  return false;
}

/**
 * True for a gRPC status the connection's retry must leave to compact(): RESOURCE_EXHAUSTED
 * about Updates, which compact() answers at once by signal rather than after backoff.
 */
export function isUpdateRefusalStatus(status: { code: number; details: string }): boolean {
  return status.code === GRPC_STATUS.RESOURCE_EXHAUSTED && /update/i.test(status.details);
}

/** True when the workflow run an Update was sent to ended (completed or continued as new) before answering it. */
export function isRunEndedError(error: unknown): boolean {
  for (const e of causeChain(error)) {
    if (e.name === 'WorkflowNotFoundError' || e.type === 'AcceptedUpdateCompletedWorkflow') return true;
    if (/workflow execution already completed|completed before the update completed|continued as new|continuedasnew/i.test(textOf(e.message))) return true;
  }
  return false;
}

/** True for errors of reaching the server (it restarts, the network blips) or a workflow whose task is being retried: safe to resend. */
export function isTransientConnectionError(error: unknown): boolean {
  for (const e of causeChain(error)) {
    if (e.code === GRPC_STATUS.UNAVAILABLE || e.code === GRPC_STATUS.DEADLINE_EXCEEDED) return true;
    if (e.name === 'WorkflowUpdateRPCTimeoutOrCancelledError') return true;
    // The server will not take an Update while the workflow's last task failed or timed out
    // (its worker froze or died); the task is retried on another worker, so resend.
    if (/workflow task in failed state/i.test(textOf(e.message))) return true;
  }
  return false;
}

/** True when the call's workflow (or run) is not there: never started, or deleted already. Not its causes: a wrapped NOT_FOUND is another call's. */
export function isWorkflowNotFoundError(error: unknown): boolean {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-enum-comparison -- grpc-js's Status enum is not our dependency
  return error instanceof WorkflowNotFoundError || (isGrpcServiceError(error) && error.code === GRPC_STATUS.NOT_FOUND);
}

/**
 * The typed error an Update validator's failure (its ApplicationFailure type and message)
 * stands for, or undefined for a failure no caller can cause. An InvalidInputError's message
 * is `invalid <field>: <detail>` (src/errors.ts), so its field comes back from it; one
 * without a field (from an older worker) is the request's.
 */
export function typedErrorOfFailure(type: string | undefined, message: string, lineageId: string): Error | undefined {
  if (type === 'BackgroundCompactionRejectedError') return new BackgroundCompactionRejectedError();
  if (type === 'LineageClosedError') return new LineageClosedError(lineageId);
  if (type !== 'InvalidInputError') return undefined;
  const invalid = /^invalid (\S+?): ([\s\S]*)$/.exec(message);
  return invalid ? new InvalidInputError(invalid[1], invalid[2]) : new InvalidInputError('request', message);
}

/** `error` as the typed error it was when it is an Update validator's refusal; otherwise `error` itself. */
export function typedErrorFrom(error: unknown, lineageId: string): unknown {
  if (!(error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure)) return error;
  return typedErrorOfFailure(error.cause.type ?? undefined, error.cause.message, lineageId) ?? error;
}
