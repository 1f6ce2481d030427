-- Refuses (SC400) an object with a key outside p_allowed, naming the first such key.
CREATE OR REPLACE FUNCTION sc_check_keys(p_object jsonb, p_field text, p_allowed text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  unknown text;
BEGIN
  SELECT k INTO unknown FROM jsonb_object_keys(p_object) k WHERE NOT k = ANY (p_allowed) ORDER BY k LIMIT 1;
  IF unknown IS NOT NULL THEN
    PERFORM public.sc_invalid(p_field || '.' || unknown, 'is not a known field');
  END IF;
END
$$;
