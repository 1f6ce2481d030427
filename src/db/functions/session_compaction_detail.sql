-- One compaction, for operators (OperatorClient.compaction, the inspector's compaction page):
-- {compaction, dialect, parentRows, writtenRows}, or null when no compaction has the id p_compaction_id
-- (1 to 300 characters). `compaction` is its audit row as stored (to_jsonb: column names, every
-- column); `dialect` the lineage's; `parentRows` every row of the session it compacted and
-- `writtenRows` the rows it wrote into the new head, each [{id, seq, lineageSeq, role, message,
-- tokenEstimate, originMessageId, writtenByCompaction, archivedAt, archivedByCompaction}] in seq order.
-- What became of each row (summarised, kept, masked, carried) the client works out
-- (src/db/lineage-queries.ts compactionDetail).
CREATE OR REPLACE FUNCTION session_compaction_detail(p_compaction_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_compaction public.compactions;
  v_parent jsonb;
  v_written jsonb;
BEGIN
  -- No id to qualify, but the tenant check all the same: an application login with no tenant is
  -- refused once tenants are on (sc_tenant_id); the row policies filter a tenant's rows.
  PERFORM public.sc_tenant_id(NULL);
  IF p_compaction_id IS NULL OR length(p_compaction_id) NOT BETWEEN 1 AND 300 THEN
    PERFORM public.sc_invalid('compactionId', 'must be a string of 1 to 300 characters');
  END IF;
  SELECT c.* INTO v_compaction FROM public.compactions c WHERE c.id = p_compaction_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT coalesce(jsonb_agg(r.row ORDER BY m.seq) FILTER (WHERE m.session_id = v_compaction.parent_session_id), '[]'::jsonb),
         coalesce(jsonb_agg(r.row ORDER BY m.seq)
                    FILTER (WHERE m.session_id = v_compaction.child_session_id AND m.written_by_compaction = v_compaction.id), '[]'::jsonb)
    INTO v_parent, v_written
    FROM public.messages m
    CROSS JOIN LATERAL (SELECT jsonb_build_object(
      'id', m.id, 'seq', m.seq, 'lineageSeq', m.lineage_seq, 'role', m.role, 'message', m.body, 'tokenEstimate', m.token_estimate,
      'originMessageId', m.origin_message_id, 'writtenByCompaction', m.written_by_compaction,
      'archivedAt', to_char(m.archived_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'archivedByCompaction', m.archived_by_compaction) AS row) r
   WHERE m.session_id IN (v_compaction.parent_session_id, v_compaction.child_session_id);
  RETURN jsonb_build_object(
    'compaction', to_jsonb(v_compaction),
    'dialect', (SELECT l.dialect FROM public.lineages l WHERE l.id = v_compaction.lineage_id),
    'parentRows', v_parent,
    'writtenRows', v_written);
END
$$;
