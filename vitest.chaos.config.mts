import { defineConfig } from 'vitest/config';

// `npm run chaos`: the fault-injection scenarios at full size, one at a time, on the same
// real stack setup as `npm test`.
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.chaos.ts'],
    pool: 'forks',
    globalSetup: ['test/setup/global-setup.ts'],
    setupFiles: ['test/setup/quiet-runtime.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    maxWorkers: 1,
  },
});
