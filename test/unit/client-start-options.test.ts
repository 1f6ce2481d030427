/** What every start of a lineage's workflow carries (src/client/start-options.ts): the table of contract/vectors/start-options.json, which the Python client's tests run too. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOIN_RUNNING_WORKFLOW, type LineageStart, lineageStartOptions } from '../../src/client/start-options';
import { PROJECT_ROOT } from '../../src/config';
import type { LineageSettings } from '../../src/workflows/settings';

const vectors = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'contract/vectors/start-options.json'), 'utf8')) as {
  taskQueue: string;
  settings: LineageSettings;
  idConflictPolicy: string;
  idReusePolicy: string;
  cases: Array<{ name: string; lineage: LineageStart; expect: { input: Record<string, unknown> } & Record<string, unknown> }>;
};

describe('the workflow start options (contract/vectors/start-options.json)', () => {
  it.each(vectors.cases)('$name', ({ lineage, expect: expected }) => {
    const options = lineageStartOptions(lineage, vectors.settings, vectors.taskQueue);
    expect({
      workflowId: options.workflowId,
      taskQueue: options.taskQueue,
      input: options.args[0],
      staticSummary: options.staticSummary,
      staticDetails: options.staticDetails,
      searchAttributes: Object.fromEntries(options.typedSearchAttributes.map(({ key, value }) => [key.name, value])),
    }).toEqual({ ...expected, taskQueue: vectors.taskQueue, input: { ...expected.input, settings: vectors.settings } });
    expect(options).not.toHaveProperty('workflowIdReusePolicy');
  });

  it('joins a running workflow; the id reuse policy is the SDK default', () => {
    expect(JOIN_RUNNING_WORKFLOW).toEqual({ workflowIdConflictPolicy: vectors.idConflictPolicy });
    expect(vectors.idReusePolicy).toBe('ALLOW_DUPLICATE');
  });
});
