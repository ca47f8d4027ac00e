#!/usr/bin/env bash
# A hot standby of the local PostgreSQL 15 cluster (scripts/postgres-setup.sh), streaming from it,
# on 127.0.0.1:${PGREPLICA_PORT:-5433}: the replica the tests of DATABASE_READ_URL read from
# (docs/deployment.md, "Reads from a replica"). Safe to run again: a running replica is left as it
# is. Prints the URL of the test database on the replica.
set -euo pipefail
ROLE=${PGTEST_ROLE:-rewards}
PASSWORD=${PGTEST_PASSWORD:-rewards}
DB=${PGTEST_DB:-rewards_test}
PORT=${PGREPLICA_PORT:-5433}
DIR=${PGREPLICA_DIR:-/var/lib/postgresql/15/replica}
REPLICATOR=rewards_replicator

bash "$(dirname "$0")/postgres-setup.sh" >/dev/null
as_postgres() { su postgres -c "psql -v ON_ERROR_STOP=1 -qtAX $*"; }
if [ "$(as_postgres "-c \"select 1 from pg_roles where rolname='$REPLICATOR'\"")" != "1" ]; then
  as_postgres "-c \"create role $REPLICATOR replication login password '$REPLICATOR'\"" >&2
fi
# The tests pause and resume the replica's replay to see which server answered (on the primary:
# grants replicate like everything else).
for fn in pg_wal_replay_pause pg_wal_replay_resume pg_is_wal_replay_paused; do
  as_postgres "-d $DB -c \"grant execute on function $fn() to $ROLE\"" >&2
done
HBA=$(as_postgres "-c 'show hba_file'")
if ! grep -q "^host replication $REPLICATOR 127.0.0.1/32" "$HBA"; then
  echo "host replication $REPLICATOR 127.0.0.1/32 scram-sha-256" >>"$HBA"
  as_postgres "-c 'select pg_reload_conf()'" >/dev/null
fi

if ! pg_isready -h 127.0.0.1 -p "$PORT" -q; then
  su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$DIR' stop -m immediate" >/dev/null 2>&1 || true
  rm -rf "$DIR"
  # A base backup of the primary with the standby's settings written in (-R), fast checkpoint.
  su postgres -c "PGPASSWORD=$REPLICATOR pg_basebackup -h 127.0.0.1 -p 5432 -U $REPLICATOR -D '$DIR' -R -X stream -c fast" >&2
  # Debian keeps the primary's configuration in /etc: the standby gets its own, on its own port.
  cat >"$DIR/postgresql.conf" <<EOF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
hot_standby = on
shared_preload_libraries = 'pg_stat_statements'
EOF
  cat >"$DIR/pg_hba.conf" <<EOF
local all postgres peer
host all all 127.0.0.1/32 scram-sha-256
EOF
  chown postgres: "$DIR/postgresql.conf" "$DIR/pg_hba.conf"
  su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$DIR' -l '$DIR/replica.log' -w start" >&2
fi
for _ in $(seq 1 30); do
  pg_isready -h 127.0.0.1 -p "$PORT" -q && break
  sleep 1
done
echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
