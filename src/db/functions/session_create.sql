-- Creates a lineage with its root session, in a dialect (default openai-chat; the known ones are
-- the rows of the dialects table, src/compaction/dialects/registry.ts). Idempotent for
-- the same parameters; other parameters for an existing id are a SessionConflictError, and a
-- closed lineage is a LineageClosedError (it takes nothing more; erase it to reuse the id).
-- p_rungs: the rungs the lineage may use (names of sc_rung_names(), stored in its order without
-- repeats); null: the worker's default (COMPACTION_RUNGS). The trim may not be the only rung: it
-- drops the oldest messages without a summary, a last resort behind another rung.
CREATE OR REPLACE FUNCTION session_create(p_session_id text, p_source text DEFAULT NULL, p_mode text DEFAULT 'rotate', p_compact_at_tokens integer DEFAULT NULL,
                               p_model text DEFAULT NULL, p_context_window integer DEFAULT NULL, p_dialect text DEFAULT 'openai-chat',
                               p_rungs text[] DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  v_mode text := coalesce(p_mode, 'rotate');
  v_dialect text := coalesce(p_dialect, 'openai-chat');
  v_rungs text[];
  inserted text;
  owner text;
  g public.lineages;
BEGIN
  IF p_session_id IS NULL OR p_session_id = '' THEN
    PERFORM public.sc_invalid('sessionId', 'must be a non-empty string');
  END IF;
  -- A tenant's login names its own lineages only (sc_tenant_id); checked empty before, whole after.
  p_session_id := public.sc_tenant_id(p_session_id);
  IF length(regexp_replace(p_session_id, '--g[0-9]+$', '')) > 128 THEN
    PERFORM public.sc_invalid('sessionId', 'must be at most 128 characters');
  END IF;
  IF p_session_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN
    PERFORM public.sc_invalid('sessionId', 'may contain only letters, digits and . _ : - and must start with a letter or digit');
  END IF;
  IF p_session_id ~ '--g[0-9]+$' THEN
    PERFORM public.sc_invalid('sessionId', 'must not end in --g<number> (reserved for compaction children)');
  END IF;
  IF v_mode NOT IN ('rotate', 'in_place') THEN
    PERFORM public.sc_invalid('mode', 'must be one of rotate, in_place');
  END IF;
  IF NOT EXISTS (SELECT 1 FROM public.dialects WHERE name = v_dialect) THEN
    PERFORM public.sc_invalid('dialect', 'must be one of ' || (SELECT string_agg(name, ', ' ORDER BY position) FROM public.dialects));
  END IF;
  IF p_source IS NOT NULL AND (length(p_source) = 0 OR length(p_source) > 100) THEN
    PERFORM public.sc_invalid('source', 'must be a string of 1 to 100 characters');
  END IF;
  IF p_compact_at_tokens IS NOT NULL AND p_compact_at_tokens < 1 THEN
    PERFORM public.sc_invalid('compactAtTokens', 'must be a positive whole number');
  END IF;
  IF p_model IS NOT NULL AND (length(p_model) = 0 OR length(p_model) > 200) THEN
    PERFORM public.sc_invalid('model', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_context_window IS NOT NULL AND p_context_window < 1 THEN
    PERFORM public.sc_invalid('contextWindow', 'must be a positive whole number');
  END IF;
  IF p_rungs IS NOT NULL THEN
    IF cardinality(p_rungs) = 0 OR EXISTS (SELECT 1 FROM unnest(p_rungs) r WHERE r IS NULL OR NOT r = ANY (public.sc_rung_names())) THEN
      PERFORM public.sc_invalid('rungs', 'must be a non-empty list of ' || array_to_string(public.sc_rung_names(), ', '));
    END IF;
    v_rungs := ARRAY(SELECT r FROM unnest(public.sc_rung_names()) WITH ORDINALITY AS k(r, o) WHERE r = ANY (p_rungs) ORDER BY o);
    IF v_rungs = ARRAY['trim'] THEN
      PERFORM public.sc_invalid('rungs', 'must name a rung other than trim (the trim is a last resort behind another rung)');
    END IF;
  END IF;
  INSERT INTO public.lineages (id, head_session_id, mode, dialect, source, compact_at_tokens, model, context_window, rungs)
    VALUES (p_session_id, p_session_id, v_mode, v_dialect, p_source, p_compact_at_tokens, p_model, p_context_window, v_rungs)
    ON CONFLICT DO NOTHING RETURNING id INTO inserted;
  IF inserted IS NOT NULL THEN
    INSERT INTO public.sessions (id, lineage_id, source) VALUES (p_session_id, p_session_id, p_source);
    SELECT * INTO g FROM public.lineages WHERE id = p_session_id;
    RETURN public.sc_lineage_json(g) || '{"created": true}';
  END IF;
  SELECT lineage_id INTO owner FROM public.sessions WHERE id = p_session_id;
  IF owner IS DISTINCT FROM p_session_id THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists as a compaction child in another lineage', to_jsonb(p_session_id)::text),
      jsonb_build_object('sessionId', p_session_id, 'detail', 'as a compaction child in another lineage'));
  END IF;
  SELECT * INTO g FROM public.lineages WHERE id = p_session_id;
  IF g.closed_at IS NOT NULL THEN
    PERFORM public.sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  IF g.mode <> v_mode THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with mode %s', to_jsonb(p_session_id)::text, g.mode),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with mode %s', g.mode)));
  END IF;
  IF g.dialect <> v_dialect THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with dialect %s', to_jsonb(p_session_id)::text, g.dialect),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with dialect %s', g.dialect)));
  END IF;
  IF g.source IS DISTINCT FROM p_source THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with source %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.source)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with source %s', coalesce(to_jsonb(g.source)::text, 'null'))));
  END IF;
  IF g.compact_at_tokens IS DISTINCT FROM p_compact_at_tokens THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with compactAtTokens %s', to_jsonb(p_session_id)::text, coalesce(g.compact_at_tokens::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with compactAtTokens %s', coalesce(g.compact_at_tokens::text, 'null'))));
  END IF;
  IF g.model IS DISTINCT FROM p_model THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with model %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.model)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with model %s', coalesce(to_jsonb(g.model)::text, 'null'))));
  END IF;
  IF g.context_window IS DISTINCT FROM p_context_window THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with contextWindow %s', to_jsonb(p_session_id)::text, coalesce(g.context_window::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with contextWindow %s', coalesce(g.context_window::text, 'null'))));
  END IF;
  IF g.rungs IS DISTINCT FROM v_rungs THEN
    PERFORM public.sc_raise('SessionConflictError', format('session %s already exists with rungs %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.rungs)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with rungs %s', coalesce(to_jsonb(g.rungs)::text, 'null'))));
  END IF;
  RETURN public.sc_lineage_json(g) || '{"created": false}';
END
$$;
