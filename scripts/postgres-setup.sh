#!/usr/bin/env bash
# Starts the machine's PostgreSQL 15 cluster and creates the test role and database.
# Safe to run again: every step checks before it acts. Prints the DATABASE URL to use.
set -euo pipefail
ROLE=${PGTEST_ROLE:-rewards}
PASSWORD=${PGTEST_PASSWORD:-rewards}
DB=${PGTEST_DB:-rewards_test}

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "postgres-setup: PostgreSQL is not installed; installing postgresql-15" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >&2
fi
if ! pg_lsclusters -h | awk '$1=="15" && $2=="main"' | grep -q online; then
  pg_ctlcluster 15 main start >&2
fi
for _ in $(seq 1 30); do
  pg_isready -h 127.0.0.1 -p 5432 -q && break
  sleep 1
done
as_postgres() { su postgres -c "psql -v ON_ERROR_STOP=1 -qtAX $*"; }
if [ "$(as_postgres "-c \"select 1 from pg_roles where rolname='$ROLE'\"")" != "1" ]; then
  as_postgres "-c \"create role $ROLE login password '$PASSWORD'\"" >&2
fi
if [ "$(as_postgres "-c \"select 1 from pg_database where datname='$DB'\"")" != "1" ]; then
  as_postgres "-c \"create database $DB owner $ROLE\"" >&2
fi
# The benchmarks ask for a CHECKPOINT between entries (bench/lib.ts, waitForQuietMachine).
as_postgres "-c \"grant pg_checkpoint to $ROLE\"" >&2 2>/dev/null || true
# pg_stat_statements, for the statements each delivered notification costs (bench/peers.ts) and
# the statement mix an operator looks at first (docs/capacity.md). Loading it needs a restart, once.
if ! as_postgres "-c \"show shared_preload_libraries\"" | grep -q pg_stat_statements; then
  as_postgres "-c \"alter system set shared_preload_libraries = 'pg_stat_statements'\"" >&2
  pg_ctlcluster 15 main restart >&2
  for _ in $(seq 1 30); do
    pg_isready -h 127.0.0.1 -p 5432 -q && break
    sleep 1
  done
fi
su postgres -c "psql -v ON_ERROR_STOP=1 -qtAX -d $DB -c 'create extension if not exists pg_stat_statements'" >&2
as_postgres "-c \"grant pg_read_all_stats to $ROLE\"" >/dev/null 2>&1 || true
echo "postgres://$ROLE:$PASSWORD@127.0.0.1:5432/$DB"
