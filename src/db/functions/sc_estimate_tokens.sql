-- The openai-chat token estimate of one message (src/compaction/tokens.ts estimateTokens via
-- the openai-chat texts): 4 for framing plus a quarter of its characters (text parts, the
-- name, arguments or input and id of function and custom tool calls, tool_call_id, name).
CREATE OR REPLACE FUNCTION sc_estimate_tokens(m jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  chars integer := 0;
BEGIN
  chars := public.sc_utf16_length(public.sc_text_of(m));
  IF jsonb_typeof(m->'tool_calls') = 'array' THEN
    chars := chars + coalesce((SELECT sum(
        public.sc_utf16_length(coalesce(CASE WHEN jsonb_typeof(c->'function') = 'object' THEN c#>>'{function,name}' ELSE c#>>'{custom,name}' END, ''))
      + public.sc_utf16_length(coalesce(CASE WHEN jsonb_typeof(c->'function') = 'object' THEN c#>>'{function,arguments}' ELSE c#>>'{custom,input}' END, ''))
      + public.sc_utf16_length(coalesce(c->>'id', '')))
      FROM jsonb_array_elements(m->'tool_calls') c WHERE jsonb_typeof(c) = 'object'), 0);
  END IF;
  chars := chars + coalesce(public.sc_utf16_length(m->>'tool_call_id'), 0) + coalesce(public.sc_utf16_length(m->>'name'), 0);
  RETURN 4 + ceil(chars / 4.0)::integer;
END
$$;
