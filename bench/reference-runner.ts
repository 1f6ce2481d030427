/**
 * One caller of the reference design in a process of its own, so a fault scenario can freeze
 * (SIGSTOP) or kill it mid-summary: compacts the session named on the command line and prints
 * the outcome as one JSON line. Benchmark-only.
 */
import { Pool } from 'pg';
import { createLlmSummariser } from '../src/activities/summariser';
import { loadConfig } from '../src/config';
import { createReferenceDesign } from './reference-design';

async function main(): Promise<void> {
  const config = loadConfig();
  const pool = new Pool({ connectionString: config.databaseUrl, max: 4 });
  const summariser = createLlmSummariser(config.llm, { stallTimeoutMs: 600_000, requestTimeoutMs: 600_000 });
  const design = createReferenceDesign(pool, summariser, { leaseTtlMs: Number(process.env.REF_LEASE_TTL_MS ?? 60_000) });
  console.log('runner ready');
  const result = await design.compact(process.argv[2]);
  console.log(`RESULT ${JSON.stringify(result)}`);
  await pool.end();
}

main().catch((error) => {
  console.log(`ERROR ${String(error?.message ?? error)}`);
  process.exit(1);
});
