/**
 * The typed error a caller gets for a failure the client did not raise itself: an Update
 * validator's refusal (src/client/rpc-errors.ts) and a data-plane SQL function's error
 * (src/db/data-plane.ts), the table of contract/vectors/failure-errors.json, which the
 * Python client's tests run too.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { typedErrorFrom, typedErrorOfFailure } from '../../src/client/rpc-errors';
import { PROJECT_ROOT } from '../../src/config';
import { dataPlaneError } from '../../src/db/postgres-errors';

type Expected = { error: string; field?: string; message: string } | null;
const vectors = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'contract/vectors/failure-errors.json'), 'utf8')) as {
  lineageId: string;
  updateFailures: Array<{ name: string; type: string | null; message: string; expect: Expected }>;
  sqlErrors: Array<{ name: string; sqlstate: string; detail: string | null; expect: Expected }>;
};

/** What the caller sees of a typed error: its name, field and message. */
const seen = (error: unknown) => {
  const { name, message, field } = error as { name: string; message: string; field?: string };
  return { error: name, ...(field === undefined ? {} : { field }), message };
};

describe("an Update validator's refusal (failure-errors.json updateFailures)", () => {
  it.each(vectors.updateFailures)('$name', (vector) => {
    const typed = typedErrorOfFailure(vector.type ?? undefined, vector.message, vectors.lineageId);
    expect(typed === undefined ? null : seen(typed)).toEqual(vector.expect);
    // As compact() meets it: the SDK's WorkflowUpdateFailedError, passed on when no caller caused it.
    const failed = new WorkflowUpdateFailedError(
      'Workflow Update failed',
      ApplicationFailure.create({ message: vector.message, type: vector.type ?? undefined }),
    );
    const given = typedErrorFrom(failed, vectors.lineageId);
    expect(vector.expect === null ? given === failed : seen(given)).toEqual(vector.expect ?? true);
  });
});

describe("a data-plane SQL function's error (failure-errors.json sqlErrors)", () => {
  it.each(vectors.sqlErrors)('$name', (vector) => {
    const pgError = Object.assign(new Error('raised by the function'), { code: vector.sqlstate, ...(vector.detail === null ? {} : { detail: vector.detail }) });
    const mapped = dataPlaneError(pgError);
    expect(mapped === pgError ? null : seen(mapped)).toEqual(vector.expect);
    // drizzle wraps the pg error ("Failed query: ..."): the mapping looks through it.
    const wrapped = new Error('Failed query: select session_append(...)', { cause: pgError });
    const mappedWrapped = dataPlaneError(wrapped);
    expect(mappedWrapped === wrapped ? null : seen(mappedWrapped)).toEqual(vector.expect);
  });
});
