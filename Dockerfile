# The stablebooks image: one image for every command (`start`, `migrate`, `sandbox`, ...), run
# from the CLI compiled by esbuild (scripts/build-cli.js) at the end of the build.
FROM node:22-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
# The locked versions, installed the way scripts/ensure-deps.sh does: not `npm ci`, which refuses
# this lock file (it lists only the optional platform binaries of the machine that wrote it).
# --omit=dev: everything `start`, `migrate` and `sandbox` load, tsx and esbuild included, is a
# dependency.
RUN npm install --no-save --no-audit --no-fund --omit=dev --loglevel=error \
  && npm cache clean --force

# The code stays owned by root and read-only to the process; the only folder it writes is the
# reports folder, owned by the image's unprivileged `node` user (uid 1000). A named volume mounted
# there starts with that owner; a bind mount must be writable by uid 1000.
COPY . .
# The CLI compiled into dist/cli (bin/cliBuild.js), owned by root like the code: every command
# starts without compiling TypeScript (docs/decisions.md, "CLI start-up (issue 33)").
RUN node scripts/build-cli.js
ENV REPORTS_DIR=/var/lib/stablebooks/reports \
  PORT=8080 \
  OPS_PORT=8081
RUN mkdir -p /var/lib/stablebooks/reports && chown node:node /var/lib/stablebooks/reports

USER node
# 8080: the webhooks and /healthz. 8081 (OPS_PORT, on OPS_HOST): /metrics, /readyz, /healthz and
# /admin, for Prometheus and operators only; never publish it to the internet.
EXPOSE 8080 8081

# Ready means PostgreSQL and Redis answer. Only `start` serves /readyz: a container of another
# command (sandbox, migrate) overrides or disables this check (docker-compose.yml does).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || '8081') + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# A small young generation keeps the daemon's memory low under load (docs/decisions.md).
ENTRYPOINT ["node", "--max-semi-space-size=4", "bin/stablebooks.js"]
CMD ["start"]
