import { describe, expect, it } from 'vitest';
import { SessionCompactionError } from '../../src/errors';
import { assertWorkerDependencies, missingWorkerDependencies, WorkerDependenciesMissingError, WORKER_PEER_DEPENDENCIES } from '../../src/worker-dependencies';

describe('the worker subpath without its optional peer dependencies', () => {
  it('finds every worker package in this checkout', () => {
    expect(missingWorkerDependencies()).toEqual([]);
    expect(() => assertWorkerDependencies()).not.toThrow();
  });

  it('names the missing packages and the exact npm install line', () => {
    const absent = new Set(['openai', '@temporalio/worker']);
    const resolve = (name: string) => {
      if (absent.has(name)) throw new Error(`Cannot find module '${name}'`);
      return name;
    };
    let thrown: unknown;
    try {
      assertWorkerDependencies(resolve);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(WorkerDependenciesMissingError);
    expect(thrown).toBeInstanceOf(SessionCompactionError);
    const error = thrown as WorkerDependenciesMissingError;
    expect(error.missing).toEqual(WORKER_PEER_DEPENDENCIES.filter((name) => absent.has(name)));
    expect(error.message).toContain('npm install @temporalio/worker openai');
  });
});
