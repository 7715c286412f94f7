#!/bin/bash
# Entrypoint of docker/postgres.Dockerfile (runs as postgres). On an empty $PGDATA:
# initdb (UTF-8, scram-sha-256 for TCP, peer on the socket), then a login role and
# a database, both named $IOFLEET_DB_NAME (default iofleet), the role's password read
# from $IOFLEET_DB_PASSWORD_FILE (required then). Then runs postgres in the
# foreground, listening on all addresses; extra arguments go to postgres.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
db=${IOFLEET_DB_NAME:-iofleet}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=${IOFLEET_DB_PASSWORD_FILE:-}
  [ -n "$pwfile" ] && [ -r "$pwfile" ] ||
    { echo "postgres-entrypoint: empty data dir and no readable IOFLEET_DB_PASSWORD_FILE" >&2; exit 1; }
  pw=$(head -n1 "$pwfile")
  [ -n "$pw" ] || { echo "postgres-entrypoint: $pwfile is empty" >&2; exit 1; }
  initdb -D "$PGDATA" -U postgres --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=peer --auth-host=scram-sha-256 >/dev/null
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  # Set up over the socket only, then restart listening on the network.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres -v db="$db" -v pw="$pw" <<'SQL'
CREATE ROLE :"db" LOGIN PASSWORD :'pw';
CREATE DATABASE :"db" OWNER :"db";
SQL
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres-entrypoint: initialized $PGDATA (role and database \"$db\")"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
