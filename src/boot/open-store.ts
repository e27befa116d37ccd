// The store with its migrations applied: the first thing every process opens. Apart from the keys and
// the secrets (open-core.ts), so a thread that only writes rows (the creates' thread) opens this much
// and loads no key custody, no wallet keys and no chain library.
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Checkpoints, Store } from '../store/db.js';
import { openStore } from '../store/open.js';
import { migrateToLatest } from '../store/migrate.js';
import { preparePrivateDir } from '../util/private-dir.js';

/** How a process opens the store (see openCore). */
export interface StoreOpening {
  store?: { checkpoints?: Checkpoints; flushedBy?: 'commit' | 'caller' };
  existing?: boolean;
}

/** Opens the store and applies the migrations; a store that cannot be migrated is closed again. */
export async function openMigratedStore(config: Config, log: Logger, opts: StoreOpening = {}): Promise<Store> {
  // `existing`: a command that only reads opens an installation that is there, and creates nothing.
  if (!opts.existing) preparePrivateDir(config.dataDir); // 0700, files 0600 (src/util/private-dir.ts)
  // One checkpointer per process: the workers' thread runs it beside its jobs when there is one.
  const checkpoints = opts.store?.checkpoints ?? (config.runApi && config.runWorkers && config.workerThread ? 'none' : !config.runApi ? 'inline' : 'thread');
  const store = openStore({
    databaseUrl: config.databaseUrl,
    postgres: { ...config.database, poolSize: poolSizeOf(config) },
    dataDir: config.dataDir,
    checkpoints,
    flushedBy: opts.store?.flushedBy,
    // In the service's log (its level and format), not as a bare process warning on stderr.
    onConnectionLost: (err) => log.warn({ err: err.message }, 'PostgreSQL connection lost: a new one is opened at the next query'),
  });
  try {
    const applied = await migrateToLatest(store, config.chains[0].id);
    if (applied.length) log.info({ migrations: applied, store: store.describe }, 'database migrated');
    store.captureChanges();
  } catch (err) {
    await store.close();
    throw new Error(`cannot open the database ${store.describe} (DATABASE_URL): ${(err as Error).message}`);
  }
  return store;
}

/**
 * The connections of this part's pool. A part that runs only the workers (the workers' thread of `npm
 * start`, a worker process) has the smaller pool: its loops all poll when they start, and a pool of
 * ten opened ten connections then and spread the drain's statements over all of them. A PostgreSQL
 * backend pays the first time it plans or runs a statement on a table (the asset table's mark of 430
 * minted assets: about 35 ms the first time on a connection, 15 ms after), so each of the ten paid it.
 */
export function poolSizeOf(config: Pick<Config, 'runApi' | 'runWorkers' | 'database'>): number {
  return config.runWorkers && !config.runApi ? config.database.workersPoolSize : config.database.poolSize;
}

/** The installation's home chain, recorded by the migrations (migration 012) for every database. */
export async function homeChainIdOf(store: Store): Promise<number> {
  const home = await store.db.selectFrom('meta').select('value').where('key', '=', 'chain_id').executeTakeFirstOrThrow();
  return Number(home.value);
}
