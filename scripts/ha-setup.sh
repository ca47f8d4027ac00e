#!/usr/bin/env bash
# A highly available PostgreSQL 15 on loopback, for the failover chaos runs (chaos/ha-cluster.ts):
# one etcd, two Patroni nodes (node1, node2) with synchronous replication, and one HAProxy address
# that follows the primary. Debian's packages (patroni, etcd-server, haproxy, iptables) are
# installed when missing.
#
#   scripts/ha-setup.sh          stops what a previous run left, wipes HA_DIR, starts a fresh cluster
#   scripts/ha-setup.sh stop     stops everything it started and removes the iptables rules tagged
#                                rewards-ha (chaos/ha-cluster.ts adds them to silence a primary)
#
# Everything runs as the postgres user on 127.0.0.1, in HA_DIR (default /tmp/rewards-ha), on ports
# from HA_PORT_BASE (default 15430): HAProxy on BASE, PostgreSQL on BASE+1 and BASE+2, the Patroni
# REST APIs on BASE+11 and BASE+12, etcd on BASE+20 (clients) and BASE+21 (peers). Pid files and
# logs are HA_DIR/<name>.pid and HA_DIR/<name>.log (etcd, haproxy, node1, node2).
#
# Output, once the address answers as a writable primary and the other node is its synchronous
# standby: one line of JSON on stdout,
#   {"url":"postgres://rewards:rewards@127.0.0.1:15430/rewards","dir":"/tmp/rewards-ha",
#    "nodes":[{"name":"node1","url":"postgres://…:15431/rewards","api":"http://127.0.0.1:15441"},…]}
# where url goes through HAProxy and each node's url connects to it directly. Progress goes to stderr.
set -euo pipefail
DIR=${HA_DIR:-/tmp/rewards-ha}
BASE=${HA_PORT_BASE:-15430}
PROXY_PORT=$BASE
ETCD_PORT=$((BASE + 20))
ETCD_PEER_PORT=$((BASE + 21))
NODES=(node1 node2)
pg_port() { echo $((BASE + ${1#node})); }
api_port() { echo $((BASE + 10 + ${1#node})); }
TAG=rewards-ha
started=$(date +%s%N)
log() { echo "ha-setup: $* ($((($(date +%s%N) - started) / 1000000)) ms)" >&2; }

# alive: running (a zombie counts as gone: PID 1 may not reap the daemons start-stop-daemon
# detached). ours: alive and started from HA_DIR (a pid file may outlive its process, and the pid
# be another's by now). children: the pids whose parent is $1 (no procps in a minimal image).
alive() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo Z)" != Z ]; }
ours() { alive "$1" && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF "$DIR/"; }
children() { awk -v parent="$1" '{ sub(/.*\) /, "") } $2 == parent { split(FILENAME, path, "/"); print path[3] }' /proc/[0-9]*/stat 2>/dev/null || true; }

# SIGKILL whatever a run left (no graceful stop: the cluster is thrown away), SIGSTOPped processes
# included, then remove the tagged iptables rules. The directory stays, with its logs.
stop_all() {
  local pids=() pid file
  for file in "$DIR"/*.pid "$DIR"/node*/data/postmaster.pid; do
    [ -f "$file" ] || continue
    pid=$(head -n1 "$file")
    if ! [[ $pid =~ ^[0-9]+$ ]] || ! ours "$pid"; then continue; fi
    pids+=("$pid")
    # A postmaster's children ("postgres: rewards-ha: …") are each in a session of their own.
    if [[ $file == */postmaster.pid ]]; then mapfile -t -O ${#pids[@]} pids < <(children "$pid"); fi
  done
  if [ ${#pids[@]} -gt 0 ]; then
    kill -KILL "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do
      local left=0
      for pid in "${pids[@]}"; do alive "$pid" && left=1; done
      [ $left = 0 ] && break
      sleep 0.1
    done
  fi
  if command -v iptables >/dev/null 2>&1; then
    iptables -S INPUT 2>/dev/null | { grep -F -- "--comment $TAG" || true; } | while read -r rule; do
      read -ra words <<<"${rule/#-A /-D }"
      iptables "${words[@]}"
    done
  fi
}

if [ "${1:-}" = stop ]; then
  stop_all
  log "stopped"
  exit 0
fi

missing=()
for command in patroni etcd haproxy iptables; do command -v "$command" >/dev/null 2>&1 || missing+=("$command"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing patroni etcd-server haproxy iptables (missing: ${missing[*]})"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patroni etcd-server haproxy iptables >&2
  # The packages may start their own etcd (2379) and HAProxy with their own configuration: not ours.
  (service etcd stop || true; service haproxy stop || true) >/dev/null 2>&1
fi

stop_all
rm -rf "$DIR"
mkdir -p "$DIR"
for node in "${NODES[@]}"; do mkdir -p "$DIR/$node"; done
chown -R postgres: "$DIR"
chmod 700 "$DIR"
log "previous run stopped, $DIR wiped"

# daemon NAME PROGRAM ARGS…: starts PROGRAM as postgres, detached, its pid in HA_DIR/NAME.pid and its
# output in HA_DIR/NAME.log (start-stop-daemon does both: each program runs in the foreground).
daemon() {
  local name=$1
  shift
  HOME=/var/lib/postgresql start-stop-daemon --start --background --chuid postgres --chdir "$DIR" \
    --make-pidfile --pidfile "$DIR/$name.pid" --output "$DIR/$name.log" --startas "$1" -- "${@:2}"
}

# The status code a Patroni REST API answers for a path (empty when it does not answer), with
# bash's /dev/tcp so that curl is not needed. OPTIONS, as HAProxy asks below: the same answer as
# GET without its JSON body, which a caller that reads the status only and hangs up would cut off
# (Patroni logs a traceback for each).
http_status() {
  local reply
  reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "OPTIONS %s HTTP/1.0\r\n\r\n" "$2" >&3 && head -c 12 <&3' _ "$1" "$2" 2>/dev/null) || true
  echo "${reply:9:3}"
}

# wait_until SECONDS WHAT COMMAND…: polls every 0.1 s; on timeout, shows the logs and fails.
wait_until() {
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq 1 $((seconds * 10))); do
    "$@" && return 0
    sleep 0.1
  done
  echo "ha-setup: timed out waiting for $what; logs:" >&2
  tail -n 30 "$DIR"/*.log >&2 || true
  exit 1
}

# etcd: one member on loopback. Debian's etcd 3.4 serves the v3 API (and not v2, which is off by
# default since 3.4); Debian's Patroni 3.0 speaks v3 to it through etcd's JSON gateway (/v3/…),
# with no etcd3 Python library needed: hence the etcd3 section of Patroni's configuration below.
daemon etcd /usr/bin/etcd --name etcd --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "etcd=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new --logger zap --log-level warn

for node in "${NODES[@]}"; do
  cat >"$DIR/$node.yml" <<EOF
scope: rewards-ha
name: $node
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(api_port "$node")
  connect_address: 127.0.0.1:$(api_port "$node")
etcd3:
  hosts: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    # The shortest timings Patroni allows: its documented minimums (ttl 20, loop_wait 1,
    # retry_timeout 3), to which later Patroni versions raise anything lower (Debian's 3.0.2 does
    # not check yet). A lost primary is replaced once its leader key expires, about ttl after it
    # last renewed it (every loop_wait); loop_wait + 2 * retry_timeout <= ttl has a primary that
    # cannot reach etcd demote itself before that.
    ttl: 20
    loop_wait: 1
    retry_timeout: 3
    # A commit returns once the synchronous standby has it: a failover loses no acknowledged
    # transaction. Not strict: a primary left alone keeps accepting writes.
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        synchronous_commit: "on"
        shared_buffers: 32MB
        max_connections: 200
        # How soon a standby's WAL receiver tries again: its first try fails until the primary has
        # created its replication slot, and a demoted primary follows the new one sooner (default 5 s).
        wal_retrieve_retry_interval: 500ms
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: 127.0.0.1:$(pg_port "$node")
  connect_address: 127.0.0.1:$(pg_port "$node")
  data_dir: $DIR/$node/data
  bin_dir: /usr/lib/postgresql/15/bin
  pgpass: $DIR/$node/pgpass
  # Patroni talks to its own PostgreSQL over the socket in the node's directory (mode 700, postgres).
  use_unix_socket: true
  parameters:
    unix_socket_directories: $DIR/$node
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
  # An immediate checkpoint for the standby's copy: the default, spread, paces it over minutes.
  basebackup:
    - checkpoint: fast
EOF
done

# HAProxy: the one address, routed to the node whose Patroni answers 200 on /primary (only the
# holder of the leader key does; OPTIONS: see http_status). Checks every 500 ms, and every 250 ms
# while a server is down: the new primary gets connections within 250 ms of its promotion (rise 1:
# one 200 is enough, nothing else can answer it). A primary is taken out after three failed checks
# of up to 2 s each: a few seconds for one that stopped answering, well within the ttl its
# successor waits for anyway, and never for a slow answer or two from a Patroni on a busy machine
# (each check is a query to PostgreSQL). Long client/server timeouts, as for PostgreSQL sessions
# that idle in a pool. Deliberately no "on-marked-down shutdown-sessions": the sessions to a
# primary marked down stay open, so a silenced primary leaves the service's connections open and
# silent, and the service must defend itself (its heartbeat and statement bound). A production
# setup may add it, so that HAProxy closes them for its clients.
cat >"$DIR/haproxy.cfg" <<EOF
global
  maxconn 2000

defaults
  mode tcp
  # A new connection to a server that drops packets fails within seconds (1 s a try, 3 retries).
  timeout connect 1s
  timeout client 30m
  timeout server 30m
  timeout check 2s

listen postgres
  bind 127.0.0.1:$PROXY_PORT
  option httpchk OPTIONS /primary
  http-check expect status 200
  default-server inter 500ms downinter 250ms fall 3 rise 1
  server node1 127.0.0.1:$(pg_port node1) check port $(api_port node1)
  server node2 127.0.0.1:$(pg_port node2) check port $(api_port node2)
EOF
chown postgres: "$DIR"/*.yml "$DIR/haproxy.cfg"
daemon haproxy /usr/sbin/haproxy -db -f "$DIR/haproxy.cfg"

etcd_up() { (exec 3<>"/dev/tcp/127.0.0.1/$ETCD_PORT") 2>/dev/null; }
wait_until 20 etcd etcd_up
log "etcd is up"

# Both nodes at once: the first to take etcd's initialize key runs initdb, the other waits for it and
# copies it with pg_basebackup. Either may end up the primary; the output does not depend on it.
for node in "${NODES[@]}"; do daemon "$node" /usr/bin/patroni "$DIR/$node.yml"; done
leader=
find_leader() {
  for node in "${NODES[@]}"; do
    [ "$(http_status "$(api_port "$node")" /primary)" = 200 ] && leader=$node && return 0
  done
  return 1
}
wait_until 60 "a primary" find_leader
log "$leader is the primary"
as_superuser() { psql -X -q -v ON_ERROR_STOP=1 -h "$DIR/$leader" -p "$(pg_port "$leader")" -U postgres "$@"; }
as_superuser -c "create role rewards login password 'rewards'" -c "create database rewards owner rewards" >&2

for node in "${NODES[@]}"; do [ "$node" = "$leader" ] || standby=$node; done
is_sync() { [ "$(http_status "$(api_port "$standby")" /sync)" = 200 ]; }
wait_until 60 "$standby to be the synchronous standby" is_sync
log "$standby is the synchronous standby"

url() { echo "postgres://rewards:rewards@127.0.0.1:$1/rewards"; }
writable() { [ "$(psql -X -qtA -d "$(url "$PROXY_PORT")" -c 'select pg_is_in_recovery()' 2>/dev/null)" = f ]; }
wait_until 20 "the address to reach the primary" writable
log "ready"

nodes=
for node in "${NODES[@]}"; do
  nodes+="${nodes:+,}{\"name\":\"$node\",\"url\":\"$(url "$(pg_port "$node")")\",\"api\":\"http://127.0.0.1:$(api_port "$node")\"}"
done
echo "{\"url\":\"$(url "$PROXY_PORT")\",\"dir\":\"$DIR\",\"nodes\":[$nodes]}"
