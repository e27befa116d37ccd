// `npm ci` runs no install script nobody reviewed, and says nothing about one: every package of the
// lockfile with an install script is named in package.json's `allowScripts` (npm 11.16+ lists the
// others after every install, and npm 12 will not run them). Denied on purpose: keccak (under hardhat,
// tests only), whose script only compiles when none of its prebuilt binaries fits, and which falls back to
// its JavaScript implementation then.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(fs.readFileSync(path.join(root, f), 'utf8'));

it("every install script of the lockfile is reviewed in package.json's allowScripts", () => {
  const lock = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
  const allow = (read('package.json') as { allowScripts: Record<string, boolean> }).allowScripts;
  const withScripts = Object.entries(lock.packages)
    .filter(([, p]) => p.hasInstallScript)
    .map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(withScripts.includes('better-sqlite3'), 'the lockfile is read');
  assert.deepEqual(
    withScripts.filter((name) => !(name in allow)),
    [],
    'packages whose install script is neither allowed nor denied',
  );
  assert.equal(allow.keccak, false);
});
