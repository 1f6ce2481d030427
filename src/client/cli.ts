/**
 * The `sessions` command: a thin shell over SessionsClient. Every command takes --json for
 * machine-readable output. Exit codes: 0 ok, 2 bad input or unknown session, 3 the call's
 * deadline passed or its request was lost (wait for it, or send it again), 1 other errors.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { CallTimeoutError, RequestLostError, SessionCompactionError } from '../errors';
import { runDoctor } from './doctor';
import { formatProgress } from './progress';
import { SessionsClient } from './sessions-client';

const USAGE = `usage: sessions <command> [options]

commands:
  create <sessionId> [--source S] [--mode rotate|in_place] [--compact-at TOKENS|PERCENT%]
         [--model M] [--context-window TOKENS]
  append <sessionId> [--file messages.json] [--append-key K]   JSON array of chat messages (stdin without --file); a resend with the same key is stored once
  compact <sessionId> [--focus TOPIC] [--force] [--request-id ID] [--background] [--timeout SECONDS]
  transcript <sessionId> [--all]                 the lineage head's messages (--all: archived rows too)
  lineage <sessionId>                            root to head
  state <sessionId>                              the workflow's state query
  close <sessionId> [--timeout SECONDS]          finish the queue, close the lineage
  list [--source S] [--search T] [--status live|closed] [--outcome O] [--after ID] [--limit N]
                                                 lineages, a page at a time
  history <sessionId>                            each compaction of the lineage: outcome, reason, tokens, attempts, duration
  audit [sessionId]                              forks, orphans, lost and duplicated messages: whole database, or one lineage
  (transcript, lineage, list, history and audit read only Postgres: they work while Temporal is down)
  doctor                                         check Temporal, Postgres, search attributes, worker, LLM

every command takes --json`;

const OPTIONS = {
  json: { type: 'boolean' },
  source: { type: 'string' },
  mode: { type: 'string' },
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
  search: { type: 'string' },
  status: { type: 'string' },
  outcome: { type: 'string' },
  after: { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

/** `--timeout SECONDS` as milliseconds; absent: the configured default. */
function timeoutOf(values: Record<string, string | boolean | undefined>): number | undefined {
  if (values.timeout === undefined) return undefined;
  const seconds = Number(values.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got ${JSON.stringify(values.timeout)}`);
  return seconds * 1000;
}

function readStdin(): string {
  return readFileSync(0, 'utf8');
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${what} is not valid JSON: ${(error as Error).message}`);
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
      const raw = values['compact-at'] as string | undefined;
      const compactAt = raw === undefined ? undefined : raw.trim().endsWith('%') ? (raw.trim() as `${number}%`) : Number(raw);
      const contextWindow = values['context-window'] === undefined ? undefined : Number(values['context-window']);
      const created = await client.createSession({
        sessionId: sessionId(),
        source: values.source as string | undefined,
        mode: values.mode as 'rotate' | 'in_place' | undefined,
        compactAt,
        model: values.model as string | undefined,
        contextWindow,
      });
      return print(created, () => `created session ${created.sessionId} (${created.mode})`);
    }
    case 'append': {
      const text = values.file ? readFileSync(values.file as string, 'utf8') : readStdin();
      const appended = await client.append(sessionId(), parseJson(text, values.file ? String(values.file) : 'stdin'), {
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
      const transcript = await client.transcript(sessionId(), { includeArchived: values.all === true });
      const messages = transcript.messages.map(({ seq: _seq, ...m }) => m);
      const shape = values.all ? { ...transcript, messages } : { sessionId: transcript.sessionId, messages };
      return print(shape, () =>
        [
          `session ${transcript.sessionId}`,
          ...transcript.messages.map((m) => `${m.seq}. ${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`),
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
    case 'list': {
      const limit = values.limit === undefined ? undefined : Number(values.limit);
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
  if (!command || values.help) {
    (command ? err : out)(USAGE);
    return command ? 0 : 2;
  }
  const json = values.json === true;
  const print: Printer = (value, human) => out(json ? JSON.stringify(value, null, 2) : human());
  if (command === 'doctor') {
    const checks = await runDoctor(loadConfig());
    const ok = checks.every((c) => c.ok);
    out(json ? JSON.stringify({ ok, checks }, null, 2) : checks.map((c) => `${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`).join('\n'));
    return ok ? 0 : 1;
  }
  let client: SessionsClient | undefined;
  try {
    if (command !== 'create' && !['append', 'compact', 'transcript', 'lineage', 'state', 'close', 'audit', 'list', 'history'].includes(command))
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    client = await SessionsClient.connect();
    await run(client, command, rest, values, print, json ? undefined : progressSink);
    return 0;
  } catch (error) {
    // A deadline or a lost request is not bad input: exit 3 says "wait or send again".
    if (error instanceof CallTimeoutError || error instanceof RequestLostError) {
      if (json) out(JSON.stringify({ error: { type: error.name, message: error.message, requestId: error.requestId } }, null, 2));
      err(`error: ${error.message}`);
      return 3;
    }
    const userError = error instanceof SessionCompactionError || error instanceof UsageError;
    const type = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    if (json)
      out(
        JSON.stringify(
          {
            error: {
              type: error instanceof UsageError ? 'UsageError' : type,
              message,
              ...(error && typeof error === 'object' && 'field' in error ? { field: (error as { field: string }).field } : {}),
            },
          },
          null,
          2,
        ),
      );
    err(`error: ${message}${error instanceof UsageError ? `\n\n${USAGE}` : ''}`);
    return userError ? 2 : 1;
  } finally {
    await client?.close();
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
