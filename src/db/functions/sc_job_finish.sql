-- Decides a job that did not commit (src/db/jobs.ts, finishJob): only the greatest attempt seen
-- may (p.attempt, the fencing token of sc_compaction_begin), and a job that committed stays
-- committed. p: {jobId, attempt, outcome ('stale' | 'refused'), and the fields the attempt
-- measured: reason, tokensBefore, tokensAfter, messagesBefore, messagesAfter, promptTokens,
-- completionTokens, cachedPromptTokens, gate, gateResults, passedRungs, costs, gain}; a field
-- absent keeps the row's value, `reason`, `gate` and the JSON fields absent or null clear it.
-- Answers whether the row was decided. SECURITY DEFINER so that the worker's role needs no
-- privilege on any table (issue 40 §1).
CREATE OR REPLACE FUNCTION sc_job_finish(p jsonb)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
  IF p->>'outcome' NOT IN ('stale', 'refused') THEN
    RAISE EXCEPTION 'sc_job_finish decides stale or refused jobs only, not %', p->>'outcome';
  END IF;
  UPDATE public.compactions c SET
    outcome = p->>'outcome',
    reason = p->>'reason',
    tokens_before = CASE WHEN p ? 'tokensBefore' THEN (p->>'tokensBefore')::bigint ELSE c.tokens_before END,
    tokens_after = CASE WHEN p ? 'tokensAfter' THEN (p->>'tokensAfter')::bigint ELSE c.tokens_after END,
    messages_before = CASE WHEN p ? 'messagesBefore' THEN (p->>'messagesBefore')::integer ELSE c.messages_before END,
    messages_after = CASE WHEN p ? 'messagesAfter' THEN (p->>'messagesAfter')::integer ELSE c.messages_after END,
    summariser_prompt_tokens = CASE WHEN p ? 'promptTokens' THEN (p->>'promptTokens')::integer ELSE c.summariser_prompt_tokens END,
    summariser_completion_tokens = CASE WHEN p ? 'completionTokens' THEN (p->>'completionTokens')::integer ELSE c.summariser_completion_tokens END,
    summariser_cached_prompt_tokens = CASE WHEN p ? 'cachedPromptTokens' THEN (p->>'cachedPromptTokens')::integer ELSE c.summariser_cached_prompt_tokens END,
    gate = p->>'gate',
    gate_results = nullif(p->'gateResults', 'null'::jsonb),
    passed_rungs = nullif(p->'passedRungs', 'null'::jsonb),
    costs = nullif(p->'costs', 'null'::jsonb),
    gain = nullif(p->'gain', 'null'::jsonb),
    finished_at = now()
  WHERE c.id = p->>'jobId' AND c.attempts = (p->>'attempt')::integer AND c.outcome <> 'compacted';
  RETURN FOUND;
END
$$;
