#!/usr/bin/env node
// The `mintworks` CLI; runs the compiled build (npm ci builds it through the prepare script).
import { existsSync } from 'node:fs';
const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('mintworks is not built yet: run `npm run build` in the checkout\n');
  process.exit(1);
}
await import(entry.href);
