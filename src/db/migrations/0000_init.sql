CREATE TABLE "compactions" (
	"id" text PRIMARY KEY NOT NULL,
	"lineage_id" text NOT NULL,
	"parent_session_id" text NOT NULL,
	"child_session_id" text,
	"generation" integer NOT NULL,
	"request_ids" jsonb NOT NULL,
	"trigger" text NOT NULL,
	"model" text,
	"tokens_before" integer,
	"tokens_after" integer,
	"messages_before" integer,
	"messages_after" integer,
	"summariser_prompt_tokens" integer,
	"summariser_completion_tokens" integer,
	"watermark_seq" integer,
	"attempts" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"outcome" text NOT NULL,
	"reason" text
);
--> statement-breakpoint
CREATE TABLE "lineages" (
	"id" text PRIMARY KEY NOT NULL,
	"head_session_id" text NOT NULL,
	"generation" integer DEFAULT 0 NOT NULL,
	"mode" text NOT NULL,
	"source" text,
	"closed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "lineages_mode_known" CHECK ("lineages"."mode" in ('rotate', 'in_place'))
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"seq" integer NOT NULL,
	"role" text NOT NULL,
	"content" jsonb,
	"tool_calls" jsonb,
	"tool_call_id" text,
	"name" text,
	"token_estimate" integer NOT NULL,
	"origin_message_id" bigint,
	"written_by_compaction" text,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"lineage_id" text NOT NULL,
	"parent_session_id" text,
	"generation" integer DEFAULT 0 NOT NULL,
	"source" text,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone,
	"end_reason" text,
	CONSTRAINT "sessions_end_has_reason" CHECK (("sessions"."ended_at" is null) = ("sessions"."end_reason" is null))
);
--> statement-breakpoint
ALTER TABLE "compactions" ADD CONSTRAINT "compactions_lineage_id_lineages_id_fk" FOREIGN KEY ("lineage_id") REFERENCES "public"."lineages"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_lineage_id_lineages_id_fk" FOREIGN KEY ("lineage_id") REFERENCES "public"."lineages"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_parent_session_id_sessions_id_fk" FOREIGN KEY ("parent_session_id") REFERENCES "public"."sessions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "compactions_one_commit_per_generation" ON "compactions" USING btree ("lineage_id","generation") WHERE "compactions"."outcome" = 'compacted';--> statement-breakpoint
CREATE INDEX "compactions_lineage" ON "compactions" USING btree ("lineage_id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_session_seq" ON "messages" USING btree ("session_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_one_child_per_parent" ON "sessions" USING btree ("parent_session_id");--> statement-breakpoint
CREATE INDEX "sessions_lineage" ON "sessions" USING btree ("lineage_id");