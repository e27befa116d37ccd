// What every process opens first, the service and the CLI alike: the migrated store (open-store.ts)
// with the secrets, the wallet keys and the queue. Kept apart from the service's composition
// (service.ts), so a CLI command loads this much and not the HTTP server, the chains and the workers.
import path from 'node:path';
import type { Logger } from 'pino';
import type { Shutdown } from './shutdown.js';
import type { Config } from '../config/config.js';
import type { Store } from '../store/db.js';
import { JobQueue } from '../jobs/queue.js';
import { KeyRing } from '../chain/keys.js';
import type { SecretBox } from '../util/secretbox.js';
import { openCustody, type Custody } from '../custody/custody.js';
import { homeChainIdOf, openMigratedStore, type StoreOpening } from './open-store.js';

/** What each part of a start is given: the settings, the log, the core, and the shutdown its stops go on. */
export interface Booting {
  config: Config;
  log: Logger;
  core: Core;
  shutdown: Shutdown;
}

export interface Core {
  store: Store;
  box: SecretBox;
  keys: KeyRing;
  queue: JobQueue;
  homeChainId: number;
  /** Where the keys live (KEY_CUSTODY) and the HSM session when there is one. */
  custody: Custody;
}

/**
 * Opens the store with migrations applied, and the secrets: enough for the CLI. `store`: how a thread
 * that shares another's store opens it (src/store/open.ts): `checkpoints` where the SQLite WAL
 * is checkpointed when not where this process's settings put it, `flushedBy` who flushes its commits.
 */
export async function openCore(config: Config, log: Logger, opts: StoreOpening = {}): Promise<Core> {
  const store = await openMigratedStore(config, log, opts);
  let keys: KeyRing;
  let custody: Custody;
  try {
    custody = await openCustody(config, store.db, log);
  } catch (err) {
    await store.close();
    throw err;
  }
  const box = custody.box;
  // The store's close ends the custody's background reads and HSM session too (every caller closes the store).
  const closeStore = store.close;
  store.close = async () => {
    custody.close();
    await closeStore();
  };
  try {
    keys = await KeyRing.open(store.db, box, { accounts: custody.accounts ?? undefined });
  } catch (err) {
    await store.close();
    if (custody.kind === 'pkcs11')
      throw new Error(`the wallet seed in the database ${store.describe} does not open with the master key the HSM unwraps: ${(err as Error).message}`);
    const where = config.masterKeyHex ? 'MASTER_KEY' : `${path.join(config.dataDir, 'master.key')} (MASTER_KEY is not set)`;
    throw new Error(
      `the wallet seed in the database ${store.describe} does not open with the master key from ${where}: ${(err as Error).message}. ` +
        `The master key lives outside the database${config.databaseUrl ? ' (also with DATABASE_URL: in DATA_DIR, unless MASTER_KEY is set)' : ''}. ` +
        `Set MASTER_KEY to the key this installation was created with (its DATA_DIR/master.key, or the master.key of a backup made with \`mintworks backup\`), ` +
        `or point DATA_DIR at the directory that holds it.`,
    );
  }
  return { store, box, keys, queue: new JobQueue(store.db, store.dialect), homeChainId: await homeChainIdOf(store), custody };
}
