-- One page of lineages in id order, for operators (OperatorClient.listLineages, the inspector, `sessions
-- list`): at most p_limit (1 to 200) after the lineage id p_after (keyset paging on the primary key;
-- NULL or '': from the first), filtered by p_search (a case-insensitive substring of any of the
-- lineage's session ids), p_source, p_status ('live' or 'closed') and p_last_outcome (the outcome of
-- the latest compaction: running, compacted, stale, refused, aborted, or 'none' for never compacted).
-- Answers {lineages: [{lineageId, headSessionId, source, mode, dialect, generation, headTokens, closed,
-- createdAt, lastOutcome, lastReason, lastCompactionAt}], next}: `next` is the p_after of the next
-- page, null on the last one.
CREATE OR REPLACE FUNCTION session_list_lineages(p_search text, p_source text, p_status text, p_last_outcome text, p_after text, p_limit integer)
RETURNS jsonb LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_search text := nullif(p_search, '');
  v_source text := nullif(p_source, '');
  v_after text := nullif(p_after, '');
  v_pattern text;
  v_where text := 'true';
  v_rows jsonb;
  v_count integer;
BEGIN
  -- No id to qualify, but the tenant check all the same: an application login with no tenant is
  -- refused once tenants are on (sc_tenant_id); the row policies filter a tenant's rows.
  PERFORM public.sc_tenant_id(NULL);
  IF p_limit IS NULL OR p_limit < 1 OR p_limit > 200 THEN
    PERFORM public.sc_invalid('limit', 'must be a whole number from 1 to 200');
  END IF;
  IF length(p_search) > 200 THEN
    PERFORM public.sc_invalid('search', 'must be a string of at most 200 characters');
  END IF;
  IF length(p_source) > 200 THEN
    PERFORM public.sc_invalid('source', 'must be a string of at most 200 characters');
  END IF;
  IF length(p_after) > 200 THEN
    PERFORM public.sc_invalid('after', 'must be a string of at most 200 characters');
  END IF;
  IF p_status IS NOT NULL AND p_status NOT IN ('live', 'closed') THEN
    PERFORM public.sc_invalid('status', 'must be one of live, closed');
  END IF;
  IF p_last_outcome IS NOT NULL AND p_last_outcome NOT IN ('running', 'compacted', 'stale', 'refused', 'aborted', 'none') THEN
    PERFORM public.sc_invalid('lastOutcome', 'must be one of running, compacted, stale, refused, aborted, none');
  END IF;
  -- ILIKE's escape character is the backslash: the search matches as text, not as a pattern.
  v_pattern := '%' || regexp_replace(v_search, '([\\%_])', '\\\1', 'g') || '%';

  -- Only the filters given, planned for this call (as a generic plan of every filter with
  -- "IS NULL OR" would not be: it scans where a keyset page or a search needs an index).
  IF v_after IS NOT NULL THEN v_where := v_where || ' AND l.id > $1'; END IF;
  IF v_source IS NOT NULL THEN v_where := v_where || ' AND l.source = $2'; END IF;
  IF p_status = 'live' THEN v_where := v_where || ' AND l.closed_at IS NULL'; END IF;
  IF p_status = 'closed' THEN v_where := v_where || ' AND l.closed_at IS NOT NULL'; END IF;
  -- One scan of sessions (every lineage's root and children), not a subquery per lineage.
  IF v_search IS NOT NULL THEN v_where := v_where || ' AND l.id IN (SELECT s.lineage_id FROM public.sessions s WHERE s.id ILIKE $3)'; END IF;
  IF p_last_outcome = 'none' THEN v_where := v_where || ' AND last.outcome IS NULL';
  ELSIF p_last_outcome IS NOT NULL THEN v_where := v_where || ' AND last.outcome = $4'; END IF;

  EXECUTE format($q$
    WITH page AS (
      SELECT l.id, l.head_session_id, l.source, l.mode, l.dialect, l.generation, l.head_tokens, l.closed_at, l.created_at,
             last.outcome, last.reason, last.started_at AS last_at
        FROM public.lineages l
        LEFT JOIN LATERAL (
          SELECT c.outcome, c.reason, c.started_at FROM public.compactions c WHERE c.lineage_id = l.id ORDER BY c.started_at DESC LIMIT 1
        ) last ON true
       WHERE %s
       ORDER BY l.id
       LIMIT $5 + 1
    ), numbered AS (
      SELECT page.*, row_number() OVER (ORDER BY page.id) AS n FROM page
    )
    SELECT count(*)::integer,
           coalesce(jsonb_agg(jsonb_build_object(
             'lineageId', p.id, 'headSessionId', p.head_session_id, 'source', p.source, 'mode', p.mode, 'dialect', p.dialect,
             'generation', p.generation, 'headTokens', p.head_tokens, 'closed', p.closed_at IS NOT NULL,
             'createdAt', to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'lastOutcome', p.outcome, 'lastReason', p.reason,
             'lastCompactionAt', to_char(p.last_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY p.n) FILTER (WHERE p.n <= $5), '[]'::jsonb)
      FROM numbered p$q$, v_where)
    INTO v_count, v_rows
    USING v_after, v_source, v_pattern, p_last_outcome, p_limit;

  RETURN jsonb_build_object('lineages', v_rows, 'next', CASE WHEN v_count > p_limit THEN v_rows->-1->'lineageId' ELSE 'null'::jsonb END);
END
$$;
