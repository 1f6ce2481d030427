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
