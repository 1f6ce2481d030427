-- The rungs a lineage may name at create, cheapest first: the names of RUNGS
-- (src/activities/compaction/rungs.ts; test/unit/rung-setting.test.ts keeps the two equal).
CREATE OR REPLACE FUNCTION sc_rung_names() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY['masking', 'native', 'summary', 'trim']::text[];
$$;
