#!/usr/bin/env node
// The stablebooks command. It runs the compiled build in dist/cli when that is fresh (every file
// it was compiled from unchanged), else the TypeScript sources through tsx: the answer is the
// same, the compiled one starts about ten times sooner. scripts/ensure-deps.sh, which every npm
// script runs first, and the Dockerfile build it. See docs/decisions.md, "CLI start-up (issue 33)".
import { pathToFileURL } from 'node:url';
import { freshBuild } from './cliBuild.js';

/** @type {typeof import('../src/cli/main.ts').main} */
let main;
const built = freshBuild();
if (built) {
  ({ main } = await import(pathToFileURL(built).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
await main(process.argv);
