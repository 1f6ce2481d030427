-- Records a job the workflow gave up on (src/db/jobs.ts, abortJob), under the lineage lock so
-- that it is ordered with any commit of the same job: a job that committed stays committed.
-- p: {jobId, lineageId, parentSessionId, generation (the child's), requestIds, trigger, model,
-- reason}. Answers {missing: true} for an unknown lineage, else {aborted, headSessionId,
-- generation} with the head Postgres holds. SECURITY DEFINER so that the worker's role needs no
-- privilege on any table (issue 40 §1).
CREATE OR REPLACE FUNCTION sc_job_abort(p jsonb)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
  g public.lineages;
  v_outcome text;
BEGIN
  SELECT * INTO g FROM public.lineages WHERE id = p->>'lineageId' FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('missing', true);
  END IF;
  INSERT INTO public.compactions AS c (id, lineage_id, parent_session_id, generation, request_ids, trigger, model, outcome, reason, finished_at)
  VALUES (p->>'jobId', p->>'lineageId', p->>'parentSessionId', (p->>'generation')::integer, p->'requestIds', p->>'trigger', p->>'model',
          'aborted', p->>'reason', now())
  ON CONFLICT (id) DO UPDATE SET outcome = 'aborted', reason = excluded.reason, finished_at = excluded.finished_at
    WHERE c.outcome <> 'compacted'
  RETURNING c.outcome INTO v_outcome;
  RETURN jsonb_build_object('aborted', v_outcome IS NOT NULL, 'headSessionId', g.head_session_id, 'generation', g.generation);
END
$$;
