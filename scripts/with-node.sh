#!/usr/bin/env bash
# Runs a command on another Node.js line:   scripts/with-node.sh 24 npm test
#                                           scripts/with-node.sh 22 npm start
#                                           scripts/with-node.sh 24.21.0 node -v
# The line's binary and headers come from the npm registry (package node-linux-<arch>, which
# carries bin/node and include/node), unpacked once into .cache/node/<version>/. The command runs
# with that bin/ first on PATH (so `npm`, `node` and every child process use it) and with
# npm_config_nodedir pointing at its headers (so a native build inside it, e.g. `npm ci`, targets
# it). Nothing is downloaded from anywhere but the npm registry.
#
# The same node_modules serves every line: the SQLite driver is picked at run time
# (src/storage/sqlite-driver.ts), so switching lines needs no reinstall.
set -euo pipefail

# The exact releases CI tests; bump them here.
declare -A PINNED=([20]=20.20.2 [22]=22.23.3 [24]=24.21.0)

line=${1:-}
if [ -z "$line" ] || [ $# -lt 2 ]; then
  echo "usage: scripts/with-node.sh 20|22|24|X.Y.Z COMMAND [ARGS...]" >&2
  exit 2
fi
shift
version=${PINNED[$line]:-$line}
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "with-node: '$line' is neither a pinned line (${!PINNED[*]}) nor a version X.Y.Z" >&2
  exit 2
fi

# A line the machine's own node already is: use it as it is (CI's Node 20 run).
if [ -n "${PINNED[$line]:-}" ] && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$line" ]; then
  exec "$@"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "with-node: no node-linux package for $(uname -m)" >&2; exit 2 ;;
esac
dir="$root/.cache/node/$version"

if [ ! -x "$dir/bin/node" ]; then
  echo "with-node: fetching node-linux-$arch@$version from the npm registry into .cache/node/" >&2
  mkdir -p "$root/.cache/node"
  staging=$(mktemp -d "$root/.cache/node/.staging-XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  (cd "$staging" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
  mkdir "$staging/unpacked"
  tar xzf "$staging"/node-linux-*.tgz -C "$staging/unpacked" --strip-components=1
  rm -rf "$dir"
  mv "$staging/unpacked" "$dir"
  rm -rf "$staging"
  trap - EXIT
fi

export PATH="$dir/bin:$PATH"
export npm_config_nodedir="$dir"
exec "$@"
