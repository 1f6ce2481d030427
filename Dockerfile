# Build stage: every dependency (tsx, TypeScript), then `npm run build` writes dist/: the
# compiled JavaScript, the migrations and the prebuilt workflow bundles.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.ts ./scripts/
COPY src ./src
RUN npm run build

# Final stage: production dependencies, the worker's (optional peers of the package, which a
# client-only install skips) and dist/ only; no tsx, no TypeScript sources. The versions are the
# lockfile's (test/stack/installed-package.test.ts runs these lines).
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/image-package.cjs ./scripts/
COPY --from=build /app/dist ./dist
RUN node scripts/image-package.cjs && npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
USER node
CMD ["node", "dist/worker.js"]
