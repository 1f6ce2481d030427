/** What the command line reads: its numeric flags, and the JSON document of --file or stdin. */
import { readFileSync } from 'node:fs';
import { InvalidInputError } from '../errors';
import { parseTimeoutSeconds, parseWholeNumber } from '../client/numbers';

/** A command line the CLI cannot run (exit 2, with the usage). */
export class UsageError extends Error {}

/** `--timeout SECONDS` as milliseconds; absent: the configured default. */
export function timeoutOf(values: Record<string, string | boolean | undefined>): number | undefined {
  return values.timeout === undefined ? undefined : parseTimeoutSeconds(values.timeout);
}

/** The retention policy of the --*-days flags (whole days, 0 or more). */
export function retentionPolicyOf(values: Record<string, string | boolean | undefined>) {
  const days = (flag: string) => (values[flag] === undefined ? undefined : parseWholeNumber(values[flag], `--${flag}`, { min: 0 }));
  return { endedSessionDays: days('ended-days'), archivedDays: days('archived-days'), auditDays: days('audit-days'), appendKeyDays: days('key-days') };
}

/** A numeric flag, strictly (numbers.ts); absent: undefined. */
export function wholeNumberOf(values: Record<string, string | boolean | undefined>, flag: string): number | undefined {
  return values[flag] === undefined ? undefined : parseWholeNumber(values[flag], `--${flag}`);
}

const READ_FAILURES: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  EBADF: 'it is not open',
  EAGAIN: 'it cannot be read without blocking',
};

/**
 * The JSON document of `--file` (or stdin without one). A file that cannot be read, that is
 * not UTF-8 or not JSON is bad input (exit 2), named in the message.
 */
export function readJsonInput(file: string | undefined): unknown {
  const field = file === undefined ? 'stdin' : '--file';
  const what = file === undefined ? 'stdin' : `file ${JSON.stringify(file)}`;
  if (file === '') throw new InvalidInputError(field, 'needs a file name (or leave --file out to read stdin)');
  let bytes: Buffer;
  try {
    bytes = readFileSync(file ?? 0);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    throw new InvalidInputError(field, `cannot read ${what}: ${READ_FAILURES[code] ?? (error as Error).message}${code ? ` (${code})` : ''}`);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidInputError(field, `${what} is not valid UTF-8`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(field, `${what} is not valid JSON: ${(error as Error).message}`);
  }
}
