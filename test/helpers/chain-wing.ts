// The chain wing's roles over one set of resources, for tests with a stand-in node or the embedded chain;
// an outcome handler table, and a mint transaction recorded for the tests on the real anvil.
import type { Logger } from 'pino';
import type { PublicClient } from 'viem';
import type { Db } from '../../src/store/db.js';
import { ChainResources, type ChainResourcesOptions } from '../../src/chain/resources.js';
import { ChainSender } from '../../src/chain/sender.js';
import { ChainTracker } from '../../src/chain/tracker.js';
import { registerRelayers } from '../../src/chain/relayer-set.js';
import { MINT_TX, type OutcomeHandlers } from '../../src/chain/outcomes.js';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { SecretBox } from '../../src/util/secretbox.js';
import { KeyRing } from '../../src/chain/keys.js';
import { tempDir } from './env.js';

export interface ChainWing {
  res: ChainResources;
  sender: ChainSender;
  tracker: ChainTracker;
  /** What the runtime does first: registers the relayers and reads the set and the head. */
  init(): Promise<void>;
}

export function chainWing(
  db: Db,
  client: PublicClient,
  keys: KeyRing,
  chainId: number,
  log: Logger,
  opts: Partial<ChainResourcesOptions> & { flush: () => Promise<void> },
): ChainWing {
  const res = new ChainResources({ db, client, keys, chainId, log, relayerCount: 0, embedded: true, confirmations: 0, ...opts });
  return {
    res,
    sender: new ChainSender(res),
    tracker: new ChainTracker(res),
    async init() {
      await registerRelayers(db, keys, chainId, opts.relayerCount ?? 0);
      await res.relayerSet.load();
      await res.readHead();
    },
  };
}

/** An outcome handler for every kind: each refuses to run, except those in `overrides`. */
export function outcomeTable(overrides: Partial<OutcomeHandlers>): OutcomeHandlers {
  const refuse = async () => {
    throw new Error('not this handler');
  };
  // Typed as the table: a kind added to the service without a line here does not compile.
  const refusing: OutcomeHandlers = {
    'forwarder.deploy': refuse,
    'collection.deploy': refuse,
    'asset.mint': refuse,
    forward: refuse,
    'asset.edit': refuse,
    'reward.deploy': refuse,
    'reward.allocate': refuse,
    'reward.claim': refuse,
    'reward.withdraw': refuse,
    'collection.base_uri': refuse,
    'collection.info': refuse,
    'relayers.rotation': refuse,
    'item.mint': refuse,
    'item.forward': refuse,
    'item.uri': refuse,
  };
  return { ...refusing, ...overrides };
}

/** A store of its own (SQLite in a temporary directory, migrated) and the chain wing on `client`, its relayers funded on the embedded chain. */
export async function embeddedWing(client: PublicClient, chainId: number, log: Logger, relayerCount: number): Promise<{ store: Store; wing: ChainWing }> {
  const store = openStore({ dataDir: tempDir() });
  await migrateToLatest(store, chainId);
  const keys = await KeyRing.open(store.db, new SecretBox('33'.repeat(32)));
  const wing = chainWing(store.db, client, keys, chainId, log, { relayerCount, embedded: true, confirmations: 0, flush: () => store.flush() });
  await wing.init();
  await wing.res.fundEmbedded();
  return { store, wing };
}

/** A mint transaction recorded (signed, not sent) to a contract-less address: it is mined, and mints nothing. */
export function recordMint(store: Store, wing: ChainWing) {
  return store.db.transaction().execute((tx) =>
    wing.sender.record(tx, {
      kind: MINT_TX,
      ref: 'c',
      payload: { collection_uid: 'c', contract: '0x1', items: [], rounds: {} },
      to: '0x0000000000000000000000000000000000000001',
      data: '0x',
      gas: 100_000n,
    }),
  );
}
