-- A lineage's incarnation: a random id set when the lineage is created. Erasing a lineage and
-- creating the same id again gives a new one, so a compaction job, a writer or a keyed resend
-- that holds the old one is refused instead of landing in the new lineage
-- (sc_compaction_begin, sc_compaction_commit, session_append). Existing lineages get one each.
--
-- Token sums are 64-bit: a head's tokens (lineages.head_tokens) and a compaction's tokens
-- before and after. One message's count stays a 32-bit integer, bounded by the data plane
-- (session_append refuses a count above 10,000,000).
ALTER TABLE "lineages" ADD COLUMN "incarnation" text DEFAULT gen_random_uuid()::text NOT NULL;--> statement-breakpoint
ALTER TABLE "lineages" ALTER COLUMN "head_tokens" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "compactions" ALTER COLUMN "tokens_before" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "compactions" ALTER COLUMN "tokens_after" SET DATA TYPE bigint;
