#!/bin/sh
# First start: make a cluster in PGDATA with POSTGRES_USER (superuser, password
# POSTGRES_PASSWORD, required) and the database POSTGRES_DB; every start: run the server
# on every address of the container, password (SCRAM) required from other hosts.
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres-entrypoint: set POSTGRES_PASSWORD for the first start" >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl --pgdata="$PGDATA" --wait --options="-c listen_addresses=''" start
  if [ "$POSTGRES_DB" != postgres ]; then
    createdb --username="$POSTGRES_USER" "$POSTGRES_DB"
  fi
  pg_ctl --pgdata="$PGDATA" --wait --mode=fast stop
fi
if [ "$1" = postgres ]; then
  shift
  exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
