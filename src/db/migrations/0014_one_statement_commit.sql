-- The columns of a compaction job in two round trips to Postgres: one statement opens the job
-- and reads what it summarises (src/db/functions/sc_compaction_begin.sql), one statement
-- publishes it (src/db/functions/sc_compaction_commit.sql). The lineage lock is held for that
-- one statement only, never while the activity gates the head.
--
-- The commit is optimistic: the activity gates the exact head it would write (the compacted
-- messages followed by the rows appended after the watermark that it has seen) and names those
-- rows. The commit function, under the lineage lock, writes only if the live rows after the
-- watermark are exactly those; otherwise it writes nothing and returns them, and the activity
-- gates again with them (src/db/commit.ts, a bounded number of times, counted in
-- compactions.commit_retries). So the head written is always a head the gates passed.
--
-- compactions.summariser_cached_prompt_tokens: the prompt tokens the provider served from its
-- prompt cache (`cached_tokens`, `cache_read_input_tokens`), where it reports them.
ALTER TABLE "compactions" ADD COLUMN "commit_retries" integer;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "summariser_cached_prompt_tokens" integer;
