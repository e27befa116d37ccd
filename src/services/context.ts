import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db, Dialect, GroupCommit } from '../store/db.js';
import type { JobQueue } from '../jobs/queue.js';
import type { KeyRing } from '../chain/keys.js';
import type { ChainSender } from '../chain/sender.js';
import type { ChainSpec } from '../chain/chains.js';
import type { SecretBox } from '../util/secretbox.js';

/** Everything a use case needs, built once by the composition root (main.ts). */
export interface Ctx {
  config: Config;
  db: Db;
  dialect: Dialect;
  queue: JobQueue;
  box: SecretBox;
  log: Logger;
  keys: KeyRing;
  /**
   * The chain every record was on before there were several (recorded in `meta`): its jobs keep their
   * plain kinds (src/chain/chains.ts chainKind). Defaults to the configured default chain.
   */
  homeChainId?: number;
  /**
   * Set in a chain's own context (one per chain, built by src/chain/runtime.ts): the chain whose
   * sender, forwarder and settings (`config.chainId`, `config.confirmations`…) this context carries.
   * Absent in the shared context, where `sender` is the default chain's (or absent in the CLI).
   */
  chain?: ChainSpec;
  /** Absent in processes that do not talk to the chain (e.g. some CLI commands). */
  sender?: ChainSender;
  forwarder?: `0x${string}`;
  /** Every chain's context by chain id (processes that talk to chains). */
  chains?: Map<number, Ctx>;
  /** The store's group commit for high-volume creates; a plain transaction when absent. */
  groupCommit?: GroupCommit;
}
