-- The ledger (src/compaction/ledger.ts) and the rung of each compaction.
--
-- lineages.ledger: the ledger of the current head, which the next compaction merges into its
-- own. It lives on the lineage, not only in the audit row, so that retention, which deletes
-- old audit rows, never takes a generation's ledger away from the head that carries it.
-- compactions.ledger: the ledger a compaction committed, for the inspector and callers.
-- compactions.rung: how the compaction shrank the head: 'summary' (an LLM or the built-in
-- summariser wrote the summary) or 'masking' (old tool outputs replaced, no summariser call).
ALTER TABLE "lineages" ADD COLUMN "ledger" jsonb;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "ledger" jsonb;--> statement-breakpoint
ALTER TABLE "compactions" ADD COLUMN "rung" text;--> statement-breakpoint
ALTER TABLE "compactions" ADD CONSTRAINT "compactions_rung_known" CHECK ("compactions"."rung" IS NULL OR "compactions"."rung" IN ('summary', 'masking'));
--> statement-breakpoint
-- The ledger of a session's lineage head (what its latest compaction carries), or null before
-- the first compaction that wrote one. Any session id of the lineage (or the lineage id) will do.
CREATE FUNCTION session_ledger(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  g lineages;
BEGIN
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  RETURN g.ledger;
END
$$;
