/**
 * What the error of a Temporal call means (src/client/rpc-errors.ts): the table of
 * contract/vectors/rpc-errors.json, which the Python client's tests run too, and the checks
 * only the TypeScript client makes (its gRPC retry, a NOT_FOUND of another call).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowNotFoundError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  GRPC_STATUS,
  isRunEndedError,
  isTransientConnectionError,
  isUpdateLimitError,
  isUpdateRefusalStatus,
  isWorkflowNotFoundError,
} from '../../src/client/rpc-errors';
import { PROJECT_ROOT } from '../../src/config';

type Layer = { grpc?: string; failure?: string; sdk?: string; message: string };
interface RpcErrorCase {
  name: string;
  error: Layer[];
  updateLimit: boolean;
  runEnded: boolean;
  transient: boolean;
  workflowNotFound: boolean;
}

const { cases } = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'contract/vectors/rpc-errors.json'), 'utf8')) as { cases: RpcErrorCase[] };
const GRPC_CODES: Record<string, number> = { ...GRPC_STATUS, FAILED_PRECONDITION: 9 };

/** A layer as the TypeScript SDK makes it: a gRPC ServiceError has code, details and metadata. */
function errorOf(layer: Layer, cause: Error | undefined): Error {
  if (layer.grpc !== undefined) {
    if (!(layer.grpc in GRPC_CODES)) throw new Error(`no code for ${layer.grpc}`);
    return Object.assign(new Error(`${GRPC_CODES[layer.grpc]} ${layer.grpc}: ${layer.message}`, { cause }), {
      code: GRPC_CODES[layer.grpc],
      details: layer.message,
      metadata: {},
    });
  }
  if (layer.failure !== undefined) return ApplicationFailure.create({ message: layer.message, type: layer.failure, cause });
  if (layer.sdk === 'WorkflowNotFoundError') return new WorkflowNotFoundError(layer.message, 'session-lineage/x', undefined);
  if (layer.sdk === 'WorkflowUpdateRPCTimeoutOrCancelledError') return new WorkflowUpdateRPCTimeoutOrCancelledError(layer.message, cause && { cause });
  if (layer.sdk !== undefined) throw new Error(`no SDK error ${layer.sdk}`);
  return new Error(layer.message, { cause });
}

const chainOf = (layers: Layer[]) => layers.reduceRight<Error | undefined>((cause, layer) => errorOf(layer, cause), undefined)!;

describe('the classification of RPC errors (contract/vectors/rpc-errors.json)', () => {
  it.each(cases)('$name', (vector) => {
    const error = chainOf(vector.error);
    expect({
      updateLimit: isUpdateLimitError(error),
      runEnded: isRunEndedError(error),
      transient: isTransientConnectionError(error),
      workflowNotFound: isWorkflowNotFoundError(error),
    }).toEqual({ updateLimit: vector.updateLimit, runEnded: vector.runEnded, transient: vector.transient, workflowNotFound: vector.workflowNotFound });
  });

  it('tells every kind apart from every other somewhere in the table', () => {
    for (const kind of ['updateLimit', 'runEnded', 'transient', 'workflowNotFound'] as const) {
      expect([kind, new Set(cases.map((c) => c[kind]))]).toEqual([kind, new Set([true, false])]);
    }
  });
});

describe('the checks only the TypeScript client makes', () => {
  it.each([
    [{ code: 8, details: 'limit on number of concurrent in-flight updates has been reached (10)' }, true],
    [{ code: 8, details: 'too many outstanding Update requests' }, true],
    [{ code: 8, details: 'namespace rate limit exceeded' }, false],
    [{ code: 14, details: 'update: connection refused' }, false],
  ])('the gRPC retry leaves %j to compact(): %j', (status, refused) => {
    expect(isUpdateRefusalStatus(status)).toBe(refused);
  });

  it("a NOT_FOUND wrapped in another error is that call's, not the workflow missing", () => {
    const notFound = chainOf([{ grpc: 'NOT_FOUND', message: 'workflow not found' }]);
    expect(isWorkflowNotFoundError(notFound)).toBe(true);
    expect(isWorkflowNotFoundError(new Error('listing failed', { cause: notFound }))).toBe(false);
  });

  it('stops at a cycle in the cause chain', () => {
    const looped: Error & { cause?: unknown } = new Error('boom');
    looped.cause = looped;
    expect([isUpdateLimitError(looped), isRunEndedError(looped), isTransientConnectionError(looped)]).toEqual([false, false, false]);
  });
});
