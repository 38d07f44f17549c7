#!/usr/bin/env node
// The stablebooks command. The sources are TypeScript run through tsx, so there is no build step
// to forget; see docs/decisions.md ("Run TypeScript with tsx, no build step").
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
