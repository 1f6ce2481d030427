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

# Final stage: production dependencies and dist/ only; no tsx, no TypeScript sources.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY --from=build /app/dist ./dist
USER node
CMD ["node", "dist/worker.js"]
