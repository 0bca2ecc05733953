# The registry proxy's image. One image, every role: the Deployment's args name the role
# (proxy, mirror, pilot, dredger). See deploy/ and the README's "Container image and Kubernetes".
# Checked without a container engine by test/deploy/image-in-root, which carries out these
# instructions in a Debian 13 root: keep to the subset it reads (listed in its header).
#
# The base is Debian 13 (trixie): its glibc (2.41) loads the uWebSockets.js build for Node 22/24
# (which needs 2.38 or newer); Debian 12 does not (server/http/uws-loader.ts refuses with exit 2 there).
ARG NODE_IMAGE=node:24-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY engine engine
COPY workers workers
COPY server server
COPY bench bench
# npm ci runs `prepare` (the TypeScript build into dist/); then drop what only development needs:
# the dev dependencies.
RUN npm ci && npm prune --omit=dev

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./
COPY --from=build --chown=root:root /app/node_modules node_modules
COPY --from=build --chown=root:root /app/dist dist
# The embedded queue and store default to ./var; give the non-root user a place to write them.
RUN mkdir -p /app/var && chown node:node /app/var
USER node
EXPOSE 4873
# The launcher forwards SIGTERM to the service, which drains (server.shutdownDrainTimeout, 30 s by default):
# keep the pod's terminationGracePeriodSeconds above it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/server/cli/service.js"]
CMD ["proxy"]
