#!/bin/sh
# Postgres' first start (the postgres image runs /docker-entrypoint-initdb.d/* once, on an empty
# data directory): the roles and logins of deploy/postgres/roles.sql, with the passwords of the
# compose environment. A data directory made before this file existed needs roles.sql run by hand.
set -eu
psql --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" --no-psqlrc \
  -v deploy_password="$SESSIONS_DEPLOY_PASSWORD" \
  -v worker_password="$SESSIONS_WORKER_PASSWORD" \
  -v inspector_password="$SESSIONS_INSPECTOR_PASSWORD" \
  -v app_password="$SESSIONS_APP_PASSWORD" \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" \
  -f /session-compaction/roles.sql
