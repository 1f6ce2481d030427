-- A dialect is one registry entry (src/compaction/dialects/registry.ts): the dialects table holds
-- its rows, the lineages' dialect column refers to it instead of repeating the names in a CHECK,
-- and session_create and sc_check_batch read it. Each dialect's problem function is named after
-- it (sc_<dialect>_problem), created from src/db/functions after the migrations; the functions of
-- the old names stay until then (the sc_check_batch this migration finds still calls them), and
-- are dropped with the new definitions in one transaction (RETIRED_FUNCTIONS, src/db/database.ts).
CREATE TABLE IF NOT EXISTS "dialects" (
  "name" text PRIMARY KEY,
  "position" integer NOT NULL UNIQUE,
  "problem_function" text NOT NULL UNIQUE,
  "summary_marker_field" text NOT NULL,
  "reserved_name" text,
  CONSTRAINT "dialects_summary_marker_field_known" CHECK ("summary_marker_field" in ('content', 'parts'))
);
--> statement-breakpoint
INSERT INTO "dialects" ("name", "position", "problem_function", "summary_marker_field", "reserved_name") VALUES
  ('openai-chat', 1, 'sc_openai_chat_problem', 'content', 'context_summary'),
  ('openai-responses', 2, 'sc_openai_responses_problem', 'content', NULL),
  ('openai-agents', 3, 'sc_openai_agents_problem', 'content', NULL),
  ('anthropic', 4, 'sc_anthropic_problem', 'content', NULL),
  ('gemini', 5, 'sc_gemini_problem', 'parts', NULL)
ON CONFLICT ("name") DO NOTHING;
--> statement-breakpoint
ALTER TABLE "lineages" DROP CONSTRAINT IF EXISTS "lineages_dialect_known";
--> statement-breakpoint
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_dialect_dialects_name_fk" FOREIGN KEY ("dialect") REFERENCES "dialects"("name");
