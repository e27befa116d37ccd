import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db, Dialect } from '../store/db.js';
import type { JobQueue } from '../jobs/queue.js';
import type { KeyRing } from '../chain/keys.js';
import type { ChainSender } from '../chain/sender.js';
import type { SecretBox } from '../util/secretbox.js';
import type { GroupCommitter } from '../store/group-commit.js';
import type { Tx } from '../store/db.js';

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
  /** Shares commits between concurrent request transactions (SQLite); absent = one commit each. */
  committer?: GroupCommitter;
}

/** A request's transaction: grouped with concurrent ones on SQLite, plain on PostgreSQL. */
export function write<T>(ctx: Ctx, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return ctx.committer ? ctx.committer.write(fn) : ctx.db.transaction().execute(fn);
}
