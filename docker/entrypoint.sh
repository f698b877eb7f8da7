#!/bin/sh
# The image's entry point: wait for the database (the ledger of all work), then run the
# command: the web server, a Celery worker, beat, or any `python manage.py …`. A worker or
# beat also waits until `migrate` (the web service runs it) has made every table, so it
# never starts work on a schema that is not there yet. DB_WAIT_SECONDS bounds the wait.
set -e
case "$1" in
  celery) migrated=--migrated ;;
  *) migrated= ;;
esac
python /app/manage.py wait_for_database --timeout "${DB_WAIT_SECONDS:-300}" $migrated
exec "$@"
