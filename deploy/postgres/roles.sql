-- The roles of docs/security.md ("Roles"), created once, at Postgres' first start, as its
-- superuser: by deploy/postgres/10-roles.sh in docker-compose.yml (the image's initdb scripts),
-- or by an administrator with `psql -v deploy_password=... -f roles.sql` on the service's
-- database. Run in that database (session_compaction). psql variables: deploy_password,
-- worker_password, inspector_password, app_password, temporal_password.
\set ON_ERROR_STOP on

-- The group roles the migrations grant (0025 creates them itself only when it may create roles).
CREATE ROLE sc_owner NOLOGIN;
CREATE ROLE sc_migrator NOLOGIN IN ROLE sc_owner;  -- the migrator acts as the owner
CREATE ROLE sc_worker NOLOGIN;
CREATE ROLE sc_app NOLOGIN;
CREATE ROLE sc_reader NOLOGIN;
-- session_compaction_events, run as sc_owner, reads other sessions' pg_stat_activity rows.
GRANT pg_read_all_stats TO sc_owner;
-- The schema is the owner's; the migrator creates in the database (drizzle keeps its journal
-- in a schema of its own).
ALTER SCHEMA public OWNER TO sc_owner;
GRANT CREATE ON DATABASE session_compaction TO sc_migrator;

-- The logins: one per component, each in one group.
CREATE ROLE sessions_deploy LOGIN PASSWORD :'deploy_password' IN ROLE sc_migrator;      -- `session-compaction migrate`
CREATE ROLE sessions_worker LOGIN PASSWORD :'worker_password' IN ROLE sc_worker;        -- the workers
CREATE ROLE sessions_inspector LOGIN PASSWORD :'inspector_password' IN ROLE sc_reader;  -- the inspector, operators
CREATE ROLE sessions_app LOGIN PASSWORD :'app_password' IN ROLE sc_app;                 -- an application (one per application)

-- Temporal's persistence: a login of its own, in none of the groups above. temporal-sql-tool
-- creates its two databases (temporal, temporal_visibility), which it then owns.
CREATE ROLE temporal LOGIN PASSWORD :'temporal_password' CREATEDB;
