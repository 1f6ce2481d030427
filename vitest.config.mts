import { defineConfig } from 'vitest/config';

export default defineConfig({
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
  },
});
