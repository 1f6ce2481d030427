-- What the last `npm run db:migrate` (runMigrations) left this database at, so a worker can check
-- it at start instead of running DDL (issue 40 §1; docs/security.md, "Roles"): one row, written
-- in the transaction that applies the function files. `migrated_to` is the `when` of the newest
-- migration of the release that wrote it (drizzle's `created_at` of that migration),
-- `functions_digest` the SHA-256 of that release's function files (src/db/database.ts,
-- functionsDigest). sc_apply_grants() lets the worker and the reader read it, no one else write it.
CREATE TABLE IF NOT EXISTS "schema_level" (
  "one" boolean PRIMARY KEY DEFAULT true CHECK ("one"),
  "migrated_to" bigint NOT NULL,
  "functions_digest" text NOT NULL,
  "applied_at" timestamptz NOT NULL DEFAULT now()
);
