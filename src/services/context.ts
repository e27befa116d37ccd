import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db, Dialect, GroupCommit } from '../store/db.js';
import type { JobQueue } from '../jobs/queue.js';
import type { KeyRing } from '../chain/keys.js';
import type { ChainSender } from '../chain/sender.js';
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
  /** Absent in processes that do not talk to the chain (e.g. some CLI commands). */
  sender?: ChainSender;
  forwarder?: `0x${string}`;
  /** The store's group commit for high-volume creates; a plain transaction when absent. */
  groupCommit?: GroupCommit;
}
