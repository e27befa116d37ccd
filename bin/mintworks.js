#!/usr/bin/env node
// The `mintworks` CLI; runs the compiled build (npm ci builds it through the prepare script): the CLI
// bundled into one file when that is current (it starts in a quarter of the time), else the compiled tree
// (a build with tsc alone leaves the bundle behind it).
import { existsSync, statSync } from 'node:fs';
const tree = new URL('../dist/cli/main.js', import.meta.url);
const bundle = new URL('../dist/cli/mintworks.js', import.meta.url);
if (!existsSync(tree)) {
  process.stderr.write('mintworks is not built yet: run `npm run build` in the checkout\n');
  process.exit(1);
}
const bundled = existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(tree).mtimeMs;
await import((bundled ? bundle : tree).href);
