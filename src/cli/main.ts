/**
 * The `sessions` command: a thin shell over SessionsClient. Every command takes --json for
 * machine-readable output. Exit codes: 0 ok (and --help), 2 bad input or unknown session, 3 the
 * call's deadline passed or its request was lost (wait for it, or send it again), or a retention
 * run is still running (wait for it, then run again), 1 other
 * errors (the database unreachable among them: one line with its host:port and the cause).
 */
import { parseArgs } from 'node:util';
import { SessionsClient } from '../client/sessions-client';
import { loadConfig } from '../config';
import { COMMANDS, OPTIONS, type Printer, run, USAGE } from './commands';
import { runDoctor } from './doctor';
import { UsageError } from './input';
import { type ProgressSink, terminalProgress } from './progress-line';
import { report } from './report';

export async function main(
  argv: string[],
  out: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
  err: (text: string) => void = (t) => process.stderr.write(`${t}\n`),
  // The progress line goes to stderr, and only when the command runs in a terminal.
  progressSink: ProgressSink | undefined = process.stdout.isTTY && process.stderr.isTTY ? terminalProgress(process.stderr) : undefined,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    err(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  const json = values.json === true;
  if (!command && !values.help) {
    err(USAGE);
    return 2;
  }
  let databaseUrl = process.env.DATABASE_URL;
  let client: SessionsClient | undefined;
  try {
    // `sessions --help`, `sessions help [command]`, `sessions <command> --help`: the usage, exit 0.
    const topic = command === 'help' ? rest[0] : command;
    if (topic !== undefined && !COMMANDS.includes(topic)) throw new UsageError(`unknown command ${JSON.stringify(topic)}`);
    if (command === undefined || command === 'help' || values.help) {
      out(USAGE);
      return 0;
    }
    const config = loadConfig();
    databaseUrl = config.databaseUrl;
    if (command === 'doctor') {
      const checks = await runDoctor(config);
      const ok = checks.every((c) => c.ok);
      out(json ? JSON.stringify({ ok, checks }, null, 2) : checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`).join('\n'));
      return ok ? 0 : 1;
    }
    const print: Printer = (value, human) => out(json ? JSON.stringify(value, null, 2) : human());
    client = await SessionsClient.connect({ config });
    await run(client, command, rest, values, print, json ? undefined : progressSink);
    return 0;
  } catch (error) {
    return report(error, json, databaseUrl, out, err);
  } finally {
    await client?.close().catch(() => undefined);
  }
}

if (require.main === module) {
  // main turns every error into an exit code; one that escapes it still fails the process.
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
