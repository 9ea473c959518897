# syntax=docker/dockerfile:1
# Build: compile TypeScript, then keep production dependencies only.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --no-audit --no-fund

# Run: distroless Node.js, no shell, no package manager, numeric non-root user.
# spec-guard handles SIGTERM itself: it stops being ready, drains in-flight admission
# requests, hands back the leader lease and exits (node runs as PID 1 here, and needs no
# init process because it installs its own signal handlers).
# Pinned by digest (the multi-arch index of :nonroot), so that a rebuild ships the same base;
# refresh it deliberately: docker buildx imagetools inspect gcr.io/distroless/nodejs24-debian12:nonroot
FROM gcr.io/distroless/nodejs24-debian12:nonroot@sha256:14d42e2511532589a7c7e01a753667a74fcc96266e137e8125006b87b0c32d0a
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
LABEL org.opencontainers.image.title="spec-guard" \
      org.opencontainers.image.description="Kubernetes admission guard: keeps synced objects' spec equal to their source of truth" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/spec-guard/spec-guard"
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/nodejs/bin/node", "dist/src/cli.js"]
CMD ["serve", "--config", "/etc/spec-guard/config.yaml"]
