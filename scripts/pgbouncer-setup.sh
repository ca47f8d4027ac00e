#!/usr/bin/env bash
# Starts PgBouncer (Debian's package, installed when missing) in transaction pooling mode in front
# of the local PostgreSQL 15 (scripts/postgres-setup.sh), for the test database given by
# PGBOUNCER_DB (default rewards_pgbouncer, created when missing). Safe to run again: a running
# PgBouncer on the port is left as it is. Prints the URL to connect through it.
# docs/deployment.md, "Behind a connection pooler".
set -euo pipefail
ROLE=${PGTEST_ROLE:-rewards}
PASSWORD=${PGTEST_PASSWORD:-rewards}
DB=${PGBOUNCER_DB:-rewards_pgbouncer}
PORT=${PGBOUNCER_PORT:-6432}
DIR=${PGBOUNCER_DIR:-/tmp/rewards-pgbouncer}

PGTEST_DB=$DB bash "$(dirname "$0")/postgres-setup.sh" >/dev/null
if ! command -v pgbouncer >/dev/null 2>&1; then
  echo "pgbouncer-setup: installing pgbouncer" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >&2
  # The package may start its own instance on 6432 with its own configuration: not ours.
  (service pgbouncer stop || pkill -x pgbouncer || true) >/dev/null 2>&1
  for _ in $(seq 1 25); do
    (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null || break
    sleep 0.2
  done
fi

if ! (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null; then
  mkdir -p "$DIR"
  chown postgres "$DIR"
  cat >"$DIR/userlist.txt" <<EOF
"$ROLE" "$PASSWORD"
EOF
  cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
$DB = host=127.0.0.1 port=5432 dbname=$DB

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = plain
auth_file = $DIR/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
EOF
  chown postgres "$DIR"/*
  chmod 600 "$DIR/userlist.txt"
  su postgres -c "pgbouncer -d $DIR/pgbouncer.ini" >&2
  for _ in $(seq 1 30); do
    (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break
    sleep 0.2
  done
fi
echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
