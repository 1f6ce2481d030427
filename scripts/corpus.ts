/**
 * `npm run corpus -- [dir]`: runs real agent transcripts through the whole service. For every
 * transcript in `dir` (default ../shared/corpus; one JSON file each, `{format, messages}`,
 * format a dialect name), in both modes: store it as it is (in its dialect), check the stored
 * head is JSON-equal to what was appended, force a compaction, then check the new head with
 * the dialect's strict provider rules (on the provider view the agent sends), that the latest
 * real user request is kept verbatim, and that every kept message is JSON-equal to one that
 * was appended (counted against the runner's own ledger, not the service's numbers). Prints
 * a table; exits 1 if any check fails. Runs on a scratch stack with the built-in summariser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { SessionsClient } from '../src/client/sessions-client';
import { dialectOf, isDialectName, type Message } from '../src/compaction/dialects';
import { canonicalJson, jsonEqual } from '../src/compaction/json';
import { latestUserRequestIndex } from '../src/compaction/plan';
import { openDatabase } from '../src/db/database';
import { createSessionWorker } from '../src/worker';
import type { CompactionMode } from '../src/workflows/contract';
import { startScratchStack } from '../test/support/scratch-stack';
import { strictProviderCheck } from '../test/support/strict-check';

interface CorpusFile {
  file: string;
  format: string;
  messages: Message[];
}

export interface CorpusRow {
  transcript: string;
  dialect: string;
  mode: CompactionMode;
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
  const worker = await createSessionWorker({ config: scratch.config, connection, database, log: () => undefined });
  const running = worker.run();
  const limits = { maxMessageChars: 5_000_000, maxBatchMessages: 1_000, maxBatchChars: 50_000_000 };
  const client = await SessionsClient.connect({ config: scratch.config, database, messageLimits: limits });
  const rows: CorpusRow[] = [];
  try {
    for (const [n, entry] of corpus.entries()) {
      const dialect = dialectOf(entry.format);
      for (const mode of ['rotate', 'in_place'] as const) {
        const id = `corpus-${n}-${mode === 'rotate' ? 'r' : 'i'}`;
        await client.createSession({ sessionId: id, dialect: dialect.name, mode, source: 'corpus' });
        for (let i = 0; i < entry.messages.length; i += 500) await client.append(id, entry.messages.slice(i, i + 500));
        const stored = await client.transcript(id);
        const storedEqual = stored.messages.length === entry.messages.length && stored.messages.every((m, i) => jsonEqual(m, entry.messages[i]));
        const result = await client.compact(id, { force: true, requestId: `corpus-${n}-${mode}` });
        const head = await client.transcript(result.sessionId);
        const view = (await client.transcript(result.sessionId, { for: 'provider' })).messages;
        const refused = result.outcome === 'compacted' ? await strictProviderCheck(dialect.name, view) : undefined;
        const latestAt = latestUserRequestIndex(dialect, entry.messages);
        const latestKept = latestAt < 0 || head.messages.some((m) => jsonEqual(m, entry.messages[latestAt]));
        // Every kept message must be one that was appended, JSON-equal, and not more often than appended.
        const ledger = ledgerOf(entry.messages);
        let kept = 0;
        let foreign = 0;
        for (const m of head.messages) {
          if (dialect.isSummary(m)) continue;
          const key = canonicalJson(m);
          const left = ledger.get(key) ?? 0;
          if (left > 0) {
            ledger.set(key, left - 1);
            kept++;
          } else foreign++;
        }
        const ok = storedEqual && result.outcome === 'compacted' && refused === undefined && latestKept && foreign === 0;
        const row: CorpusRow = {
          transcript: entry.file,
          dialect: dialect.name,
          mode,
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
          `${ok ? 'ok  ' : 'FAIL'} ${row.transcript} [${row.mode}] ${row.outcome}; head ${row.head}; provider ${row.providerAccepts}; latest kept ${row.latestKept}; kept ${row.keptEqual}`,
        );
      }
    }
  } finally {
    await client.close();
    worker.shutdown();
    await running.catch(() => undefined);
    await connection.close();
    await database.close();
    await scratch.stop();
  }
  return rows;
}

export function corpusTable(rows: readonly CorpusRow[]): string {
  const lines = [
    '| transcript | dialect | mode | messages | outcome | head (messages) | tokens | stored JSON-equal | provider accepts | latest request kept | kept JSON-equal |',
    '|---|---|---|---:|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.transcript} | ${r.dialect} | ${r.mode} | ${r.messages} | ${r.outcome} | ${r.head} | ${r.tokens} | ${r.storedEqual ? 'yes' : 'NO'} | ${r.providerAccepts} | ${r.latestKept ? 'yes' : 'NO'} | ${r.keptEqual} |`,
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
