/** The commands of `sessions`: their usage, their options, and what each does. */
import type { DialectName } from '../compaction/dialects';
import { dialectChoices } from '../compaction/dialects/registry';
import { parseCompactAt } from '../client/numbers';
import type { SessionsClient } from '../client/sessions-client';
import { readJsonInput, retentionPolicyOf, timeoutOf, UsageError, wholeNumberOf } from './input';
import { type ProgressSink, withProgress } from './progress-line';

export const OPTIONS = {
  json: { type: 'boolean' },
  source: { type: 'string' },
  mode: { type: 'string' },
  dialect: { type: 'string' },
  'compact-at': { type: 'string' },
  timeout: { type: 'string' },
  model: { type: 'string' },
  'context-window': { type: 'string' },
  rungs: { type: 'string' },
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

export type Printer = (value: unknown, human: () => string) => void;

const fmtMs = (ms: number | null) => (ms === null ? '-' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/** What a command gets: the client, its positionals after the command, its flags, where to print. */
interface CommandContext {
  client: SessionsClient;
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
  print: Printer;
  progressSink?: ProgressSink;
  /** The first positional, or a UsageError naming the command. */
  sessionId: () => string;
}

interface Command {
  /** Its lines of the usage text. */
  usage: string[];
  /** What it does with a client; none for the commands main runs itself (doctor, help). */
  run?: (context: CommandContext) => Promise<void>;
}

/** Every command, in the order of the usage text. */
const TABLE: Record<string, Command> = {
  create: {
    usage: [
      `  create <sessionId> [--source S] [--mode rotate|in_place] [--dialect ${dialectChoices()}]`,
      '         [--compact-at TOKENS|PERCENT%] [--model M] [--context-window TOKENS] [--rungs masking,summary,trim]',
    ],
    run: async ({ client, values, print, sessionId }) => {
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
        rungs:
          values.rungs === undefined
            ? undefined
            : String(values.rungs)
                .split(',')
                .map((r) => r.trim()),
      });
      return print(created, () => `created session ${created.sessionId} (${created.mode}, ${created.dialect}, tokens: ${created.tokenizer})`);
    },
  },
  append: {
    usage: [
      "  append <sessionId> [--file messages.json] [--append-key K]   JSON array of messages in the lineage's dialect (stdin without --file); a resend with the same key is stored once",
    ],
    run: async ({ client, values, print, sessionId }) => {
      const id = sessionId();
      const appended = await client.append(id, readJsonInput(values.file as string | undefined), {
        appendKey: values['append-key'] as string | undefined,
      });
      return print(appended, () => `appended ${appended.count} message(s) to ${appended.sessionId} (seq ${appended.firstSeq}-${appended.lastSeq})`);
    },
  },
  compact: {
    usage: ['  compact <sessionId> [--focus TOPIC] [--force] [--request-id ID] [--background] [--timeout SECONDS]'],
    run: async ({ client, values, print, progressSink, sessionId }) => {
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
    },
  },
  transcript: {
    usage: [
      "  transcript <sessionId> [--all] [--provider]    the lineage head's messages as appended (--provider: as the next call sends them; --all: archived rows too)",
    ],
    run: async ({ client, values, print, sessionId }) => {
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
    },
  },
  lineage: {
    usage: ['  lineage <sessionId>                            root to head'],
    run: async ({ client, print, sessionId }) => {
      const lineage = await client.lineage(sessionId());
      return print({ sessions: lineage.sessions }, () =>
        lineage.sessions
          .map(
            (s) =>
              `${s.sessionId}${s.parentSessionId ? ` <- ${s.parentSessionId}` : ''}  ${s.messageCount} message(s)  ${s.endedAt ? `ended ${s.endedAt} (${s.endReason})` : 'live (head)'}`,
          )
          .join('\n'),
      );
    },
  },
  state: {
    usage: ["  state <sessionId>                              the workflow's state query"],
    run: async ({ client, print, sessionId }) => {
      const state = await client.operator.state(sessionId());
      return print(state, () => JSON.stringify(state, null, 2));
    },
  },
  close: {
    usage: ['  close <sessionId> [--timeout SECONDS]          finish the queue, close the lineage'],
    run: async ({ client, values, print, sessionId }) => {
      await client.closeSession(sessionId(), { timeoutMs: timeoutOf(values) });
      return print({ closed: sessionId() }, () => `closed the lineage of ${sessionId()}`);
    },
  },
  delete: {
    usage: ['  delete <sessionId> --yes                       erase the lineage: every row in Postgres, every run of its workflow in Temporal'],
    run: async ({ client, values, print, sessionId }) => {
      if (values.yes !== true) throw new UsageError(`delete erases every row of the lineage of ${sessionId()} and its workflow runs, for good: add --yes`);
      const erased = await client.deleteLineage(sessionId(), { timeoutMs: timeoutOf(values) });
      return print(
        erased,
        () =>
          `erased lineage ${erased.lineageId}: ${erased.sessions} session(s), ${erased.messages} message row(s), ${erased.compactions} audit row(s), ` +
          `${erased.appendKeys} append key(s), ${erased.workflowRuns} workflow run(s)`,
      );
    },
  },
  retention: {
    usage: [
      '  retention run|schedule|off [--ended-days D] [--archived-days D] [--audit-days D] [--key-days D] [--batch N] [--every 24h]',
      '                                                 prune old rows now, on a Temporal Schedule, or stop the schedule (docs/data.md)',
    ],
    run: async ({ client, positionals, values, print }) => {
      const action = positionals[0];
      const batch = wholeNumberOf(values, 'batch');
      if (action === 'off') {
        const stopped = await client.operator.unscheduleRetention();
        return print({ unscheduled: stopped }, () => (stopped ? 'retention is no longer scheduled' : 'retention was not scheduled'));
      }
      if (action === 'run') {
        const totals = await client.operator.runRetention(retentionPolicyOf(values), { batch });
        return print(totals, () =>
          Object.entries(totals)
            .map(([k, v]) => `${k}: ${v}`)
            .join('\n'),
        );
      }
      if (action === 'schedule') {
        if (typeof values.every !== 'string') throw new UsageError('retention schedule needs --every, e.g. --every 24h');
        const scheduled = await client.operator.scheduleRetention(retentionPolicyOf(values), { batch, every: values.every });
        return print(
          scheduled,
          () => `retention ${scheduled.created ? 'scheduled' : 'rescheduled'} every ${String(values.every)} (schedule ${scheduled.scheduleId})`,
        );
      }
      throw new UsageError('retention needs run, schedule or off');
    },
  },
  list: {
    usage: [
      '  list [--source S] [--search T] [--status live|closed] [--outcome O] [--after ID] [--limit N]',
      '                                                 lineages, a page at a time',
    ],
    run: async ({ client, values, print }) => {
      const limit = wholeNumberOf(values, 'limit');
      const page = await client.operator.listLineages({
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
    },
  },
  history: {
    usage: ['  history <sessionId>                            each compaction of the lineage: outcome, reason, tokens, attempts, duration'],
    run: async ({ client, print, sessionId }) => {
      const detail = await client.operator.history(sessionId());
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
    },
  },
  audit: {
    usage: [
      '  audit [sessionId]                              forks, orphans, lost and duplicated messages: whole database, or one lineage',
      '  (transcript, lineage, list, history and audit read only Postgres: they work while Temporal is down)',
    ],
    run: async ({ client, positionals, print }) => {
      const report = positionals[0] ? await client.operator.auditLineage(positionals[0]) : await client.operator.audit();
      const { details: _details, ...counts } = report;
      return print(report, () =>
        Object.entries(counts)
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n'),
      );
    },
  },
  doctor: { usage: ['  doctor                                         check Temporal, Postgres, search attributes, worker, LLM'] },
  help: { usage: ['  help                                           this text (also --help, and <command> --help)'] },
};

export const COMMANDS = Object.keys(TABLE);

export const USAGE = `usage: sessions <command> [options]

commands:
${Object.values(TABLE)
  .flatMap((c) => c.usage)
  .join('\n')}

numbers are plain decimal whole numbers from 1 to 2147483647 (--timeout: whole seconds)
every command takes --json`;

export async function run(
  client: SessionsClient,
  command: string,
  positionals: string[],
  values: Record<string, string | boolean | undefined>,
  print: Printer,
  progressSink?: ProgressSink,
): Promise<void> {
  const entry = Object.hasOwn(TABLE, command) ? TABLE[command].run : undefined;
  if (!entry) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const sessionId = () => {
    if (!positionals[0]) throw new UsageError(`${command} needs a session id`);
    return positionals[0];
  };
  await entry({ client, positionals, values, print, progressSink, sessionId });
}
