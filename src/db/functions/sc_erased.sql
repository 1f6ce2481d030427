-- A LineageErasedError (SC411): the lineage incarnation the caller holds for this session id
-- was erased; the id is gone, or names a lineage created again since.
CREATE OR REPLACE FUNCTION sc_erased(p_session_id text) RETURNS void
LANGUAGE sql AS $$
  SELECT public.sc_raise('LineageErasedError',
    format('the session lineage of %s that this caller wrote to was erased; create the session again to write to the lineage that has its id now', to_jsonb(p_session_id)::text),
    jsonb_build_object('sessionId', p_session_id));
$$;
