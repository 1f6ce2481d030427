-- Adds the requests that joined a job while it ran to its audit row (src/db/jobs.ts,
-- recordJoinedRequests), each once. Answers whether the row exists: none when the lineage was
-- erased (its id may be a new lineage's now), and then nothing of the job may touch it.
-- SECURITY DEFINER so that the worker's role needs no privilege on any table (issue 40 §1).
CREATE OR REPLACE FUNCTION sc_job_record_joined(p_job_id text, p_request_ids jsonb)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  UPDATE public.compactions c
     SET request_ids = c.request_ids || coalesce((
       SELECT jsonb_agg(j.id) FROM jsonb_array_elements(p_request_ids) AS j(id) WHERE NOT c.request_ids @> jsonb_build_array(j.id)), '[]'::jsonb)
   WHERE c.id = p_job_id;
  RETURN FOUND;
END
$$;
