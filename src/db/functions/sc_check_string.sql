-- Refuses (SC400) a value that is not a string of p_min to p_max characters.
CREATE OR REPLACE FUNCTION sc_check_string(p_value jsonb, p_field text, p_min integer, p_max integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF jsonb_typeof(p_value) IS DISTINCT FROM 'string' OR length(p_value #>> '{}') < p_min OR length(p_value #>> '{}') > p_max THEN
    PERFORM public.sc_invalid(p_field, format('must be a string of %s to %s characters', p_min, p_max));
  END IF;
END
$$;
