#!/bin/sh
# First start: initialises the data volume and creates $POSTGRES_USER (password $POSTGRES_PASSWORD,
# scram-sha-256 over the network; trusted on the container's own socket) owning the database
# $POSTGRES_DB. Every start: runs the server.
set -eu
: "${POSTGRES_USER:?set POSTGRES_USER}" "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}" "${POSTGRES_DB:?set POSTGRES_DB}"
bin=/usr/local/lib/postgresql-bin

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  # UTF8 whatever the image's locale: under the C locale initdb would pick SQL_ASCII, into which
  # psycopg cannot convert a run's text (and the tests' runs are UTF-8)
  "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --no-locale >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  "$bin/psql" -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -q \
    -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
  "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
