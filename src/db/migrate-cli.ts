/**
 * `npm run db:migrate` (`session-compaction migrate`), the deploy step: applies the SQL
 * migrations, the function files and the roles' grants to DATABASE_URL, as the migrator, and
 * records the migration level. Workers check that level at start and refuse to run behind it.
 */
import { loadConfig } from '../config';
import { ensureDatabaseExists, openDatabase, runMigrations } from './database';

async function main(): Promise<void> {
  const { databaseUrl } = loadConfig();
  await ensureDatabaseExists(databaseUrl);
  const database = openDatabase(databaseUrl, { max: 1 });
  try {
    await runMigrations(database);
    console.log(`migrations applied to ${new URL(databaseUrl).host}${new URL(databaseUrl).pathname}`);
  } finally {
    await database.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
