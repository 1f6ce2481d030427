-- Length in UTF-16 code units, as JavaScript counts it: the token estimate must not depend on
-- the client's language.
CREATE OR REPLACE FUNCTION sc_utf16_length(p text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT length(p) + length(regexp_replace(p, '[^\U00010000-\U0010FFFF]', '', 'g'));
$$;
