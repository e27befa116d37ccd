// The chain wing's roles over one set of resources, for unit tests with a stand-in node.
import type { Logger } from 'pino';
import type { PublicClient } from 'viem';
import type { Db } from '../../src/store/db.js';
import type { KeyRing } from '../../src/chain/keys.js';
import { ChainResources, type ChainResourcesOptions } from '../../src/chain/resources.js';
import { ChainSender } from '../../src/chain/sender.js';
import { ChainTracker } from '../../src/chain/tracker.js';
import { registerRelayers } from '../../src/chain/relayer-set.js';

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
