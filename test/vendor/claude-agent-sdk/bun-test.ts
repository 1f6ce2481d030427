/**
 * `bun:test` for the vendored conformance suite (./conformance.ts, unmodified): the suite imports
 * `test` and `expect` from Bun's test runner; under Vitest they are Vitest's. vitest.config.mts
 * aliases `bun:test` to this module, and tsconfig.json's `paths` does the same for the compiler.
 */
export { expect, test } from 'vitest';
