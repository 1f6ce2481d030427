-- A busy lineage keeps compacting (src/db/functions/sc_compaction_commit.sql). A compaction
-- that shrank what it summarised made progress even when the rows appended meanwhile leave the
-- head at or above the threshold: it asks for a follow-up compaction at once instead of
-- cooling down, and records it. lineages.auto_follow_ups counts the follow-ups asked in a row
-- (a commit under the threshold resets it); past the bound none is asked at once, and the next
-- append asks as usual.
-- compactions.follow_up_request_id: the request the commit asked the workflow to run next.
ALTER TABLE "lineages" ADD COLUMN "auto_follow_ups" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "follow_up_request_id" text;
