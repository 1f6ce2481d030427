-- A lineage row as the data plane answers it (camelCase keys); `rungs` only when set at create.
CREATE OR REPLACE FUNCTION sc_lineage_json(g public.lineages) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'lineageId', g.id, 'headSessionId', g.head_session_id, 'generation', g.generation, 'mode', g.mode, 'dialect', g.dialect,
    'source', g.source, 'compactAtTokens', g.compact_at_tokens, 'model', g.model, 'contextWindow', g.context_window,
    'closed', g.closed_at IS NOT NULL, 'incarnation', g.incarnation)
    || CASE WHEN g.rungs IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('rungs', to_jsonb(g.rungs)) END;
$$;
