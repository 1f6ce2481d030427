CREATE OR REPLACE FUNCTION sc_compaction_stale(p_head text, p_generation integer, p_reason text)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('outcome', 'stale', 'headSessionId', p_head, 'generation', p_generation, 'reason', p_reason);
$$;
