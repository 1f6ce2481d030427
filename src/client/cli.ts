/**
 * The `sessions` command: a thin shell over SessionsClient. Every command takes --json for
 * machine-readable output. Exit codes: 0 ok (and --help), 2 bad input or unknown session, 3 the
 * call's deadline passed or its request was lost (wait for it, or send it again), or a retention
 * run is still running (wait for it, then run again), 1 other
 * errors (the database unreachable among them: one line with its host:port and the cause).
 */
import type { DialectName } from '../compaction/dialects';
import { dialectChoices } from '../compaction/dialects/registry';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import {
  CallTimeoutError,
  DatabaseQueryError,
  DatabaseUnreachableError,
  InvalidInputError,
  RequestLostError,
  RetentionRunningError,
  SessionCompactionError,
} from '../errors';
import { typedDatabaseError } from '../db/errors';
import { runDoctor } from './doctor';
import { parseCompactAt, parseTimeoutSeconds, parseWholeNumber } from './numbers';
import { formatProgress } from './progress';
import { SessionsClient } from './sessions-client';

const USAGE = `usage: sessions <command> [options]

commands:
  create <sessionId> [--source S] [--mode rotate|in_place] [--dialect ${dialectChoices()}]
         [--compact-at TOKENS|PERCENT%] [--model M] [--context-window TOKENS]
  append <sessionId> [--file messages.json] [--append-key K]   JSON array of messages in the lineage's dialect (stdin without --file); a resend with the same key is stored once
  compact <sessionId> [--focus TOPIC] [--force] [--request-id ID] [--background] [--timeout SECONDS]
  transcript <sessionId> [--all] [--provider]    the lineage head's messages as appended (--provider: as the next call sends them; --all: archived rows too)
  lineage <sessionId>                            root to head
  state <sessionId>                              the workflow's state query
  close <sessionId> [--timeout SECONDS]          finish the queue, close the lineage
  delete <sessionId> --yes                       erase the lineage: every row in Postgres, every run of its workflow in Temporal
  retention run|schedule|off [--ended-days D] [--archived-days D] [--audit-days D] [--key-days D] [--batch N] [--every 24h]
                                                 prune old rows now, on a Temporal Schedule, or stop the schedule (README, "Your data")
  list [--source S] [--search T] [--status live|closed] [--outcome O] [--after ID] [--limit N]
                                                 lineages, a page at a time
  history <sessionId>                            each compaction of the lineage: outcome, reason, tokens, attempts, duration
  audit [sessionId]                              forks, orphans, lost and duplicated messages: whole database, or one lineage
  (transcript, lineage, list, history and audit read only Postgres: they work while Temporal is down)
  doctor                                         check Temporal, Postgres, search attributes, worker, LLM
  help                                           this text (also --help, and <command> --help)

numbers are plain decimal whole numbers from 1 to 2147483647 (--timeout: whole seconds)
every command takes --json`;

const COMMANDS = [
  'create',
  'append',
  'compact',
  'transcript',
  'lineage',
  'state',
  'close',
  'delete',
  'retention',
  'list',
  'history',
  'audit',
  'doctor',
  'help',
];

const OPTIONS = {
  json: { type: 'boolean' },
  source: { type: 'string' },
  mode: { type: 'string' },
  dialect: { type: 'string' },
  'compact-at': { type: 'string' },
  timeout: { type: 'string' },
  model: { type: 'string' },
  'context-window': { type: 'string' },
  file: { type: 'string' },
  'append-key': { type: 'string' },
  focus: { type: 'string' },
  force: { type: 'boolean' },
  'request-id': { type: 'string' },
  background: { type: 'boolean' },
  all: { type: 'boolean' },
  provider: { type: 'boolean' },
  search: { type: 'string' },
  status: { type: 'string' },
  outcome: { type: 'string' },
  after: { type: 'string' },
  limit: { type: 'string' },
  yes: { type: 'boolean' },
  'ended-days': { type: 'string' },
  'archived-days': { type: 'string' },
  'audit-days': { type: 'string' },
  'key-days': { type: 'string' },
  batch: { type: 'string' },
  every: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

/** `--timeout SECONDS` as milliseconds; absent: the configured default. */
function timeoutOf(values: Record<string, string | boolean | undefined>): number | undefined {
  return values.timeout === undefined ? undefined : parseTimeoutSeconds(values.timeout);
}

/** The retention policy of the --*-days flags (whole days, 0 or more). */
function retentionPolicyOf(values: Record<string, string | boolean | undefined>) {
  const days = (flag: string) => (values[flag] === undefined ? undefined : parseWholeNumber(values[flag], `--${flag}`, { min: 0 }));
  return { endedSessionDays: days('ended-days'), archivedDays: days('archived-days'), auditDays: days('audit-days'), appendKeyDays: days('key-days') };
}

/** A numeric flag, strictly (numbers.ts); absent: undefined. */
function wholeNumberOf(values: Record<string, string | boolean | undefined>, flag: string): number | undefined {
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
function readJsonInput(file: string | undefined): unknown {
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

type Printer = (value: unknown, human: () => string) => void;

/** Where `compact` draws its progress line: only a terminal, and never with --json. */
export interface ProgressSink {
  write(line: string): void;
  clear(): void;
}

const PROGRESS_POLL_MS = 500;

function terminalProgress(stream: NodeJS.WriteStream): ProgressSink {
  return {
    write: (line) => stream.write(`\r\x1b[2K${line}`),
    clear: () => stream.write('\r\x1b[2K'),
  };
}

/** Runs `work`, showing the compaction's progress on `sink` every half second until it settles. */
async function withProgress<T>(client: SessionsClient, sessionId: string, sink: ProgressSink | undefined, work: Promise<T>): Promise<T> {
  if (!sink) return work;
  let done = false;
  const settled = work.finally(() => {
    done = true;
  });
  const poll = (async () => {
    while (!done) {
      await Promise.race([settled.catch(() => undefined), new Promise((r) => setTimeout(r, PROGRESS_POLL_MS))]);
      if (done) break;
      // Progress is best effort: a failed read never fails the compaction.
      const progress = await client.progress(sessionId).catch(() => undefined);
      if (!done) sink.write(`compacting ${sessionId}: ${formatProgress(progress)}`);
    }
  })();
  try {
    return await settled;
  } finally {
    await poll;
    sink.clear();
  }
}

const fmtMs = (ms: number | null) => (ms === null ? '-' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

async function run(
  client: SessionsClient,
  command: string,
  positionals: string[],
  values: Record<string, string | boolean | undefined>,
  print: Printer,
  progressSink?: ProgressSink,
) {
  const sessionId = () => {
    if (!positionals[0]) throw new UsageError(`${command} needs a session id`);
    return positionals[0];
  };
  switch (command) {
    case 'create': {
      const compactAt = values['compact-at'] === undefined ? undefined : parseCompactAt(values['compact-at']);
      const contextWindow = wholeNumberOf(values, 'context-window');
      const created = await client.createSession({
        sessionId: sessionId(),
        source: values.source as string | undefined,
        mode: values.mode as 'rotate' | 'in_place' | undefined,
        dialect: values.dialect as DialectName | undefined,
        compactAt,
        model: values.model as string | undefined,
        contextWindow,
      });
      return print(created, () => `created session ${created.sessionId} (${created.mode}, ${created.dialect}, tokens: ${created.tokenizer})`);
    }
    case 'append': {
      const id = sessionId();
      const appended = await client.append(id, readJsonInput(values.file as string | undefined), {
        appendKey: values['append-key'] as string | undefined,
      });
      return print(appended, () => `appended ${appended.count} message(s) to ${appended.sessionId} (seq ${appended.firstSeq}-${appended.lastSeq})`);
    }
    case 'compact': {
      const result = await withProgress(
        client,
        sessionId(),
        progressSink,
        client.compact(sessionId(), {
          focusTopic: values.focus as string | undefined,
          force: values.force as boolean | undefined,
          requestId: values['request-id'] as string | undefined,
          background: values.background as boolean | undefined,
          timeoutMs: timeoutOf(values),
        }),
      );
      const { requestId: _r, generation: _g, ...shape } = result;
      return print(shape, () =>
        [
          `${result.outcome}: head is ${result.sessionId}${result.previousSessionId ? ` (was ${result.previousSessionId})` : ''}, ${result.messages.length} message(s)`,
          result.reason ? `reason: ${result.reason}` : '',
        ]
          .filter(Boolean)
          .join('\n'),
      );
    }
    case 'transcript': {
      const forProvider = values.provider === true;
      const transcript = await client.transcript(sessionId(), { includeArchived: values.all === true, for: forProvider ? 'provider' : 'stored' });
      const shape = values.all ? transcript : { sessionId: transcript.sessionId, dialect: transcript.dialect, messages: transcript.messages };
      return print(shape, () =>
        [
          `session ${transcript.sessionId} (${transcript.dialect})`,
          ...transcript.messages.map(
            (m, i) =>
              `${transcript.seqs[i]}. ${String(m.role ?? m.type ?? '')}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? m.parts ?? m)}`,
          ),
        ].join('\n'),
      );
    }
    case 'lineage': {
      const lineage = await client.lineage(sessionId());
      return print({ sessions: lineage.sessions }, () =>
        lineage.sessions
          .map(
            (s) =>
              `${s.sessionId}${s.parentSessionId ? ` <- ${s.parentSessionId}` : ''}  ${s.messageCount} message(s)  ${s.endedAt ? `ended ${s.endedAt} (${s.endReason})` : 'live (head)'}`,
          )
          .join('\n'),
      );
    }
    case 'state': {
      const state = await client.state(sessionId());
      return print(state, () => JSON.stringify(state, null, 2));
    }
    case 'close': {
      await client.closeSession(sessionId(), { timeoutMs: timeoutOf(values) });
      return print({ closed: sessionId() }, () => `closed the lineage of ${sessionId()}`);
    }
    case 'delete': {
      if (values.yes !== true) throw new UsageError(`delete erases every row of the lineage of ${sessionId()} and its workflow runs, for good: add --yes`);
      const erased = await client.deleteLineage(sessionId(), { timeoutMs: timeoutOf(values) });
      return print(
        erased,
        () =>
          `erased lineage ${erased.lineageId}: ${erased.sessions} session(s), ${erased.messages} message row(s), ${erased.compactions} audit row(s), ` +
          `${erased.appendKeys} append key(s), ${erased.workflowRuns} workflow run(s)`,
      );
    }
    case 'retention': {
      const action = positionals[0];
      const batch = wholeNumberOf(values, 'batch');
      if (action === 'off') {
        const stopped = await client.unscheduleRetention();
        return print({ unscheduled: stopped }, () => (stopped ? 'retention is no longer scheduled' : 'retention was not scheduled'));
      }
      if (action === 'run') {
        const totals = await client.runRetention(retentionPolicyOf(values), { batch });
        return print(totals, () =>
          Object.entries(totals)
            .map(([k, v]) => `${k}: ${v}`)
            .join('\n'),
        );
      }
      if (action === 'schedule') {
        if (typeof values.every !== 'string') throw new UsageError('retention schedule needs --every, e.g. --every 24h');
        const scheduled = await client.scheduleRetention(retentionPolicyOf(values), { batch, every: values.every });
        return print(
          scheduled,
          () => `retention ${scheduled.created ? 'scheduled' : 'rescheduled'} every ${String(values.every)} (schedule ${scheduled.scheduleId})`,
        );
      }
      throw new UsageError('retention needs run, schedule or off');
    }
    case 'list': {
      const limit = wholeNumberOf(values, 'limit');
      const page = await client.listLineages({
        source: values.source as string | undefined,
        search: values.search as string | undefined,
        status: values.status as 'live' | 'closed' | undefined,
        lastOutcome: values.outcome as 'compacted' | undefined,
        after: values.after as string | undefined,
        limit,
      });
      return print(page, () =>
        [
          ...page.lineages.map(
            (l) =>
              `${l.lineageId}  head ${l.headSessionId}  ${l.source ?? '-'}  ${l.closed ? 'closed' : 'live'}  ${l.generation} compaction(s)  last ${l.lastOutcome ?? '-'}`,
          ),
          page.lineages.length === 0 ? 'no lineages' : '',
          page.next ? `more: --after ${page.next}` : '',
        ]
          .filter(Boolean)
          .join('\n'),
      );
    }
    case 'history': {
      const detail = await client.history(sessionId());
      const compactions = detail.compactions.map((c) => ({
        id: c.id,
        parentSessionId: c.parentSessionId,
        childSessionId: c.childSessionId,
        trigger: c.trigger,
        requestIds: c.requestIds,
        outcome: c.outcome,
        reason: c.reason,
        model: c.model,
        tokensBefore: c.tokensBefore,
        tokensAfter: c.tokensAfter,
        messagesBefore: c.messagesBefore,
        messagesAfter: c.messagesAfter,
        attempts: c.attempts,
        startedAt: c.startedAt,
        durationMs: c.durationMs,
        ...(c.gate !== undefined ? { gate: c.gate } : {}),
        ...(c.gateResults !== undefined ? { gateResults: c.gateResults } : {}),
      }));
      return print({ lineageId: detail.lineage.lineageId, headSessionId: detail.lineage.headSessionId, compactions }, () =>
        [
          `lineage ${detail.lineage.lineageId}, head ${detail.lineage.headSessionId}`,
          ...compactions.map(
            (c) =>
              `${c.startedAt}  ${c.outcome.padEnd(9)} ${c.parentSessionId}${c.childSessionId && c.childSessionId !== c.parentSessionId ? ` -> ${c.childSessionId}` : ''}  tokens ${c.tokensBefore ?? '-'} -> ${c.tokensAfter ?? '-'}  attempts ${c.attempts}  ${fmtMs(c.durationMs)}  ${c.trigger}${c.reason ? `  reason: ${c.reason}` : ''}`,
          ),
          compactions.length === 0 ? 'no compactions yet' : '',
        ]
          .filter(Boolean)
          .join('\n'),
      );
    }
    case 'audit': {
      const report = positionals[0] ? await client.auditLineage(positionals[0]) : await client.audit();
      const { details: _details, ...counts } = report;
      return print(report, () =>
        Object.entries(counts)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n'),
      );
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** 3: wait for the request or send it again (or for the running retention); 1: operational (the database unreachable, ...); 2: bad input or an unknown session. */
function exitCodeOf(error: unknown): number {
  if (error instanceof CallTimeoutError || error instanceof RequestLostError || error instanceof RetentionRunningError) return 3;
  if (error instanceof DatabaseUnreachableError || error instanceof DatabaseQueryError) return 1;
  if (error instanceof SessionCompactionError || error instanceof UsageError) return 2;
  return 1;
}

/** Prints `error` (on stderr, and as JSON on stdout with --json) and returns the exit code. */
function report(error: unknown, json: boolean, databaseUrl: string | undefined, out: (text: string) => void, err: (text: string) => void): number {
  // A failed query's message without its parameters (for an append, every message of the batch).
  const mapped = typedDatabaseError(error, databaseUrl);
  const message = mapped instanceof Error ? mapped.message : String(mapped);
  if (json) {
    const fields = mapped && typeof mapped === 'object' ? (mapped as { field?: unknown; requestId?: unknown }) : {};
    const type = mapped instanceof UsageError ? 'UsageError' : mapped instanceof Error ? mapped.name : 'Error';
    out(
      JSON.stringify(
        {
          error: {
            type,
            message,
            ...(typeof fields.field === 'string' ? { field: fields.field } : {}),
            ...(mapped instanceof CallTimeoutError || mapped instanceof RequestLostError ? { requestId: fields.requestId } : {}),
            ...(mapped instanceof DatabaseUnreachableError ? { address: mapped.address, ...(mapped.code ? { code: mapped.code } : {}) } : {}),
            ...(mapped instanceof RetentionRunningError ? { workflowId: mapped.workflowId } : {}),
            ...(mapped instanceof DatabaseQueryError ? { operation: mapped.operation, ...(mapped.code ? { code: mapped.code } : {}) } : {}),
          },
        },
        null,
        2,
      ),
    );
  }
  err(`error: ${message}${mapped instanceof UsageError ? `\n\n${USAGE}` : ''}`);
  return exitCodeOf(mapped);
}

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
