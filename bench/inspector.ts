/**
 * `npm run bench:inspector`: how fast the inspector's list page answers with many lineages.
 * Seeds N lineages (default 10,000; `-- --lineages 50000`) with sessions, messages and one
 * compaction row in three of four, straight into embedded Postgres, then times pages over
 * HTTP: the first page, a deep keyset page, a search, a source filter and a last-outcome
 * filter. Reads Postgres only: no Temporal server is needed. Never part of `npm test`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SessionsClient } from '../src/client/sessions-client';
import { loadConfig, PROJECT_ROOT } from '../src/config';
import { openDatabase, runMigrations } from '../src/db/database';
import { startEmbeddedPostgres } from '../src/dev/postgres';
import { freePort } from '../src/dev/temporal-server';
import { startInspector } from '../src/inspector/server';

const { values } = parseArgs({ options: { lineages: { type: 'string', default: '10000' }, samples: { type: 'string', default: '30' } } });
const LINEAGES = Number(values.lineages);
const SAMPLES = Number(values.samples);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-inspector-'));
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: await freePort(), database: 'bench_inspector' });
  const handle = openDatabase(pg.url);
  try {
    await runMigrations(handle);
    const seedStarted = performance.now();
    // Seeded in SQL: generate_series keeps 10,000 lineages to a few seconds.
    await handle.pool.query(
      `insert into lineages (id, head_session_id, generation, mode, source, appended_count, head_tokens)
       select 'lin-' || lpad(i::text, 6, '0'), 'lin-' || lpad(i::text, 6, '0') || case when i % 4 = 0 then '' else '--g1' end,
              case when i % 4 = 0 then 0 else 1 end, 'rotate', (array['discord','slack','teams','cli'])[1 + i % 4], 4, 120
       from generate_series(1, $1) i`,
      [LINEAGES],
    );
    await handle.pool.query(
      `insert into sessions (id, lineage_id, generation, started_at) select id, id, 0, now() from lineages;
       insert into sessions (id, lineage_id, parent_session_id, generation) select id || '--g1', id, id, 1 from lineages where generation = 1;
       update sessions set ended_at = now(), end_reason = 'compression' where generation = 0 and id in (select id from lineages where generation = 1);`,
    );
    await handle.pool.query(
      `insert into compactions (id, lineage_id, parent_session_id, child_session_id, generation, request_ids, trigger, model, tokens_before, tokens_after,
                                messages_before, messages_after, attempts, started_at, finished_at, outcome, reason)
       select 'job-' || id, id, id, case when generation = 1 then id || '--g1' end, 1, '["r1"]'::jsonb, 'update', 'fake-model', 4000, 900, 40, 8, 1,
              now() - interval '1 minute', now(), case when generation = 1 then 'compacted' else 'refused' end,
              case when generation = 1 then null else 'nothing to summarise' end
       from lineages where generation = 1 or right(id, 1) = '4'`,
    );
    await handle.pool.query('analyze');
    const seedMs = performance.now() - seedStarted;

    const config = loadConfig({ DATABASE_URL: pg.url, TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
    const client = await SessionsClient.connect({ config });
    const inspector = await startInspector({ client, temporalUiUrl: config.temporalUiUrl, bindAddress: '127.0.0.1:0' });
    const mid = `lin-${String(Math.floor(LINEAGES / 2)).padStart(6, '0')}`;
    const cases: Record<string, string> = {
      'first page': '/',
      'deep page (keyset)': `/?after=${mid}`,
      'search by id': `/?q=${mid.slice(0, 9)}`,
      'filter by source': '/?source=slack',
      'filter by last outcome': '/?outcome=refused',
      'live, never compacted': '/?status=live&outcome=none',
    };
    const results: Array<{ case: string; p50Ms: number; p95Ms: number; rows: number }> = [];
    for (const [name, route] of Object.entries(cases)) {
      const times: number[] = [];
      let rows = 0;
      for (let i = 0; i < SAMPLES; i++) {
        const started = performance.now();
        const response = await fetch(`${inspector.url}${route}`);
        const text = await response.text();
        times.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`${route}: ${response.status}`);
        rows = (text.match(/<tr><td><a href="\/lineages\//g) ?? []).length;
      }
      times.sort((a, b) => a - b);
      results.push({ case: name, p50Ms: Number(percentile(times, 50).toFixed(1)), p95Ms: Number(percentile(times, 95).toFixed(1)), rows });
    }
    await inspector.close();
    await client.close();
    console.log(
      `\ninspector list page, ${LINEAGES} lineages (seeded in ${(seedMs / 1000).toFixed(1)} s), ${SAMPLES} requests each, ${os.cpus().length} cores\n`,
    );
    console.log('| page | p50 ms | p95 ms | rows |\n| --- | ---: | ---: | ---: |');
    for (const r of results) console.log(`| ${r.case} | ${r.p50Ms} | ${r.p95Ms} | ${r.rows} |`);
    const outDir = path.join(PROJECT_ROOT, 'bench/results');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(
      path.join(outDir, `inspector-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
      JSON.stringify({ lineages: LINEAGES, samples: SAMPLES, cores: os.cpus().length, results }, null, 2),
    );
  } finally {
    await handle.close();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
