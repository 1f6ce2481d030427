/** `npm run db:migrate`: applies the SQL migrations to DATABASE_URL (the worker also does on start). */
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
