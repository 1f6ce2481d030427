-- An InvalidInputError (SC400) about one field of the input.
CREATE OR REPLACE FUNCTION sc_invalid(p_field text, p_detail text) RETURNS void
LANGUAGE sql AS $$
  SELECT public.sc_raise('InvalidInputError', format('invalid %s: %s', p_field, p_detail), jsonb_build_object('field', p_field, 'detail', p_detail));
$$;
