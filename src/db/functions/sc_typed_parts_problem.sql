-- Parts/blocks: a non-empty array of objects with a non-empty string type (Anthropic content, Responses content).
CREATE OR REPLACE FUNCTION sc_typed_parts_problem(p_parts jsonb, p_field text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  part jsonb;
  j integer;
BEGIN
  IF jsonb_array_length(p_parts) = 0 THEN RETURN jsonb_build_object('field', p_field, 'detail', 'must hold at least one block'); END IF;
  FOR part, j IN SELECT value, ordinality - 1 FROM jsonb_array_elements(p_parts) WITH ORDINALITY LOOP
    IF jsonb_typeof(part) <> 'object' THEN RETURN jsonb_build_object('field', format('%s[%s]', p_field, j), 'detail', 'must be an object'); END IF;
    IF jsonb_typeof(part->'type') IS DISTINCT FROM 'string' OR part->>'type' = '' THEN
      RETURN jsonb_build_object('field', format('%s[%s].type', p_field, j), 'detail', 'must be a non-empty string');
    END IF;
    IF part->>'type' IN ('text', 'input_text', 'output_text') AND jsonb_typeof(part->'text') IS DISTINCT FROM 'string' THEN
      RETURN jsonb_build_object('field', format('%s[%s].text', p_field, j), 'detail', 'a text part needs a string text');
    END IF;
  END LOOP;
  RETURN NULL;
END
$$;
