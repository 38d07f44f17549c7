// Compiles the CLI into dist/cli (bin/cliBuild.js) unless the build there is fresh. Run by
// scripts/ensure-deps.sh, so before every npm script, and by the Dockerfile; `npm run build`.
import { BUILD_DIR, buildCli, freshBuild } from '../bin/cliBuild.js';

if (freshBuild() === null) {
  const started = performance.now();
  await buildCli();
  process.stderr.write(
    `stablebooks setup: compiled the CLI into ${BUILD_DIR} in ${Math.round(performance.now() - started)} ms\n`,
  );
}
