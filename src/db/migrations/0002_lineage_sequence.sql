ALTER TABLE "lineages" ADD COLUMN "appended_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "head_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "compact_at_tokens" integer;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "lineage_seq" integer;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "archived_by_compaction" text;