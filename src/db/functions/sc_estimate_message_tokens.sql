-- The token estimate of one message (src/compaction/tokens.ts estimateTokens): openai-chat by
-- sc_estimate_tokens; other dialects (ai-sdk included) 4 plus a quarter of the UTF-16 length of every string
-- value in the message.
CREATE OR REPLACE FUNCTION sc_estimate_message_tokens(p_dialect text, m jsonb) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p_dialect = 'openai-chat' THEN public.sc_estimate_tokens(m)
    ELSE 4 + ceil(coalesce((SELECT sum(public.sc_utf16_length(v #>> '{}')) FROM jsonb_path_query(m, 'strict $.**') AS v WHERE jsonb_typeof(v) = 'string'), 0) / 4.0)::integer END;
$$;
