-- Text as the summary-marker check reads it: leading white space and format characters removed
-- (src/compaction/text.ts markerText: the same characters).
CREATE OR REPLACE FUNCTION sc_marker_text(p text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT regexp_replace(p, E'^[\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u00AD\\u061C\\u1680\\u180E\\u2000-\\u200F\\u2028-\\u202F\\u205F-\\u2064\\u2066-\\u206F\\u3000\\uFEFF\\uFFF9-\\uFFFB]+', '');
$$;
