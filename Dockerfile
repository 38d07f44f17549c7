FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
# A small young generation keeps the daemon's memory low under load (docs/decisions.md).
ENTRYPOINT ["node", "--max-semi-space-size=4", "bin/stablebooks.js"]
