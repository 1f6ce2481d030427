import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The longest files first, so the two workers finish together. Vitest orders by the durations
 * of the last run, which a clean clone (CI) does not have; these, longest first, are from runs
 * on 2 cores. Every other file follows in Vitest's own order.
 */
const LONGEST = [
  'test/stack/chaos.test.ts',
  'test/stack/cli.test.ts',
  'test/stack/dev-shutdown.test.ts',
  'test/stack/dialect-agent-loop.test.ts',
  'test/stack/agent-loop.test.ts',
  'test/stack/lease.test.ts',
  'test/stack/operator.test.ts',
  'test/stack/data-lifecycle.test.ts',
  'test/stack/build.test.ts',
  'test/unit/lint-rules.test.ts',
  'test/replay/evolution.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const at = LONGEST.findIndex((name) => f.moduleId.endsWith(name));
      return at < 0 ? LONGEST.length : at;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  // The vendored Claude Agent SDK conformance suite imports Bun's test runner: Vitest's, by this shim.
  resolve: { alias: { 'bun:test': fileURLToPath(new URL('./test/vendor/claude-agent-sdk/bun-test.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    // The Temporal native bridge segfaults under worker threads; forks are safe.
    pool: 'forks',
    // One Temporal dev server and one Postgres for the run, started here.
    globalSetup: ['test/setup/global-setup.ts'],
    setupFiles: ['test/setup/quiet-runtime.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
  },
});
