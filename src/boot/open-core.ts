// What every process opens first, the service and the CLI alike: the logger, the master key, the
// migrated store with the secrets and the queue, and the services' context built on them. Kept apart
// from the service's composition (service.ts), so a CLI command loads this much and not the HTTP
// server, the chains and the workers.
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { Shutdown } from './shutdown.js';
import { freezeConfig, installationOf, type Config, type Installation } from '../config/config.js';
import type { Checkpoints, Store } from '../store/db.js';
import { openStore } from '../store/open.js';
import { migrateToLatest } from '../store/migrate.js';
import { JobQueue } from '../jobs/queue.js';
import { KeyRing } from '../chain/keys.js';
import type { SecretBox } from '../util/secretbox.js';
import { preparePrivateDir } from '../util/private-dir.js';
import { prettyDestination } from '../util/log-format.js';
import type { ChainCtx, Ctx } from '../services/context.js';
import type { ChainSender } from '../chain/sender.js';
import { openCustody, type Custody } from '../custody/custody.js';

export function createLogger(config: Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>): Logger {
  const options = {
    level: config.logLevel,
    // Belt and braces: whatever is logged, these paths never show their values.
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-api-key"]',
        'headers.authorization',
        'headers["x-api-key"]',
        '*.api_secret',
        'api_secret',
        '*.secret',
        'secret',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  // LOG_FORMAT (src/config/config.ts): readable lines on a terminal, JSON for log collectors.
  return config.logFormat === 'pretty' ? pino(options, prettyDestination()) : pino(options);
}

/** Kept here for callers of the core: where the local master key comes from (src/custody/custody.ts). */
export { loadMasterKey } from '../custody/custody.js';

/** What `openCore` opens: the migrated store, the secrets and the queue. */
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
export async function openCore(
  config: Config,
  log: Logger,
  opts: { store?: { checkpoints?: Checkpoints; flushedBy?: 'commit' | 'caller' }; existing?: boolean } = {},
): Promise<Core> {
  // `existing`: a command that only reads opens an installation that is there, and creates nothing.
  if (!opts.existing) preparePrivateDir(config.dataDir); // 0700, files 0600 (src/util/private-dir.ts)
  // One checkpointer per process: the workers' thread runs it beside its jobs when there is one.
  const checkpoints = opts.store?.checkpoints ?? (config.runApi && config.runWorkers && config.workerThread ? 'none' : !config.runApi ? 'inline' : 'thread');
  const store = openStore({
    databaseUrl: config.databaseUrl,
    postgres: config.database,
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
  // Recorded by the migrations (migration 012) for every database.
  const home = await store.db.selectFrom('meta').select('value').where('key', '=', 'chain_id').executeTakeFirstOrThrow();
  return { store, box, keys, queue: new JobQueue(store.db, store.dialect), homeChainId: Number(home.value), custody };
}

/** The parts a context is built from: the store and secrets of `openCore`, and what the process adds. */
export interface ContextParts {
  config: Config;
  log: Logger;
  core: Pick<Core, 'store' | 'queue' | 'box' | 'keys'> & { homeChainId?: number };
  /** What the start agreed on (src/services/installation.ts); else the settings' own, with the core's home chain. */
  installation?: Installation;
  sender?: ChainSender;
}

/** The one way a context is built (the service, the CLI, tests): what every use case needs. */
export function buildContext({ config, log, core, sender, installation }: ContextParts): Ctx {
  return {
    config: freezeConfig(config),
    installation: installation ?? installationOf(config, { homeChainId: core.homeChainId }),
    db: core.store.db,
    dialect: core.store.dialect,
    queue: core.queue,
    box: core.box,
    log,
    keys: core.keys,
    groupCommit: core.store.groupCommit,
    ...(sender ? { sender, chains: new Map<number, ChainCtx>() } : {}),
  };
}
