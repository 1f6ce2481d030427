-- A SessionNotFoundError (SC404): no session has this id.
CREATE OR REPLACE FUNCTION sc_not_found(p_session_id text) RETURNS void
LANGUAGE sql AS $$
  SELECT public.sc_raise('SessionNotFoundError', format('session %s does not exist', to_jsonb(p_session_id)::text), jsonb_build_object('sessionId', p_session_id));
$$;
