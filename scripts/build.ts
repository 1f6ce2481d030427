/**
 * `npm run build`: what the production image runs, written to dist/ (or `--out-dir <dir>`):
 *
 * 1. src/ compiled to CommonJS JavaScript (tsconfig.build.json; src/dev, the dev stack, is
 *    left out), so the image runs `node dist/worker.js` with no tsx and no TypeScript;
 * 2. the files the code reads by path from beside itself: the SQL migrations
 *    (`MIGRATIONS_DIR`, db/migrations), the SQL functions (`FUNCTIONS_DIR`, db/functions) and
 *    the failure converter (codec/failure-converter.js,
 *    which the SDK loads by `failureConverterPath`);
 * 3. the workflow bundles, built now rather than at every worker start, from the compiled
 *    workflows, exactly as the worker would bundle them (src/worker.ts `workflowCode`): one
 *    with the failure converter of encrypted payloads bundled in, one with the SDK default.
 *
 * The output directory must sit inside the project (its node_modules are found from there).
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode } from '@temporalio/worker';
import ts from 'typescript';
import { PROJECT_ROOT } from '../src/config';
import { PREBUILT_WORKFLOW_BUNDLES } from '../src/worker';

/** tsconfig.build.json's files and options, writing to `outDir`. */
function buildConfig(outDir: string): ts.ParsedCommandLine {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(PROJECT_ROOT, 'tsconfig.build.json'),
    { outDir },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  )!;
  return config;
}

/**
 * Compiles the files and with the options of tsconfig.build.json, one file at a time
 * (`transpileModule`): the JavaScript `tsc -p tsconfig.build.json` emits, as long as every file
 * compiles on its own (no `const enum`), in a few seconds instead of tens, since no program is type-checked;
 * type checking is `npm run typecheck`'s job. Syntax errors still fail the build.
 */
function compile(outDir: string): void {
  const config = buildConfig(outDir);
  const problems = [...config.errors];
  for (const fileName of config.fileNames) {
    const { outputText, diagnostics = [] } = ts.transpileModule(readFileSync(fileName, 'utf8'), {
      compilerOptions: config.options,
      fileName,
      reportDiagnostics: true,
    });
    problems.push(...diagnostics);
    const target = path.join(outDir, path.relative(config.options.rootDir!, fileName)).replace(/\.ts$/, '.js');
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  if (problems.length > 0) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => PROJECT_ROOT, getNewLine: () => '\n' };
    throw new Error(`compiling src/ failed:\n${ts.formatDiagnostics(problems, host)}`);
  }
}

/** The `.d.ts` files the package's `types` point at (tsc's declaration emit over tsconfig.build.json). */
function declarations(outDir: string): void {
  const config = buildConfig(outDir);
  const options = { ...config.options, declaration: true, emitDeclarationOnly: true, noEmit: false };
  const program = ts.createProgram(config.fileNames, options);
  const { diagnostics } = program.emit();
  if (diagnostics.length > 0) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => PROJECT_ROOT, getNewLine: () => '\n' };
    throw new Error(`writing the types failed:\n${ts.formatDiagnostics(diagnostics, host)}`);
  }
}

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

  await step(`compiled src/ to ${relative}/`, () => compile(outDir));

  await step(`wrote the .d.ts types to ${relative}/`, () => declarations(outDir));

  await step('copied the migrations, the SQL functions and the failure converter', () => {
    cpSync(path.join(PROJECT_ROOT, 'src/db/migrations'), path.join(outDir, 'db/migrations'), { recursive: true });
    cpSync(path.join(PROJECT_ROOT, 'src/db/functions'), path.join(outDir, 'db/functions'), { recursive: true });
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
