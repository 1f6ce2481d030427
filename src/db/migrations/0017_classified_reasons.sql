-- Reasons recorded before failures were classified (issue 33, point 5) quote what the failure
-- said: an LLM provider's error body, which some gateways use to echo the API key they were
-- sent, or a database error whose text holds the statement's parameters (an appended batch, a
-- summary, a ledger). Each such reason of an audit row is rewritten to what it would say now,
-- less what only the original held: the provider's HTTP status, or the SQLSTATE. The answers
-- recorded from these rows (session_recorded_answer) say the same. Reasons recorded in Temporal
-- history before this release keep their text until the history is deleted.
UPDATE "compactions" SET "reason" = CASE
  WHEN "reason" ~ '^summariser failed: LLM endpoint answered [0-9]{3}'
    THEN 'summariser failed: HTTP ' || substring("reason" from '^summariser failed: LLM endpoint answered ([0-9]{3})')
      || ': the provider''s message is not kept (recorded before failures were classified)'
  WHEN "reason" LIKE 'summariser failed: LLM endpoint unreachable%'
    THEN 'summariser failed: connection: the endpoint could not be reached'
  WHEN "reason" LIKE 'summariser failed: summariser failed:%'
    THEN 'summariser failed: other: the call failed (its message is not kept)'
  WHEN "reason" ~ '^[a-z]+ failed: database error [0-9A-Z]{5}'
    THEN substring("reason" from '^([a-z]+ failed: database error [0-9A-Z]{5})') || ': the database''s message is not kept (recorded before failures were classified)'
  ELSE substring("reason" from '^([a-z]+ failed): ') || ': its message is not kept (recorded before failures were classified)'
END
WHERE "reason" ~ '^summariser failed: (LLM endpoint|summariser failed:)'
  OR "reason" ~ '^[a-z]+ failed: database error [0-9A-Z]{5}'
  OR ("reason" ~ '^[a-z]+ failed: ' AND "reason" ~ 'Failed query: .*params: ');
