// Compiled contracts, produced from contracts/*.sol by scripts/build-contracts.mjs (npm run build).
import fs from 'node:fs';
import path from 'node:path';
import type { Abi, Hex } from 'viem';
import { BUILD_DIR } from '../util/build-paths.js';

export interface Artifact {
  contractName: string;
  abi: Abi;
  bytecode: Hex;
}

const buildDir = path.join(BUILD_DIR, 'contracts');
const cache = new Map<string, Artifact>();

export function artifact(name: 'MintworksCollection' | 'MintworksForwarder' | 'MintworksRewards' | 'MintworksItems'): Artifact {
  let a = cache.get(name);
  if (!a) {
    const file = path.join(buildDir, `${name}.json`);
    if (!fs.existsSync(file)) throw new Error(`contract artifact ${file} is missing: run \`npm run build\` first`);
    a = JSON.parse(fs.readFileSync(file, 'utf8')) as Artifact;
    cache.set(name, a);
  }
  return a;
}
