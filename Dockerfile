# syntax=docker/dockerfile:1.7
# One Dockerfile, one target per service:
#   docker build --target control-plane -t terse/control-plane .
#   docker build --target data-plane -t terse/data-plane .
#   docker build --target metering-worker -t terse/metering-worker .
# The build stage installs the workspace from the lockfile, generates the Prisma client and
# builds each service's runtime tree (scripts/build-services.mjs): bundled ES modules, the
# files they read at run time and the one native addon. The runtime images hold only that
# tree on Node's slim image, run as the unprivileged `node` user, with no package manager
# use, no dev dependencies and no TypeScript toolchain.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
RUN npm install --global pnpm@10.34.9
# Dependencies first: this layer is reused until the lockfile changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN --mount=type=cache,id=pnpm-store,target=/root/.local/share/pnpm/store pnpm fetch --frozen-lockfile
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/root/.local/share/pnpm/store \
    node scripts/bootstrap.mjs && node scripts/build-services.mjs --out /out

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Source maps make stack traces point at the TypeScript sources.
ENV NODE_OPTIONS=--enable-source-maps
USER node

# Migrations: the one-shot job run before the control plane starts (docker-compose
# `migrate`, the Kubernetes Job): `node services/control-plane/dist/migrate.mjs`.
FROM runtime AS control-plane
COPY --from=build --chown=root:root /out/control-plane /app
EXPOSE 8080 50051
CMD ["node", "services/control-plane/dist/main.mjs"]

FROM runtime AS data-plane
COPY --from=build --chown=root:root /out/data-plane /app
EXPOSE 8081
# A larger young generation: each request's short-lived objects die there instead of
# being scavenged three times as often (about a tenth of the proxy's CPU per request,
# docs/benchmarks.md). Not accepted in NODE_OPTIONS, so it is on the command line
# (scripts/start.ts and bench/proxy start it the same way).
CMD ["node", "--min-semi-space-size=16", "services/data-plane/dist/main.mjs"]

FROM runtime AS metering-worker
COPY --from=build --chown=root:root /out/metering-worker /app
EXPOSE 9464
CMD ["node", "services/metering-worker/dist/main.mjs"]
