# The Reward Request Service's image (docs/deployment.md, "Containers and systemd").
#
#   docker build -t rewards .
#   docker run --read-only --tmpfs /tmp -v rewards-data:/data -p 8080:8080 --stop-timeout 40 rewards
#
# The service runs from its TypeScript sources through tsx's loader, as `npm start` and
# bin/rewards.js do everywhere else: there is no compile step to get wrong, and the image runs the
# code the tests ran. The build stage installs everything, builds the web console and drops the
# development dependencies; the runtime stage gets package.json, bin/, src/, tsconfig.json (tsx
# reads it), the built console and the production node_modules, all owned by root and read-only
# to the service.
#
# Node.js 22 or 24, the production lines (docs/deployment.md, "Node.js lines"); both stages use the
# same line, so what was installed is what runs. better-sqlite3 13 ships prebuilt Node-API 10
# binaries (glibc and musl, x64 and arm64): nothing is compiled, so no python3, make or g++. Only
# Node 20 would need a compiler (for better-sqlite3-node20); this image refuses Node 20.
ARG NODE_VERSION=22

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
RUN node -e "if (Number(process.versions.napi) < 10) { console.error('Node.js ' + process.version + ' lacks Node-API 10 (better-sqlite3 13): build with NODE_VERSION=22 or 24'); process.exit(1); }"
# Dependencies first, so a change to the sources reuses this layer. --ignore-scripts: no install
# script runs but esbuild's (tsx's compiler), rebuilt by name; the root's `prepare` (the console
# build) runs below, once the sources are here.
COPY package.json package-lock.json ./
COPY console/package.json console/
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild esbuild
COPY tsconfig.json ./
COPY bin bin
COPY src src
COPY scripts scripts
COPY console console
RUN npm run build:console && test -f console/dist/index.html
# Production dependencies only. better-sqlite3-node20 is never loaded on Node-API 10 (its install
# script did not run): removed.
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
  && rm -rf node_modules/better-sqlite3-node20

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
# tini as PID 1 forwards SIGTERM to the service and reaps children (tsx's esbuild); the service
# runs as 10001, not root and not the image's uid 1000 `node` (which a host user often has).
# /data (DATA_DIR) is created 0700 for it: a new named volume takes this owner and mode.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --system --gid 10001 rewards \
  && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin rewards \
  && install -d -m 0700 -o 10001 -g 10001 /data
WORKDIR /app
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/bin bin
COPY --from=build /app/src src
COPY --from=build /app/console/dist console/dist
COPY --from=build /app/node_modules node_modules
RUN ln -s /app/bin/rewards.js /usr/local/bin/rewards
# No secret here: SECRET_KEY and DATABASE_URL come from the orchestrator at run time. With SQLite
# and no SECRET_KEY the first start generates DATA_DIR/secret.key on the volume.
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
VOLUME /data
EXPOSE 8080
USER 10001:10001
# What was copied must run, as the service's user: the SQLite driver loads, and `rewards` starts
# (its help; without tsx's cache, so that nothing is left in /tmp).
RUN node -e "new (require('better-sqlite3'))(':memory:').close()" \
  && TSX_DISABLE_CACHE=1 rewards --help > /dev/null
# `rewards serve` shuts down gracefully on SIGTERM and exits within 30 s: give it 40
# (docker stop -t 40, compose stop_grace_period: 40s).
STOPSIGNAL SIGTERM
# Readiness of an API (or `all`) process on PORT; a worker serves it on METRICS_PORT (compose.yaml
# overrides this). Docker and Compose only report it: an orchestrator that restarts unhealthy
# containers must probe /health/live instead (docs/deployment.md, "Probes").
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--", "rewards"]
CMD ["serve"]
