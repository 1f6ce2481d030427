-- The ai-sdk dialect (the Vercel AI SDK's ModelMessage, src/compaction/dialects/ai-sdk.ts): its
-- row in the dialects table (src/compaction/dialects/registry.ts). Its problem function,
-- sc_ai_sdk_problem, is created from src/db/functions after the migrations, as every dialect's is.
INSERT INTO "dialects" ("name", "position", "problem_function", "summary_marker_field", "reserved_name") VALUES
  ('ai-sdk', 6, 'sc_ai_sdk_problem', 'content', NULL)
ON CONFLICT ("name") DO NOTHING;
