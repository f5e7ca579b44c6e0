# syntax=docker/dockerfile:1
# The gateway's image: `docker build -t nilegate .`. compose.yaml runs two of them behind a load
# balancer on Postgres and Redis; docs/production.md says what to set.
# Bun is the version package.json pins (packageManager); a test holds the two equal.

# Production dependencies only, installed from the lockfile as it is (workspaces need their
# package.json files, nothing else, so this layer is rebuilt only when dependencies change).
FROM oven/bun:1.4.4 AS dependencies
WORKDIR /app
COPY package.json bun.lock bunfig.toml ./
COPY server/package.json server/
COPY shared/package.json shared/
COPY sdk/package.json sdk/
RUN bun install --frozen-lockfile --production

FROM oven/bun:1.4.4-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data \
    BUN_CONFIG_MAX_HTTP_REQUESTS=8192
COPY --from=dependencies /app/node_modules node_modules
# The gateway runs from its sources: the server, the contract it shares with the SDK, and the
# dashboard, which it bundles on the first page request (from web/ and the SDK's sources).
COPY package.json bun.lock bunfig.toml tsconfig.json ./
COPY shared shared
COPY server server
COPY sdk/package.json sdk/
COPY sdk/src sdk/src
COPY web web
COPY deploy/healthcheck.ts deploy/
# The embedded database, its lock and the control socket, used when DATABASE_URL is unset.
RUN mkdir /data && chown bun:bun /data
VOLUME /data
USER bun
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["bun", "deploy/healthcheck.ts"]
# Bun itself is process 1: SIGTERM finishes the requests in flight, SIGHUP re-reads the catalog.
CMD ["bun", "server/main.ts"]
