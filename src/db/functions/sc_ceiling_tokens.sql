-- The head's hard ceiling in tokens (src/db/auto-compaction.ts): the model's context window
-- when the lineage knows it, and never more than twice the threshold. An append that leaves the
-- head at or above it requests a compaction even during a cooldown. Null without a threshold.
CREATE OR REPLACE FUNCTION sc_ceiling_tokens(p_compact_at_tokens integer, p_context_window integer)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_compact_at_tokens IS NULL THEN NULL
              ELSE least(2::bigint * p_compact_at_tokens, coalesce(p_context_window::bigint, 2::bigint * p_compact_at_tokens)) END
$$;
