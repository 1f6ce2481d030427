/**
 * `npm run build`: what the production image runs, written to dist/ (or `--out-dir <dir>`):
 *
 * 1. src/ compiled to CommonJS JavaScript (tsconfig.build.json; src/dev, the dev stack, is
 *    left out), so the image runs `node dist/worker.js` with no tsx and no TypeScript;
 * 2. the files the code reads by path from beside itself: the SQL migrations
 *    (`MIGRATIONS_DIR`, db/migrations) and the failure converter (codec/failure-converter.js,
 *    which the SDK loads by `failureConverterPath`);
 * 3. the workflow bundles, built now rather than at every worker start, from the compiled
 *    workflows, exactly as the worker would bundle them (src/worker.ts `workflowCode`): one
 *    with the failure converter of encrypted payloads bundled in, one with the SDK default.
 *
 * The output directory must sit inside the project (its node_modules are found from there).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode } from '@temporalio/worker';
import { PROJECT_ROOT } from '../src/config';
import { PREBUILT_WORKFLOW_BUNDLES } from '../src/worker';

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} } as never;

export async function build(outDir: string): Promise<void> {
  const relative = path.relative(PROJECT_ROOT, outDir);
  if (!relative || relative.startsWith('..') || path.isAbsolute(relative) || relative.split(path.sep)[0] === 'src') {
    throw new Error(`the output directory must be a directory inside ${PROJECT_ROOT}, not src/ or the project itself: ${outDir}`);
  }
  const step = async (name: string, run: () => unknown) => {
    const started = Date.now();
    await run();
    console.log(`${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  };
  rmSync(outDir, { recursive: true, force: true });

  // --noCheck: emit only (the same JavaScript, in about half the time); type checking is
  // `npm run typecheck`'s job.
  await step(`compiled src/ to ${relative}/`, () =>
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(PROJECT_ROOT, 'tsconfig.build.json'), '--noCheck', '--outDir', outDir], { stdio: 'inherit' }),
  );

  await step('copied the migrations and the failure converter', () => {
    cpSync(path.join(PROJECT_ROOT, 'src/db/migrations'), path.join(outDir, 'db/migrations'), { recursive: true });
    cpSync(path.join(PROJECT_ROOT, 'src/codec/failure-converter.js'), path.join(outDir, 'codec/failure-converter.js'));
  });

  // The worker bundles with `failureConverterPath` only when payloads are encrypted
  // (encryptedDataConverter), so each case gets its own bundle.
  const workflowsPath = path.join(outDir, 'workflows/index.js');
  const failureConverterPath = path.join(outDir, 'codec/failure-converter.js');
  for (const [name, file] of Object.entries(PREBUILT_WORKFLOW_BUNDLES)) {
    await step(`bundled the workflows into ${relative}/${file} (${name})`, async () => {
      const { code } = await bundleWorkflowCode({ workflowsPath, logger: quiet, ...(name === 'encrypted' ? { failureConverterPath } : {}) });
      writeFileSync(path.join(outDir, file), code);
    });
  }
  if (!existsSync(path.join(outDir, 'worker.js'))) throw new Error(`the build wrote no ${relative}/worker.js`);
}

if (require.main === module) {
  const { values } = parseArgs({ options: { 'out-dir': { type: 'string', default: 'dist' } } });
  const outDir = path.resolve(values['out-dir']!);
  const started = Date.now();
  build(outDir).then(
    () => console.log(`build done in ${((Date.now() - started) / 1000).toFixed(1)} s`),
    (error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exitCode = 1;
    },
  );
}
