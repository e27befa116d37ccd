import type { Logger } from 'pino';
import type { Config, Installation } from './config.js';
import type { Db, Dialect, GroupCommit } from '../store/db.js';
import type { JobQueue } from '../jobs/queue.js';
import type { SecretBox } from '../util/secretbox.js';

/**
 * What the infrastructure modules (metadata, webhooks) take from the composition root: the store, the
 * queue, secrets, configuration, the installation's facts and the logger, nothing of the use cases. The services' context
 * (services/context.ts) has all of it, so a service passes its own along.
 */
export interface InfraCtx {
  /** What the operator set: frozen since loading. */
  config: Config;
  /** What the installation's processes agreed on at the start (public URL, operator token, chains, home chain). */
  installation: Installation;
  db: Db;
  /** Which database: for the store's capabilities (store/locks.ts), never to branch on. */
  dialect: Dialect;
  queue: JobQueue;
  box: SecretBox;
  log: Logger;
  /** The store's group commit for high-volume writes; a plain transaction when absent. */
  groupCommit?: GroupCommit;
}
