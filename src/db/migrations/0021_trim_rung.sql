-- The trim rung (src/compaction/trim.ts): the last resort when no summary can bring the head under
-- its target, it drops the oldest groups and keeps the ledger of what it dropped. Its
-- compactions say `rung = 'trim'`. compactions.passed_rungs: why each rung before the one that
-- answered passed, by rung name (null when none did); sc_compaction_commit writes it.
ALTER TABLE "compactions" DROP CONSTRAINT IF EXISTS "compactions_rung_known";--> statement-breakpoint
ALTER TABLE "compactions" ADD CONSTRAINT "compactions_rung_known" CHECK ("compactions"."rung" IS NULL OR "compactions"."rung" IN ('summary', 'masking', 'trim'));
--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN IF NOT EXISTS "passed_rungs" jsonb;
