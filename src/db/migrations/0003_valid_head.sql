ALTER TABLE "compactions" ADD COLUMN "summarised_from_seq" integer;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "summarised_to_seq" integer;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "gate" text;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "gate_results" jsonb;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "context_window" integer;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "auto_request_id" text;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "auto_request_generation" integer;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "auto_requested_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "auto_failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "lineages" ADD COLUMN "auto_cooldown_until" timestamp with time zone;