/**
 * The `sessions` command: a thin shell over SessionsClient. Every command takes --json for
 * machine-readable output. Exit codes: 0 ok, 2 bad input or unknown session, 1 other errors.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config';
import { SessionCompactionError } from '../errors';
import { runDoctor } from './doctor';
import { SessionsClient } from './sessions-client';

const USAGE = `usage: sessions <command> [options]

commands:
  create <sessionId> [--source S] [--mode rotate|in_place] [--compact-at TOKENS|PERCENT%]
         [--model M] [--context-window TOKENS]
  append <sessionId> [--file messages.json] [--append-key K]   JSON array of chat messages (stdin without --file); a resend with the same key is stored once
  compact <sessionId> [--focus TOPIC] [--force] [--request-id ID] [--background]
  transcript <sessionId> [--all]                 the lineage head's messages (--all: archived rows too)
  lineage <sessionId>                            root to head
  state <sessionId>                              the workflow's state query
  close <sessionId>                              finish the queue, close the lineage
  audit                                          forks, orphans, lost and duplicated messages, whole database
  doctor                                         check Temporal, Postgres, search attributes, worker, LLM

every command takes --json`;

const OPTIONS = {
  json: { type: 'boolean' },
  source: { type: 'string' },
  mode: { type: 'string' },
  'compact-at': { type: 'string' },
  model: { type: 'string' },
  'context-window': { type: 'string' },
  file: { type: 'string' },
  'append-key': { type: 'string' },
  focus: { type: 'string' },
  force: { type: 'boolean' },
  'request-id': { type: 'string' },
  background: { type: 'boolean' },
  all: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

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

async function run(client: SessionsClient, command: string, positionals: string[], values: Record<string, string | boolean | undefined>, print: Printer) {
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
      const result = await client.compact(sessionId(), {
        focusTopic: values.focus as string | undefined,
        force: values.force as boolean | undefined,
        requestId: values['request-id'] as string | undefined,
        background: values.background as boolean | undefined,
      });
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
      return print(shape, () => [`session ${transcript.sessionId}`, ...transcript.messages.map((m) => `${m.seq}. ${m.role}: ${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`)].join('\n'));
    }
    case 'lineage': {
      const lineage = await client.lineage(sessionId());
      return print({ sessions: lineage.sessions }, () =>
        lineage.sessions.map((s) => `${s.sessionId}${s.parentSessionId ? ` <- ${s.parentSessionId}` : ''}  ${s.messageCount} message(s)  ${s.endedAt ? `ended ${s.endedAt} (${s.endReason})` : 'live (head)'}`).join('\n'),
      );
    }
    case 'state': {
      const state = await client.state(sessionId());
      return print(state, () => JSON.stringify(state, null, 2));
    }
    case 'close': {
      await client.closeSession(sessionId());
      return print({ closed: sessionId() }, () => `closed the lineage of ${sessionId()}`);
    }
    case 'audit': {
      const report = await client.audit();
      const { details: _details, ...counts } = report;
      return print(report, () => Object.entries(counts).map(([k, v]) => `${k}: ${v}`).join('\n'));
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

export async function main(argv: string[], out: (text: string) => void = (t) => process.stdout.write(`${t}\n`), err: (text: string) => void = (t) => process.stderr.write(`${t}\n`)): Promise<number> {
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
    if (command !== 'create' && !['append', 'compact', 'transcript', 'lineage', 'state', 'close', 'audit'].includes(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    client = await SessionsClient.connect();
    await run(client, command, rest, values, print);
    return 0;
  } catch (error) {
    const userError = error instanceof SessionCompactionError || error instanceof UsageError;
    const type = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    if (json) out(JSON.stringify({ error: { type: error instanceof UsageError ? 'UsageError' : type, message, ...(error && typeof error === 'object' && 'field' in error ? { field: (error as { field: string }).field } : {}) } }, null, 2));
    err(`error: ${message}${error instanceof UsageError ? `\n\n${USAGE}` : ''}`);
    return userError ? 2 : 1;
  } finally {
    await client?.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
