// The embedded chain on every supported machine: which npm package ships anvil for a platform and
// CPU, and that package.json and the lockfile carry all of them (npm installs the one that fits).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ANVIL_PACKAGES, anvilBinaryPath, anvilPackageFor } from '../../src/chain/anvil.js';

const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const lock = JSON.parse(fs.readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'));

describe('anvil per platform', () => {
  it('maps Linux and macOS on x64 and arm64 to their packages', () => {
    assert.equal(anvilPackageFor('linux', 'x64'), '@foundry-rs/anvil-linux-amd64');
    assert.equal(anvilPackageFor('linux', 'arm64'), '@foundry-rs/anvil-linux-arm64');
    assert.equal(anvilPackageFor('darwin', 'x64'), '@foundry-rs/anvil-darwin-amd64');
    assert.equal(anvilPackageFor('darwin', 'arm64'), '@foundry-rs/anvil-darwin-arm64');
  });

  it('has no package for other platforms, and says what to do instead', () => {
    for (const [platform, arch] of [
      ['win32', 'x64'],
      ['linux', 'ia32'],
      ['freebsd', 'x64'],
      ['linux', 'ppc64'],
    ]) {
      assert.equal(anvilPackageFor(platform, arch), null, `${platform}/${arch}`);
      assert.throws(() => anvilBinaryPath(platform, arch), new RegExp(`no embedded chain for ${platform}/${arch}.*CHAIN_RPC_URL`));
    }
  });

  it('resolves the binary of this machine', () => {
    const bin = anvilBinaryPath();
    assert.ok(bin.endsWith(`${anvilPackageFor(process.platform, process.arch)}/bin/anvil`), bin);
    fs.accessSync(bin, fs.constants.X_OK);
  });

  it('package.json lists every platform package as an optional dependency, pinned to one version', () => {
    const names = Object.values(ANVIL_PACKAGES).sort();
    assert.deepEqual(
      Object.keys(pkg.optionalDependencies ?? {})
        .filter((n) => n.startsWith('@foundry-rs/'))
        .sort(),
      names,
    );
    assert.equal(new Set(names.map((n) => pkg.optionalDependencies[n])).size, 1);
    for (const n of names) assert.equal(pkg.dependencies?.[n], undefined, `${n} must not be a hard dependency`);
  });

  it('the lockfile records every platform package with its os and cpu', () => {
    for (const [key, name] of Object.entries(ANVIL_PACKAGES)) {
      const [os, cpu] = key.split('-');
      const entry = lock.packages[`node_modules/${name}`];
      assert.ok(entry, `${name} missing from package-lock.json`);
      assert.equal(entry.version, pkg.optionalDependencies[name]);
      assert.equal(entry.optional, true);
      assert.deepEqual(entry.os, [os]);
      assert.deepEqual(entry.cpu, [cpu]);
    }
  });
});
