-- The native rung (src/activities/native-compaction): the provider's own compaction (OpenAI
-- `POST /responses/compact`, Anthropic's compact_20260112 edit), tried after masking and before
-- the summary. Its compactions say `rung = 'native'`.
ALTER TABLE "compactions" DROP CONSTRAINT IF EXISTS "compactions_rung_known";--> statement-breakpoint
ALTER TABLE "compactions" ADD CONSTRAINT "compactions_rung_known" CHECK ("compactions"."rung" IS NULL OR "compactions"."rung" IN ('summary', 'masking', 'native', 'trim'));
