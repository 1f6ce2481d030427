-- The data plane as SQL functions: the one implementation of creating a session, appending
-- to a lineage's head and reading transcripts and lineage, for every client in every
-- language (the TypeScript store calls them too). docs/wire-contract.md documents them.
--
-- Errors a caller can cause are raised with SQLSTATE SC400 (InvalidInputError), SC404
-- (SessionNotFoundError), SC409 (SessionConflictError) or SC410 (LineageClosedError). The
-- message is the client's error message; DETAIL is JSON: {"type": ..., "field"|"sessionId"|
-- "lineageId": ..., "detail": ...}, so any client maps it to its typed error.

CREATE FUNCTION sc_raise(p_type text, p_message text, p_detail jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING
    ERRCODE = CASE p_type
      WHEN 'InvalidInputError' THEN 'SC400'
      WHEN 'SessionNotFoundError' THEN 'SC404'
      WHEN 'SessionConflictError' THEN 'SC409'
      WHEN 'LineageClosedError' THEN 'SC410'
      ELSE 'SC500' END,
    MESSAGE = p_message,
    DETAIL = (jsonb_build_object('type', p_type) || p_detail)::text;
END
$$;
--> statement-breakpoint
CREATE FUNCTION sc_invalid(p_field text, p_detail text) RETURNS void
LANGUAGE sql AS $$
  SELECT sc_raise('InvalidInputError', format('invalid %s: %s', p_field, p_detail), jsonb_build_object('field', p_field, 'detail', p_detail));
$$;
--> statement-breakpoint
CREATE FUNCTION sc_not_found(p_session_id text) RETURNS void
LANGUAGE sql AS $$
  SELECT sc_raise('SessionNotFoundError', format('session %s does not exist', to_jsonb(p_session_id)::text), jsonb_build_object('sessionId', p_session_id));
$$;
--> statement-breakpoint
-- Length in UTF-16 code units, as JavaScript counts it: the token estimate must not depend on
-- the client's language.
CREATE FUNCTION sc_utf16_length(p text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT length(p) + length(regexp_replace(p, '[^\U00010000-\U0010FFFF]', '', 'g'));
$$;
--> statement-breakpoint
-- The text of a message's content (src/compaction/messages.ts textOf): a string, or its text parts joined.
CREATE FUNCTION sc_text_of(m jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(m->'content')
    WHEN 'string' THEN m->>'content'
    WHEN 'array' THEN coalesce((SELECT string_agg(p->>'text', '' ORDER BY ord) FROM jsonb_array_elements(m->'content') WITH ORDINALITY AS t(p, ord)
                                WHERE p->>'type' = 'text' AND jsonb_typeof(p->'text') = 'string'), '')
    ELSE '' END;
$$;
--> statement-breakpoint
-- The token estimate of one message (src/compaction/tokens.ts estimateTokens): 4 for framing
-- plus a quarter of its characters (text parts, tool-call names, arguments and ids, name).
CREATE FUNCTION sc_estimate_tokens(m jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  chars integer := 0;
BEGIN
  chars := sc_utf16_length(sc_text_of(m));
  IF jsonb_typeof(m->'tool_calls') = 'array' THEN
    chars := chars + coalesce((SELECT sum(sc_utf16_length(c#>>'{function,name}') + sc_utf16_length(c#>>'{function,arguments}') + sc_utf16_length(c->>'id'))
                               FROM jsonb_array_elements(m->'tool_calls') c), 0);
  END IF;
  chars := chars + coalesce(sc_utf16_length(m->>'tool_call_id'), 0) + coalesce(sc_utf16_length(m->>'name'), 0);
  RETURN 4 + ceil(chars / 4.0)::integer;
END
$$;
--> statement-breakpoint
CREATE FUNCTION sc_check_string(p_value jsonb, p_field text, p_min integer, p_max integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF jsonb_typeof(p_value) IS DISTINCT FROM 'string' OR length(p_value #>> '{}') < p_min OR length(p_value #>> '{}') > p_max THEN
    PERFORM sc_invalid(p_field, format('must be a string of %s to %s characters', p_min, p_max));
  END IF;
END
$$;
--> statement-breakpoint
CREATE FUNCTION sc_check_keys(p_object jsonb, p_field text, p_allowed text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  unknown text;
BEGIN
  SELECT k INTO unknown FROM jsonb_object_keys(p_object) k WHERE NOT k = ANY (p_allowed) ORDER BY k LIMIT 1;
  IF unknown IS NOT NULL THEN
    PERFORM sc_invalid(p_field || '.' || unknown, 'is not a known field');
  END IF;
END
$$;
--> statement-breakpoint
-- The structure of an append batch (src/compaction/message-schema.ts): OpenAI chat messages.
-- Size limits (MAX_MESSAGE_CHARS, ...) are each client's own configuration and checked there.
CREATE FUNCTION sc_check_messages(p_messages jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m jsonb;
  part jsonb;
  tc jsonb;
  i integer;
  j integer;
  f text;
  v_role text;
  content_type text;
BEGIN
  IF p_messages IS NULL OR jsonb_typeof(p_messages) <> 'array' THEN
    PERFORM sc_invalid('messages', 'must be an array of chat messages');
  END IF;
  IF jsonb_array_length(p_messages) = 0 THEN
    PERFORM sc_invalid('messages', 'must hold at least one message');
  END IF;
  FOR m, i IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_messages) WITH ORDINALITY LOOP
    f := format('messages[%s]', i);
    IF jsonb_typeof(m) <> 'object' THEN
      PERFORM sc_invalid(f, 'must be an object');
    END IF;
    PERFORM sc_check_keys(m, f, ARRAY['role', 'content', 'tool_calls', 'tool_call_id', 'name']);
    v_role := CASE WHEN jsonb_typeof(m->'role') = 'string' THEN m->>'role' END;
    IF v_role IS NULL OR v_role NOT IN ('system', 'developer', 'user', 'assistant', 'tool') THEN
      PERFORM sc_invalid(f || '.role', 'must be one of system, developer, user, assistant, tool');
    END IF;
    IF NOT m ? 'content' THEN
      PERFORM sc_invalid(f || '.content', 'is required (a string, an array of content parts, or null)');
    END IF;
    content_type := jsonb_typeof(m->'content');
    IF content_type = 'array' THEN
      IF jsonb_array_length(m->'content') = 0 THEN
        PERFORM sc_invalid(f || '.content', 'must hold at least one content part');
      END IF;
      FOR part, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'content') WITH ORDINALITY LOOP
        IF jsonb_typeof(part) <> 'object' OR jsonb_typeof(part->'type') IS DISTINCT FROM 'string' OR part->>'type' = '' THEN
          PERFORM sc_invalid(format('%s.content[%s].type', f, j), 'must be a non-empty string');
        END IF;
        IF part->>'type' = 'text' THEN
          IF jsonb_typeof(part->'text') IS DISTINCT FROM 'string' THEN
            PERFORM sc_invalid(format('%s.content[%s].text', f, j), 'a text part needs a string text');
          END IF;
          PERFORM sc_check_keys(part, format('%s.content[%s]', f, j), ARRAY['type', 'text']);
        END IF;
      END LOOP;
    ELSIF content_type NOT IN ('string', 'null') THEN
      PERFORM sc_invalid(f || '.content', 'must be a string, an array of content parts, or null');
    END IF;
    IF m ? 'tool_calls' THEN
      IF v_role <> 'assistant' THEN
        PERFORM sc_invalid(f || '.tool_calls', 'are only allowed on assistant messages');
      END IF;
      IF jsonb_typeof(m->'tool_calls') <> 'array' OR jsonb_array_length(m->'tool_calls') = 0 THEN
        PERFORM sc_invalid(f || '.tool_calls', 'must be a non-empty array of tool calls');
      END IF;
      FOR tc, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY LOOP
        IF jsonb_typeof(tc) <> 'object' THEN
          PERFORM sc_invalid(format('%s.tool_calls[%s]', f, j), 'must be an object');
        END IF;
        PERFORM sc_check_keys(tc, format('%s.tool_calls[%s]', f, j), ARRAY['id', 'type', 'function']);
        PERFORM sc_check_string(tc->'id', format('%s.tool_calls[%s].id', f, j), 1, 200);
        IF tc->'type' IS DISTINCT FROM '"function"'::jsonb THEN
          PERFORM sc_invalid(format('%s.tool_calls[%s].type', f, j), 'must be "function"');
        END IF;
        IF jsonb_typeof(tc->'function') IS DISTINCT FROM 'object' THEN
          PERFORM sc_invalid(format('%s.tool_calls[%s].function', f, j), 'must be an object with name and arguments');
        END IF;
        PERFORM sc_check_keys(tc->'function', format('%s.tool_calls[%s].function', f, j), ARRAY['name', 'arguments']);
        PERFORM sc_check_string(tc#>'{function,name}', format('%s.tool_calls[%s].function.name', f, j), 1, 200);
        IF jsonb_typeof(tc#>'{function,arguments}') IS DISTINCT FROM 'string' THEN
          PERFORM sc_invalid(format('%s.tool_calls[%s].function.arguments', f, j), 'must be a string');
        END IF;
      END LOOP;
    END IF;
    IF m ? 'tool_call_id' THEN
      PERFORM sc_check_string(m->'tool_call_id', f || '.tool_call_id', 1, 200);
      IF v_role <> 'tool' THEN
        PERFORM sc_invalid(f || '.tool_call_id', 'is only allowed on tool messages');
      END IF;
    ELSIF v_role = 'tool' THEN
      PERFORM sc_invalid(f || '.tool_call_id', 'is required on tool messages');
    END IF;
    IF m ? 'name' THEN
      PERFORM sc_check_string(m->'name', f || '.name', 1, 200);
    END IF;
    IF content_type = 'null' AND NOT m ? 'tool_calls' THEN
      PERFORM sc_invalid(f || '.content', 'may be null only on an assistant message with tool_calls');
    END IF;
    -- Nothing appended may pose as a summary this service wrote (src/compaction/messages.ts).
    IF m->>'name' = 'context_summary' THEN
      PERFORM sc_invalid(f || '.name', '"context_summary" is reserved for the summaries this service writes');
    END IF;
    IF starts_with(regexp_replace(sc_text_of(m), '^\s+', ''), '[CONTEXT SUMMARY: reference only, written by session-compaction]') THEN
      PERFORM sc_invalid(f || '.content', 'must not start with the compaction summary marker, which is reserved for the summaries this service writes');
    END IF;
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE FUNCTION sc_lineage_json(g lineages) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'lineageId', g.id, 'headSessionId', g.head_session_id, 'generation', g.generation, 'mode', g.mode,
    'source', g.source, 'compactAtTokens', g.compact_at_tokens, 'model', g.model, 'contextWindow', g.context_window,
    'closed', g.closed_at IS NOT NULL);
$$;
--> statement-breakpoint
-- Creates a lineage with its root session. Idempotent for the same parameters; other
-- parameters for an existing id are a SessionConflictError.
CREATE FUNCTION session_create(p_session_id text, p_source text DEFAULT NULL, p_mode text DEFAULT 'rotate', p_compact_at_tokens integer DEFAULT NULL,
                               p_model text DEFAULT NULL, p_context_window integer DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_mode text := coalesce(p_mode, 'rotate');
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
  INSERT INTO lineages (id, head_session_id, mode, source, compact_at_tokens, model, context_window)
    VALUES (p_session_id, p_session_id, v_mode, p_source, p_compact_at_tokens, p_model, p_context_window)
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
  IF g.mode <> v_mode THEN
    PERFORM sc_raise('SessionConflictError', format('session %s already exists with mode %s', to_jsonb(p_session_id)::text, g.mode),
      jsonb_build_object('sessionId', p_session_id, 'detail', format('with mode %s', g.mode)));
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
-- Appends a batch to the head of the session's lineage, whichever session id of the lineage
-- is given, in one statement: validates the batch, locks the lineage row (which orders the
-- append against a compaction's commit), numbers the messages in the head and in the
-- lineage, stores each message's token count (the caller's, or sc_estimate_tokens) and
-- answers with the head and the ranges. Under the same lock it applies the auto-compaction
-- policy: when the head is at or above the lineage's threshold, no request of the appends is
-- pending for the current generation (one older than p_resend_after_ms counts as lost) and
-- no cooldown runs, it records a request and answers its id (autoCompactionRequestId), which
-- the caller sends as the requestCompaction signal. With p_append_key, a resend of the same
-- batch answers the first append and writes nothing.
CREATE FUNCTION session_append(p_session_id text, p_messages jsonb, p_append_key text DEFAULT NULL, p_token_counts integer[] DEFAULT NULL,
                               p_resend_after_ms bigint DEFAULT 300000)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  g lineages;
  n integer;
  max_seq integer;
  added integer;
  new_head_tokens integer;
  hash text;
  prior append_keys;
  v_result jsonb;
  fire boolean;
  request_id text;
BEGIN
  PERFORM sc_check_messages(p_messages);
  n := jsonb_array_length(p_messages);
  IF p_append_key IS NOT NULL AND (length(p_append_key) = 0 OR length(p_append_key) > 200) THEN
    PERFORM sc_invalid('appendKey', 'must be a string of 1 to 200 characters');
  END IF;
  IF p_token_counts IS NOT NULL AND (cardinality(p_token_counts) <> n OR array_position(p_token_counts, NULL) IS NOT NULL
      OR EXISTS (SELECT 1 FROM unnest(p_token_counts) t WHERE t < 0)) THEN
    PERFORM sc_invalid('tokenCounts', format('must hold one non-negative count per message (%s)', n));
  END IF;
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id FOR UPDATE OF l;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  IF p_append_key IS NOT NULL THEN
    hash := md5(p_messages::text);
    SELECT * INTO prior FROM append_keys WHERE lineage_id = g.id AND append_key = p_append_key;
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
  SELECT coalesce(max(seq), 0) INTO max_seq FROM messages WHERE session_id = g.head_session_id;
  WITH inserted AS (
    INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, name, token_estimate, lineage_seq)
    SELECT g.head_session_id, max_seq + t.ord, t.m->>'role', nullif(t.m->'content', 'null'::jsonb), t.m->'tool_calls', t.m->>'tool_call_id', t.m->>'name',
           coalesce(p_token_counts[t.ord], sc_estimate_tokens(t.m)), g.appended_count + t.ord
    FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS t(m, ord)
    ORDER BY t.ord
    RETURNING token_estimate
  )
  SELECT sum(token_estimate) INTO added FROM inserted;
  new_head_tokens := g.head_tokens + added;
  request_id := format('threshold:%s:%s', g.head_session_id, g.appended_count + n);
  fire := g.compact_at_tokens IS NOT NULL AND new_head_tokens >= g.compact_at_tokens
    AND NOT (g.auto_request_id IS NOT NULL AND g.auto_request_generation = g.generation
             AND g.auto_requested_at > now() - make_interval(secs => p_resend_after_ms / 1000.0))
    AND (g.auto_cooldown_until IS NULL OR g.auto_cooldown_until <= now());
  UPDATE lineages SET
    appended_count = g.appended_count + n,
    head_tokens = new_head_tokens,
    auto_request_id = CASE WHEN fire THEN request_id ELSE auto_request_id END,
    auto_request_generation = CASE WHEN fire THEN g.generation ELSE auto_request_generation END,
    auto_requested_at = CASE WHEN fire THEN now() ELSE auto_requested_at END
  WHERE id = g.id;
  v_result := jsonb_build_object(
    'sessionId', g.head_session_id,
    'lineageId', g.id,
    'firstSeq', max_seq + 1,
    'lastSeq', max_seq + n,
    'count', n,
    'headTokens', new_head_tokens,
    'firstLineageSeq', g.appended_count + 1,
    'lastLineageSeq', g.appended_count + n)
    || CASE WHEN fire THEN jsonb_build_object('autoCompactionRequestId', request_id) ELSE '{}'::jsonb END;
  IF p_append_key IS NOT NULL THEN
    INSERT INTO append_keys (lineage_id, append_key, batch_hash, result) VALUES (g.id, p_append_key, hash, v_result);
  END IF;
  RETURN v_result || '{"replayed": false}';
END
$$;
--> statement-breakpoint
CREATE FUNCTION sc_message_json(m messages) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('seq', m.seq, 'role', m.role, 'content', coalesce(m.content, 'null'::jsonb))
    || CASE WHEN m.tool_calls IS NOT NULL THEN jsonb_build_object('tool_calls', m.tool_calls) ELSE '{}' END
    || CASE WHEN m.tool_call_id IS NOT NULL AND m.tool_call_id <> '' THEN jsonb_build_object('tool_call_id', m.tool_call_id) ELSE '{}' END
    || CASE WHEN m.name IS NOT NULL AND m.name <> '' THEN jsonb_build_object('name', m.name) ELSE '{}' END;
$$;
--> statement-breakpoint
-- The transcript of the lineage's head, reached from any session id of the lineage:
-- {sessionId, messages: [{seq, role, content, tool_calls?, tool_call_id?, name?}]}, and with
-- p_include_archived the rows an in-place compaction replaced, under "archived".
CREATE FUNCTION session_transcript(p_session_id text, p_include_archived boolean DEFAULT false)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  head text;
BEGIN
  SELECT l.head_session_id INTO head FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  RETURN jsonb_build_object('sessionId', head, 'messages',
      coalesce((SELECT jsonb_agg(sc_message_json(m) ORDER BY m.seq) FROM messages m WHERE m.session_id = head AND m.archived_at IS NULL), '[]'::jsonb))
    || CASE WHEN p_include_archived THEN jsonb_build_object('archived',
      coalesce((SELECT jsonb_agg(sc_message_json(m) || jsonb_build_object('archivedAt', to_char(m.archived_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY m.seq)
                FROM messages m WHERE m.session_id = head AND m.archived_at IS NOT NULL), '[]'::jsonb))
      ELSE '{}'::jsonb END;
END
$$;
--> statement-breakpoint
-- The lineage of any session id: its state, and its sessions root first with live message counts.
CREATE FUNCTION session_lineage(p_session_id text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
  g lineages;
BEGIN
  SELECT l.* INTO g FROM sessions s JOIN lineages l ON l.id = s.lineage_id WHERE s.id = p_session_id;
  IF NOT FOUND THEN
    PERFORM sc_not_found(p_session_id);
  END IF;
  RETURN sc_lineage_json(g) || jsonb_build_object('sessions', coalesce((
    SELECT jsonb_agg(jsonb_build_object(
      'sessionId', s.id, 'parentSessionId', s.parent_session_id,
      'endedAt', to_char(s.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'endReason', s.end_reason,
      'messageCount', (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.archived_at IS NULL)) ORDER BY s.generation, s.started_at)
    FROM sessions s WHERE s.lineage_id = g.id), '[]'::jsonb));
END
$$;
--> statement-breakpoint
-- Forgets an automatic compaction request whose signal could not be sent, so that the next
-- append requests it again. Answers {"released": true} when it was still pending.
CREATE FUNCTION session_release_auto_compaction(p_lineage_id text, p_request_id text)
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  UPDATE lineages SET auto_request_id = NULL WHERE id = p_lineage_id AND auto_request_id = p_request_id;
  RETURN jsonb_build_object('released', FOUND);
END
$$;
