ALTER TABLE "lineages" ADD COLUMN "dialect" text DEFAULT 'openai-chat' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "body" jsonb;--> statement-breakpoint
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_dialect_known" CHECK ("lineages"."dialect" in ('openai-chat', 'openai-responses', 'anthropic', 'gemini'));--> statement-breakpoint
-- Every stored message becomes its body: the chat message as the old columns held it (the
-- next migration drops those columns). Rows keep their ids, sequence numbers and lineage.
UPDATE "messages" SET "body" = jsonb_build_object('role', "role", 'content', coalesce("content", 'null'::jsonb))
  || CASE WHEN "tool_calls" IS NOT NULL THEN jsonb_build_object('tool_calls', "tool_calls") ELSE '{}'::jsonb END
  || CASE WHEN "tool_call_id" IS NOT NULL AND "tool_call_id" <> '' THEN jsonb_build_object('tool_call_id', "tool_call_id") ELSE '{}'::jsonb END
  || CASE WHEN "name" IS NOT NULL AND "name" <> '' THEN jsonb_build_object('name', "name") ELSE '{}'::jsonb END
WHERE "body" IS NULL;
--> statement-breakpoint
-- Copies a compaction wrote (kept and carried rows) were written from values the ORM had
-- parsed a second time, so a JSON text tool output ("42", "{...}") could be stored as a number
-- or an object in the copy. Every copy takes its origin's body again: appended rows were
-- always stored exactly.
UPDATE "messages" AS "m" SET "body" = "o"."body" FROM "messages" AS "o"
WHERE "m"."origin_message_id" = "o"."id" AND "m"."body" IS DISTINCT FROM "o"."body";
