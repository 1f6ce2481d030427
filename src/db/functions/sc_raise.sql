-- Raises an error a caller can cause, for every client in every language: SQLSTATE SC400
-- (InvalidInputError), SC404 (SessionNotFoundError), SC409 (SessionConflictError), SC410
-- (LineageClosedError), SC411 (LineageErasedError: the lineage incarnation the caller holds
-- was erased; its id may name a new lineage now) or SC412 (HistoryMismatchError: the head's
-- last messages are not the ones the caller expected). The message is the client's error message; DETAIL is JSON:
-- {"type": ..., "field"|"sessionId"|"lineageId": ..., "detail": ...}, so any client maps it
-- to its typed error (src/db/data-plane.ts dataPlaneError).
CREATE OR REPLACE FUNCTION sc_raise(p_type text, p_message text, p_detail jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = CASE p_type
      WHEN 'InvalidInputError' THEN 'SC400'
      WHEN 'SessionNotFoundError' THEN 'SC404'
      WHEN 'SessionConflictError' THEN 'SC409'
      WHEN 'LineageClosedError' THEN 'SC410'
      WHEN 'LineageErasedError' THEN 'SC411'
      WHEN 'HistoryMismatchError' THEN 'SC412'
      ELSE 'SC500' END,
    MESSAGE = p_message,
    DETAIL = (jsonb_build_object('type', p_type) || p_detail)::text;
END
$$;
