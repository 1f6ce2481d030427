import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config';
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
    // Each at the range this package peers it at: a bare name takes the latest, which npm refuses.
    const peers = (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }).peerDependencies;
    expect(error.message).toContain(`npm install @temporalio/worker@${peers['@temporalio/worker']} openai@${peers.openai}`);
    expect(peers['@temporalio/worker']).toBeTruthy();
  });

  it("docs/install.md's install line names every worker package at the range this package peers it at", () => {
    const peers = (JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> }).peerDependencies;
    const doc = readFileSync(path.join(PROJECT_ROOT, 'docs/install.md'), 'utf8');
    const line = doc
      .slice(doc.indexOf('npm install session-compaction @temporalio/worker'))
      .split('\n```')[0]
      .replace(/\\\n\s*/g, ' ');
    const specs = new Set(line.split(/\s+/));
    expect(WORKER_PEER_DEPENDENCIES.filter((name) => !specs.has(`${name}@${peers[name]}`))).toEqual([]);
  });
});
