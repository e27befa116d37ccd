// The embedded chain (anvil), as the rest of the service uses it. Its parts are in src/chain/anvil/:
// the binary of this platform, the scan for running anvils, the pid and lock files, the state file and
// its backups, the supervisors of a running node, and the start that ties them together.
export { ANVIL_PACKAGES, anvilBinaryPath, anvilPackageFor } from './anvil/binary.js';
export { startEmbeddedChain, type EmbeddedChain, type EmbeddedChainOptions } from './anvil/embedded-chain.js';
export { copyChainState } from './anvil/state.js';
export { runningAnvilPid } from './anvil/pid-lock.js';
