/**
 * `npm run corpus -- [dir]`: runs real agent transcripts through the whole service. For every
 * transcript in `dir` (default ../shared/corpus; one JSON file each, `{format, messages}`,
 * format a dialect name), in both modes: store it as it is (in its dialect), check the stored
 * head is JSON-equal to what was appended, force a compaction, then check the new head with
 * the dialect's strict provider rules (on the provider view the agent sends), that the latest
 * real user request is kept verbatim, and that every kept message is JSON-equal to one that
 * was appended (counted against the runner's own ledger, not the service's numbers). Prints
 * a table; exits 1 if any check fails. Runs on a scratch stack with the built-in summariser.
 *
 * The rung dimension: every transcript runs with the default rungs; those whose format has a
 * provider compaction (openai-responses, anthropic) run again (rotate) on a second worker with
 * the native rung on, against the strict fakes' `/responses/compact` and compact_20260112 (the
 * real `openai` and `@anthropic-ai/sdk` clients). The table names the rung that answered (and why
 * native passed, when it did); a native head's opaque item must be one the fake made, and every
 * other kept message one that was appended. Every transcript also runs (rotate) on a lineage
 * created with the rungs `masking, trim`: a forced compaction passes masking, so the trim rung
 * answers, and its head must pass the same checks.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { SessionsClient } from '../src/client/sessions-client';
import { dialectOf, isDialectName, type Message } from '../src/compaction/dialects';
import { canonicalJson, jsonEqual } from '../src/compaction/json';
import { latestUserRequestIndex } from '../src/compaction/plan';
import { holdsOpaqueItem } from '../src/compaction/proposal';
import { openDatabase } from '../src/db/database';
import { auditRows } from '../src/db/session-store';
import { createSessionWorker } from '../src/worker';
import type { CompactionMode } from '../src/workflows/contract';
import { startScratchStack } from '../test/support/scratch-stack';
import { startStrictAnthropic } from '../test/support/strict-anthropic';
import { strictProviderCheck } from '../test/support/strict-check';
import { measureRungs } from '../bench/rungs';
import { startStrictResponses } from '../test/support/strict-responses';

/** Formats whose provider has its own compaction: the native rung's corpus pass. */
const NATIVE_FORMATS = new Set(['openai-responses', 'anthropic']);

interface CorpusFile {
  file: string;
  format: string;
  messages: Message[];
}

export interface CorpusRow {
  transcript: string;
  dialect: string;
  mode: CompactionMode;
  /** The rungs: `default` (native off), `native` (NATIVE_COMPACTION=on), or `trim` (a lineage created with the rungs masking and trim). */
  rungs: 'default' | 'native' | 'trim';
  /** The rung that answered (and, when native was on and passed, why). */
  rung: string;
  messages: number;
  outcome: string;
  head: string;
  tokens: string;
  storedEqual: boolean;
  providerAccepts: string;
  latestKept: boolean;
  keptEqual: string;
  ok: boolean;
}

function readCorpus(dir: string): CorpusFile[] {
  const files: CorpusFile[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.json')) {
        const data = JSON.parse(readFileSync(full, 'utf8')) as { format?: string; messages?: Message[] };
        if (typeof data.format === 'string' && Array.isArray(data.messages))
          files.push({ file: path.relative(dir, full), format: data.format, messages: data.messages });
      }
    }
  };
  walk(dir);
  return files;
}

/** How many times each message (by canonical JSON) was appended: the runner's own ledger. */
function ledgerOf(messages: readonly Message[]): Map<string, number> {
  const ledger = new Map<string, number>();
  for (const m of messages) ledger.set(canonicalJson(m), (ledger.get(canonicalJson(m)) ?? 0) + 1);
  return ledger;
}

export async function runCorpus(dir: string, log: (line: string) => void = console.log): Promise<CorpusRow[]> {
  const corpus = readCorpus(dir).filter((c) => isDialectName(c.format));
  if (corpus.length === 0) throw new Error(`no transcripts in ${dir}`);
  const scratch = await startScratchStack('corpus', { env: { OPENAI_API_KEY: '', COMPACTION_TAIL_TOKENS: '2000' } });
  const database = openDatabase(scratch.config.databaseUrl);
  const connection = await NativeConnection.connect({ address: scratch.config.temporal.address });
  const responses = await startStrictResponses({ seed: 11 });
  const claude = await startStrictAnthropic({ seed: 11 });
  // The native pass: its own task queue, its worker with the native rung on against the strict fakes.
  const nativeConfig = {
    ...scratch.config,
    temporal: { ...scratch.config.temporal, taskQueue: `${scratch.config.temporal.taskQueue}-native` },
    native: {
      enabled: true,
      openai: { apiKey: 'corpus-key', baseURL: responses.url, model: 'agent-model' },
      anthropic: { apiKey: 'corpus-key', baseURL: claude.url, model: 'agent-model' },
      timeoutMs: 120_000,
    },
  };
  const workers = [
    await createSessionWorker({ config: scratch.config, connection, database, log: () => undefined }),
    await createSessionWorker({ config: nativeConfig, connection, database, log: () => undefined }),
  ];
  const running = workers.map((w) => w.run());
  const limits = { maxMessageChars: 5_000_000, maxBatchMessages: 1_000, maxBatchChars: 50_000_000 };
  const clients = {
    default: await SessionsClient.connect({ config: scratch.config, database, messageLimits: limits }),
    native: await SessionsClient.connect({ config: nativeConfig, database, messageLimits: limits }),
  };
  const rows: CorpusRow[] = [];
  const nativeRefusals = () => [...responses.rejections, ...claude.rejections].filter((r) => !/signature never issued/.test(r.reason ?? ''));
  /** Whether an opaque item of a native head is one the strict fake made, byte-exact where it is its key. */
  const madeByFake = (m: Message): boolean =>
    m.type === 'compaction'
      ? responses.compaction.made.has(String(m.id))
      : (m.content as Message[]).every((b) => b.type !== 'compaction' || claude.compaction.made.has(String(b.encrypted_content)));
  try {
    for (const [n, entry] of corpus.entries()) {
      const dialect = dialectOf(entry.format);
      const passes = [
        ...(['rotate', 'in_place'] as const).map((mode) => ({ mode, rungs: 'default' as const })),
        ...(NATIVE_FORMATS.has(entry.format) ? [{ mode: 'rotate' as const, rungs: 'native' as const }] : []),
        { mode: 'rotate' as const, rungs: 'trim' as const },
      ];
      for (const { mode, rungs } of passes) {
        const client = rungs === 'native' ? clients.native : clients.default;
        const id = `corpus-${n}-${mode === 'rotate' ? 'r' : 'i'}${rungs === 'default' ? '' : `-${rungs[0]}`}`;
        await client.createSession({
          sessionId: id,
          dialect: dialect.name,
          mode,
          source: 'corpus',
          ...(rungs === 'trim' ? { rungs: ['masking', 'trim'] } : {}),
        });
        for (let i = 0; i < entry.messages.length; i += 500) await client.append(id, entry.messages.slice(i, i + 500));
        const stored = await client.transcript(id);
        const storedEqual = stored.messages.length === entry.messages.length && stored.messages.every((m, i) => jsonEqual(m, entry.messages[i]));
        const refusedBefore = nativeRefusals().length;
        const result = await client.compact(id, { force: true, requestId: `corpus-${n}-${mode}-${rungs}` });
        // What the strict fakes refused of the native call's input (a real transcript's thinking
        // signatures were issued by Anthropic, not by the fake: those refusals are expected).
        const nativeRefused = nativeRefusals().slice(refusedBefore);
        for (const r of nativeRefused) log(`FAIL the strict fake refused the native call's input: ${r.rule ?? ''} ${r.reason ?? ''}`);
        const head = await client.transcript(result.sessionId);
        const view = (await client.transcript(result.sessionId, { for: 'provider' })).messages;
        const refused = result.outcome === 'compacted' ? await strictProviderCheck(dialect.name, view) : undefined;
        const latestAt = latestUserRequestIndex(dialect, entry.messages);
        const latestKept = latestAt < 0 || head.messages.some((m) => jsonEqual(m, entry.messages[latestAt]));
        const audit = (await auditRows(database.db, id)).at(-1);
        const rung = `${audit?.rung ?? 'none'}${rungs === 'native' && audit?.rung !== 'native' && audit?.passedRungs?.native ? ` (native: ${audit.passedRungs.native})` : ''}`;
        // Every kept message must be one that was appended, JSON-equal, and not more often than
        // appended; an opaque item, one the strict fake made.
        const ledger = ledgerOf(entry.messages);
        let kept = 0;
        let foreign = 0;
        for (const m of head.messages) {
          if (dialect.isSummary(m)) continue;
          if (rungs === 'native' && holdsOpaqueItem(m)) {
            if (!madeByFake(m)) foreign++;
            continue;
          }
          const key = canonicalJson(m);
          const left = ledger.get(key) ?? 0;
          if (left > 0) {
            ledger.set(key, left - 1);
            kept++;
          } else foreign++;
        }
        // The trim pass must be answered by the trim rung (the only rung it may use for a forced request).
        const rungAnswered = rungs !== 'trim' || audit?.rung === 'trim';
        const ok =
          storedEqual && result.outcome === 'compacted' && refused === undefined && latestKept && foreign === 0 && nativeRefused.length === 0 && rungAnswered;
        const row: CorpusRow = {
          transcript: entry.file,
          dialect: dialect.name,
          mode,
          rungs,
          rung,
          messages: entry.messages.length,
          outcome: result.outcome + (result.outcome === 'compacted' ? '' : ` (${result.reason ?? ''})`),
          head: `${result.messagesBefore ?? '?'} -> ${result.messagesAfter ?? head.messages.length}`,
          tokens: `${result.tokensBefore ?? '?'} -> ${result.tokensAfter ?? '?'}`,
          storedEqual,
          providerAccepts: refused === undefined ? (result.outcome === 'compacted' ? 'yes' : 'n/a') : `NO: ${refused}`,
          latestKept,
          keptEqual: foreign === 0 ? `${kept}/${kept}` : `${kept} equal, ${foreign} NOT appended`,
          ok,
        };
        rows.push(row);
        log(
          `${ok ? 'ok  ' : 'FAIL'} ${row.transcript} [${row.mode}, ${row.rungs}] ${row.outcome} by ${row.rung}; head ${row.head}; provider ${row.providerAccepts}; latest kept ${row.latestKept}; kept ${row.keptEqual}`,
        );
      }
    }
    // Per rung, over every compaction of this run (the audit rows' rung and costs; bench/rungs.ts).
    log('\n| rung | compactions answered | tokens shed | tokens paid | cached share |\n|---|---:|---:|---:|---:|');
    for (const [rung, f] of Object.entries(await measureRungs(database.db)))
      log(`| ${rung} | ${f.compactions} | ${f.tokensShed} | ${f.tokensPaid} | ${f.cachedShare ?? '-'} |`);
  } finally {
    await clients.default.close();
    await clients.native.close();
    for (const w of workers) w.shutdown();
    await Promise.all(running.map((r) => r.catch(() => undefined)));
    await connection.close();
    await database.close();
    await responses.close();
    await claude.close();
    await scratch.stop();
  }
  return rows;
}

export function corpusTable(rows: readonly CorpusRow[]): string {
  const lines = [
    '| transcript | dialect | mode | rungs | rung | messages | outcome | head (messages) | tokens | stored JSON-equal | provider accepts | latest request kept | kept JSON-equal |',
    '|---|---|---|---|---|---:|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.transcript} | ${r.dialect} | ${r.mode} | ${r.rungs} | ${r.rung} | ${r.messages} | ${r.outcome} | ${r.head} | ${r.tokens} | ${r.storedEqual ? 'yes' : 'NO'} | ${r.providerAccepts} | ${r.latestKept ? 'yes' : 'NO'} | ${r.keptEqual} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = path.resolve(process.argv[2] ?? path.join(__dirname, '../../shared/corpus'));
  if (!existsSync(dir)) {
    console.error(`corpus: ${dir} does not exist (pass a folder of transcripts: npm run corpus -- <dir>)`);
    process.exit(2);
  }
  const rows = await runCorpus(dir);
  console.log(`\n${corpusTable(rows)}\n`);
  const failed = rows.filter((r) => !r.ok).length;
  console.log(`corpus: ${rows.length - failed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
