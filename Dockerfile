FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
USER node
CMD ["node", "--import", "tsx", "src/worker.ts"]
