// Where the anvil binary is: the npm package of this platform and CPU (an optional dependency each).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The npm package that ships anvil for a platform and CPU (as Node names them), or null where none
 * is published. All four are optional dependencies, so the lockfile records each and npm installs
 * only the one that fits the machine.
 */
export const ANVIL_PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
};

export function anvilPackageFor(platform: string, arch: string): string | null {
  return ANVIL_PACKAGES[`${platform}-${arch}`] ?? null;
}

/** Absolute path of the anvil binary shipped by the package of this platform (anvilPackageFor). */
export function anvilBinaryPath(platform: string = process.platform, arch: string = process.arch): string {
  const pkg = anvilPackageFor(platform, arch);
  if (!pkg) {
    throw new Error(
      `no embedded chain for ${platform}/${arch}: anvil is packaged for linux and darwin on x64 and arm64. ` +
        `Set CHAIN_RPC_URL to a JSON-RPC endpoint of a chain instead.`,
    );
  }
  const require = createRequire(import.meta.url);
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${pkg}/package.json`);
  } catch (err) {
    throw new Error(
      `anvil binary not found: npm package ${pkg} is not installed (an optional dependency: was the ` +
        `install run with --omit=optional, or on another machine?). Run \`npm ci\` on this machine, ` +
        `or set CHAIN_RPC_URL to use an external chain instead of the embedded one.`,
      { cause: err },
    );
  }
  const bin = path.join(path.dirname(pkgJson), 'bin', 'anvil');
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch (err) {
    throw new Error(`anvil binary of package ${pkg} is missing or not executable: ${bin}`, { cause: err });
  }
  return bin;
}
