# Build stage: every dependency (tsx, TypeScript), then `npm run build` writes dist/: the
# compiled JavaScript, the migrations and the prebuilt workflow bundles.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# npm >= 11.16 reads package.json's allowScripts; --strict-allow-scripts fails the install when a
# dependency's install script is not reviewed there (the image's own npm 10 would ignore it).
RUN npm install -g npm@11.19.1 --no-audit --no-fund
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --strict-allow-scripts
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
RUN npm install -g npm@11.19.1 --no-audit --no-fund
RUN node scripts/image-package.cjs && npm install --omit=dev --no-audit --no-fund --strict-allow-scripts && npm cache clean --force
COPY bin ./bin
USER node
CMD ["node", "dist/worker.js"]
