-- The Agents SDK dialect and taking messages back.
--
-- `openai-agents` (src/compaction/dialects/openai-agents.ts): the OpenAI Agents SDK's history
-- items, the Responses items in the SDK's spelling (callId, function_call_result, reasoning
-- content). Every function that reads a message by dialect learns it.
--
-- session_replace_tail: the last messages of a lineage's head are taken back (kept, archived,
-- `retracted_by` naming the operation) and others may take their place, in one transaction
-- under the lineage lock: what the agent frameworks' sessions call pop, clear and "replace an
-- exact suffix". A compaction whose summary read a message taken back meanwhile does not
-- commit (src/db/session-store.ts commitCompaction), so nothing taken back comes back.
ALTER TABLE "messages" ADD COLUMN "retracted_by" text;--> statement-breakpoint
ALTER TABLE "lineages" DROP CONSTRAINT "lineages_dialect_known";--> statement-breakpoint
ALTER TABLE "lineages" ADD CONSTRAINT "lineages_dialect_known" CHECK ("lineages"."dialect" in ('openai-chat', 'openai-responses', 'openai-agents', 'anthropic', 'gemini'));--> statement-breakpoint
-- SC412 (HistoryMismatchError): the head's last messages are not the ones the caller expected.
CREATE OR REPLACE FUNCTION sc_raise(p_type text, p_message text, p_detail jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = CASE p_type
      WHEN 'InvalidInputError' THEN 'SC400'
      WHEN 'SessionNotFoundError' THEN 'SC404'
      WHEN 'SessionConflictError' THEN 'SC409'
      WHEN 'LineageClosedError' THEN 'SC410'
      WHEN 'HistoryMismatchError' THEN 'SC412'
      ELSE 'SC500' END,
    MESSAGE = p_message,
    DETAIL = (jsonb_build_object('type', p_type) || p_detail)::text;
END
$$;
--> statement-breakpoint
-- One openai-agents item's structural problem (src/compaction/dialects/openai-agents.ts check).
CREATE FUNCTION sc_agents_problem(m jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_type text := m->>'type';
  v_field text;
BEGIN
  IF NOT m ? 'type' OR v_type = 'message' THEN
    RETURN sc_responses_problem(m);
  END IF;
  IF jsonb_typeof(m->'type') <> 'string' OR v_type = '' THEN
    RETURN jsonb_build_object('field', 'type', 'detail', 'must be a non-empty string');
  END IF;
  IF v_type IN ('function_call', 'function_call_result', 'function_call_output', 'computer_call', 'computer_call_result', 'computer_call_output',
                'shell_call', 'shell_call_output', 'apply_patch_call', 'apply_patch_call_output', 'program', 'program_output') THEN
    v_field := CASE WHEN NOT m ? 'callId' AND m ? 'call_id' THEN 'call_id' ELSE 'callId' END;
    IF jsonb_typeof(m->v_field) IS DISTINCT FROM 'string' OR m->>v_field = '' THEN
      RETURN jsonb_build_object('field', v_field, 'detail', 'must be a string that is not empty');
    END IF;
  END IF;
  IF v_type = 'function_call' THEN
    IF jsonb_typeof(m->'name') IS DISTINCT FROM 'string' OR m->>'name' = '' THEN RETURN jsonb_build_object('field', 'name', 'detail', 'must be a string that is not empty'); END IF;
    IF jsonb_typeof(m->'arguments') IS DISTINCT FROM 'string' THEN RETURN jsonb_build_object('field', 'arguments', 'detail', 'must be a string'); END IF;
  ELSIF v_type IN ('function_call_result', 'function_call_output') THEN
    IF coalesce(jsonb_typeof(m->'output'), 'missing') NOT IN ('string', 'array', 'object') THEN
      RETURN jsonb_build_object('field', 'output', 'detail', CASE WHEN m ? 'output' THEN 'must be a string, a content part or a list of them' ELSE 'is required' END);
    END IF;
  ELSIF v_type = 'reasoning' THEN
    IF m ? 'content' AND jsonb_typeof(m->'content') <> 'array' THEN RETURN jsonb_build_object('field', 'content', 'detail', 'must be an array of parts'); END IF;
    IF m ? 'summary' AND jsonb_typeof(m->'summary') <> 'array' THEN RETURN jsonb_build_object('field', 'summary', 'detail', 'must be an array of parts'); END IF;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION session_create(p_session_id text, p_source text DEFAULT NULL, p_mode text DEFAULT 'rotate', p_compact_at_tokens integer DEFAULT NULL,
                               p_model text DEFAULT NULL, p_context_window integer DEFAULT NULL, p_dialect text DEFAULT 'openai-chat')
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_mode text := coalesce(p_mode, 'rotate');
  v_dialect text := coalesce(p_dialect, 'openai-chat');
  inserted text;
  owner text;
  g lineages;
BEGIN
  IF p_session_id IS NULL OR p_session_id = '' THEN
    PERFORM sc_invalid('sessionId', 'must be a non-empty string');
  END IF;
  IF length(regexp_replace(p_session_id, '--g[0-9]+$', '')) > 128 THEN
    PERFORM sc_invalid('sessionId', 'must be at most 128 characters');
  END IF;
  IF p_session_id !~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$' THEN
    PERFORM sc_invalid('sessionId', 'may contain only letters, digits and . _ : - and must start with a letter or digit');
  END IF;
  IF p_session_id ~ '--g[0-9]+$' THEN
    PERFORM sc_invalid('sessionId', 'must not end in --g<number> (reserved for compaction children)');
  END IF;
  IF v_mode NOT IN ('rotate', 'in_place') THEN
    PERFORM sc_invalid('mode', 'must be one of rotate, in_place');
  END IF;
  IF v_dialect NOT IN ('openai-chat', 'openai-responses', 'openai-agents', 'anthropic', 'gemini') THEN
    PERFORM sc_invalid('dialect', 'must be one of openai-chat, openai-responses, openai-agents, anthropic, gemini');
  END IF;
  IF p_source IS NOT NULL AND (length(p_source) = 0 OR length(p_source) > 100) THEN
    PERFORM sc_invalid('source', 'must be a string of 1 to 100 characters');
  END IF;
  IF p_compact_at_tokens IS NOT NULL AND p_compact_at_tokens < 1 THEN
    PERFORM sc_invalid('compactAtTokens', 'must be a positive whole number');
  END IF;
  IF p_model IS NOT NULL AND (length(p_model) = 0 OR length(p_model) > 200) THEN
    PERFORM sc_invalid('model', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_context_window IS NOT NULL AND p_context_window < 1 THEN
    PERFORM sc_invalid('contextWindow', 'must be a positive whole number');
  END IF;
  INSERT INTO lineages (id, head_session_id, mode, dialect, source, compact_at_tokens, model, context_window)
    VALUES (p_session_id, p_session_id, v_mode, v_dialect, p_source, p_compact_at_tokens, p_model, p_context_window)
    ON CONFLICT DO NOTHING RETURNING id INTO inserted;
  IF inserted IS NOT NULL THEN
    INSERT INTO sessions (id, lineage_id, source) VALUES (p_session_id, p_session_id, p_source);
    SELECT * INTO g FROM lineages WHERE id = p_session_id;
    RETURN sc_lineage_json(g) || '{"created": true}';
  END IF;
  SELECT lineage_id INTO owner FROM sessions WHERE id = p_session_id;
  IF owner IS DISTINCT FROM p_session_id THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists as a compaction child in another lineage', to_jsonb(p_session_id)::text),
      jsonb_build_object('sessionId', p_session_id, 'detail', 'as a compaction child in another lineage'));
  END IF;
  SELECT * INTO g FROM lineages WHERE id = p_session_id;
  IF g.closed_at IS NOT NULL THEN
    PERFORM sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  IF g.mode <> v_mode THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with mode %s', to_jsonb(p_session_id)::text, g.mode),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with mode %s', g.mode)));
  END IF;
  IF g.dialect <> v_dialect THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with dialect %s', to_jsonb(p_session_id)::text, g.dialect),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with dialect %s', g.dialect)));
  END IF;
  IF g.source IS DISTINCT FROM p_source THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with source %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.source)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with source %s', coalesce(to_jsonb(g.source)::text, 'null'))));
  END IF;
  IF g.compact_at_tokens IS DISTINCT FROM p_compact_at_tokens THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with compactAtTokens %s', to_jsonb(p_session_id)::text, coalesce(g.compact_at_tokens::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with compactAtTokens %s', coalesce(g.compact_at_tokens::text, 'null'))));
  END IF;
  IF g.model IS DISTINCT FROM p_model THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with model %s', to_jsonb(p_session_id)::text, coalesce(to_jsonb(g.model)::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with model %s', coalesce(to_jsonb(g.model)::text, 'null'))));
  END IF;
  IF g.context_window IS DISTINCT FROM p_context_window THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with contextWindow %s', to_jsonb(p_session_id)::text, coalesce(g.context_window::text, 'null')),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with contextWindow %s', coalesce(g.context_window::text, 'null'))));
  END IF;
  RETURN sc_lineage_json(g) || '{"created": false}';
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION sc_check_batch(p_dialect text, p_messages jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m jsonb;
  i integer;
  f text;
  problem jsonb;
BEGIN
  IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
    PERFORM sc_invalid('messages', 'must be an array of messages');
  END IF;
  IF jsonb_array_length(p_messages) = 0 THEN
    PERFORM sc_invalid('messages', 'must hold at least one message');
  END IF;
  FOR m, i IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_messages) WITH ORDINALITY LOOP
    f := format('messages[%s]', i);
    IF jsonb_typeof(m) <> 'object' THEN
      PERFORM sc_invalid(f, 'must be an object');
    END IF;
    problem := CASE p_dialect
      WHEN 'openai-chat' THEN sc_chat_problem(m)
      WHEN 'anthropic' THEN sc_anthropic_problem(m)
      WHEN 'openai-responses' THEN sc_responses_problem(m)
      WHEN 'openai-agents' THEN sc_agents_problem(m)
      WHEN 'gemini' THEN sc_gemini_problem(m) END;
    IF problem IS NOT NULL THEN
      PERFORM sc_invalid(f || CASE WHEN problem->>'field' = '' THEN '' WHEN left(problem->>'field', 1) = '[' THEN problem->>'field' ELSE '.' || (problem->>'field') END, problem->>'detail');
    END IF;
    -- Nothing appended may pose as a summary this service wrote (src/compaction/messages.ts).
    IF p_dialect = 'openai-chat' AND m->>'name' = 'context_summary' THEN
      PERFORM sc_invalid(f || '.name', '"context_summary" is reserved for the summaries this service writes');
    END IF;
    IF sc_poses_as_summary(p_dialect, m) THEN
      PERFORM sc_invalid(f || CASE WHEN p_dialect = 'gemini' THEN '.parts' ELSE '.content' END,
        'must not start with the compaction summary marker, which is reserved for the summaries this service writes');
    END IF;
  END LOOP;
END
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION sc_stored_role(p_dialect text, m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_dialect
    WHEN 'openai-chat' THEN CASE WHEN m->>'role' = 'function' THEN 'tool' ELSE m->>'role' END
    WHEN 'anthropic' THEN CASE
      WHEN m->>'role' = 'assistant' THEN 'assistant'
      WHEN jsonb_typeof(m->'content') = 'array' AND jsonb_array_length(m->'content') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'content') b WHERE b->>'type' IS DISTINCT FROM 'tool_result') THEN 'tool'
      ELSE 'user' END
    WHEN 'gemini' THEN CASE
      WHEN m->>'role' = 'model' THEN 'assistant'
      WHEN jsonb_typeof(m->'parts') = 'array' AND jsonb_array_length(m->'parts') > 0
           AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(m->'parts') p WHERE NOT (p ? 'functionResponse' OR p ? 'function_response')) THEN 'tool'
      ELSE 'user' END
    WHEN 'openai-agents' THEN CASE
      WHEN coalesce(m->>'type', CASE WHEN m ? 'role' THEN 'message' END) = 'message' THEN CASE WHEN m->>'role' IN ('system', 'developer', 'user', 'assistant') THEN m->>'role' ELSE 'user' END
      WHEN m->>'type' LIKE '%\_output' OR m->>'type' LIKE '%\_result' OR m->>'type' = 'mcp_approval_response' THEN 'tool'
      ELSE 'assistant' END
    ELSE CASE
      WHEN coalesce(m->>'type', CASE WHEN m ? 'role' THEN 'message' END) = 'message' THEN CASE WHEN m->>'role' IN ('system', 'developer', 'user', 'assistant') THEN m->>'role' ELSE 'user' END
      WHEN m->>'type' LIKE '%\_output' OR m->>'type' = 'mcp_approval_response' THEN 'tool'
      ELSE 'assistant' END
    END;
$$;
--> statement-breakpoint
-- Takes back the last p_count live messages of the lineage's head (all of them when NULL)
-- and appends p_replacement after them (session_append), in one transaction under the lineage
-- lock. With p_expected (an array; p_count is then its length) the messages taken back must be
-- JSON-equal to it, in order, or nothing changes (HistoryMismatchError). A message taken back
-- stays in its row, archived, with retracted_by naming the operation (the audit counts it as
-- taken back, not lost). With p_key the operation is stored once, in the lineage's append keys:
-- the same key with the same operation answers the first call again (`replayed`); with another
-- operation, or an append's key, it is refused. Answers {sessionId, lineageId, removed (the
-- bodies taken back), appended (session_append's answer, or null), replayed}.
CREATE FUNCTION session_replace_tail(p_session_id text, p_count integer DEFAULT 1, p_expected jsonb DEFAULT NULL, p_replacement jsonb DEFAULT '[]',
                                     p_key text DEFAULT NULL, p_token_counts integer[] DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  g lineages;
  n integer;
  live integer;
  hash text;
  prior append_keys;
  removed jsonb;
  removed_ids bigint[];
  removed_tokens integer;
  appended jsonb;
  v_result jsonb;
BEGIN
  IF p_key IS NOT NULL AND (length(p_key) = 0 OR length(p_key) > 200) THEN
    PERFORM sc_invalid('appendKey', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_count IS NOT NULL AND p_count < 0 THEN
    PERFORM sc_invalid('count', 'must be 0 or more');
  END IF;
  IF p_expected IS NOT NULL AND jsonb_typeof(p_expected) <> 'array' THEN
    PERFORM sc_invalid('expected', 'must be an array of messages');
  END IF;
  IF p_expected IS NOT NULL AND p_count IS NOT NULL AND p_count <> jsonb_array_length(p_expected) THEN
    PERFORM sc_invalid('count', 'must be the number of expected messages');
  END IF;
  IF p_replacement IS NULL OR jsonb_typeof(p_replacement) <> 'array' THEN
    PERFORM sc_invalid('replacement', 'must be an array of messages');
  END IF;
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  IF jsonb_array_length(p_replacement) > 0 THEN
    PERFORM sc_check_batch(g.dialect, p_replacement);
  END IF;
  IF p_token_counts IS NOT NULL AND cardinality(p_token_counts) <> jsonb_array_length(p_replacement) THEN
    PERFORM sc_invalid('tokenCounts', format('must hold one non-negative count per message (%s)', jsonb_array_length(p_replacement)));
  END IF;
  IF p_key IS NOT NULL THEN
    hash := md5(jsonb_build_object('replaceTail', jsonb_build_object('count', p_count, 'expected', p_expected, 'replacement', p_replacement))::text);
    SELECT * INTO prior FROM append_keys WHERE lineage_id = g.id AND append_key = p_key;
    IF FOUND THEN
      IF prior.batch_hash <> hash THEN
        PERFORM sc_invalid('appendKey', 'was already used for a different batch in this lineage');
      END IF;
      RETURN prior.result || '{"replayed": true}';
    END IF;
  END IF;
  IF g.closed_at IS NOT NULL THEN
    PERFORM sc_raise('LineageClosedError', format('session lineage %s is closed', to_jsonb(g.id)::text), jsonb_build_object('lineageId', g.id));
  END IF;
  SELECT count(*) INTO live FROM messages WHERE session_id = g.head_session_id AND archived_at IS NULL;
  n := least(coalesce(jsonb_array_length(p_expected), p_count, live), live);
  IF p_expected IS NOT NULL AND jsonb_array_length(p_expected) > live THEN
    PERFORM sc_raise('HistoryMismatchError', format('the head of %s holds %s messages, fewer than the %s expected', to_jsonb(g.id)::text, live, jsonb_array_length(p_expected)),
      jsonb_build_object('sessionId', g.head_session_id, 'detail', format('holds %s messages, fewer than the %s expected', live, jsonb_array_length(p_expected))));
  END IF;
  SELECT coalesce(jsonb_agg(t.body ORDER BY t.seq), '[]'::jsonb), coalesce(array_agg(t.id), '{}'), coalesce(sum(t.token_estimate), 0)
    INTO removed, removed_ids, removed_tokens
    FROM (SELECT id, seq, body, token_estimate FROM messages WHERE session_id = g.head_session_id AND archived_at IS NULL ORDER BY seq DESC LIMIT n) t;
  IF p_expected IS NOT NULL AND removed <> p_expected THEN
    PERFORM sc_raise('HistoryMismatchError', format('the last %s messages of the head of %s are not the ones expected', n, to_jsonb(g.id)::text),
      jsonb_build_object('sessionId', g.head_session_id, 'detail', format('the last %s messages are not the ones expected', n)));
  END IF;
  IF n > 0 THEN
    UPDATE messages SET archived_at = clock_timestamp(), retracted_by = coalesce(p_key, 'unkeyed') WHERE id = ANY (removed_ids);
    UPDATE lineages SET head_tokens = greatest(0, head_tokens - removed_tokens) WHERE id = g.id;
  END IF;
  IF jsonb_array_length(p_replacement) > 0 THEN
    appended := session_append(p_session_id, p_replacement, NULL, p_token_counts);
  END IF;
  v_result := jsonb_build_object('sessionId', g.head_session_id, 'lineageId', g.id, 'removed', removed, 'appended', coalesce(appended - 'replayed', 'null'::jsonb));
  IF p_key IS NOT NULL THEN
    INSERT INTO append_keys (lineage_id, append_key, batch_hash, result) VALUES (g.id, p_key, hash, v_result);
  END IF;
  RETURN v_result || '{"replayed": false}';
END
$$;
