// The roles of one chain's wing built over the resources they share: the sender (records and paces),
// the tracker (follows transactions to their outcomes) and the reconciler (compares the record with
// the chain on evidence). The runtime owns them and runs their loops.
import type { PublicClient } from 'viem';
import { ChainResources, type ChainResourcesOptions } from './resources.js';
import { ChainSender } from './sender.js';
import { ChainTracker } from './tracker.js';
import { Reconciler } from './reconciler.js';
import type { ProviderSet } from './providers.js';
import type { ChainSpec } from './chains.js';
import { registerRelayers } from './relayer-set.js';

export interface ChainWingRoles {
  res: ChainResources;
  sender: ChainSender;
  tracker: ChainTracker;
  reconciler: Reconciler;
}

/** What the runtime gives its wing besides the chain's spec and clients. */
export type WingDeps = Pick<ChainResourcesOptions, 'db' | 'keys' | 'log' | 'relayerCount' | 'flush'> & { stuckSeconds: number };

export function buildChainWing(spec: ChainSpec, client: PublicClient, providers: ProviderSet, deps: WingDeps): ChainWingRoles {
  const o = {
    ...deps,
    client,
    chainId: spec.id,
    embedded: spec.embedded,
    confirmations: spec.confirmations,
    stuckMs: deps.stuckSeconds * 1000,
    tuning: spec,
  };
  const res = new ChainResources(o);
  const reconciler = new Reconciler({
    db: o.db,
    client: o.client,
    chainId: o.chainId,
    log: o.log,
    embedded: o.embedded,
    confirmations: o.confirmations,
    answers: res.answers,
    headNumber: () => res.fees.head?.number ?? null,
    // A judgement that must not rest on one backend asks every provider.
    onEachProvider: providers.size > 1 ? (body) => providers.onEach(body, 5000) : undefined,
  });
  res.news.on('mayDisagree', () => reconciler.soon());
  return { res, sender: new ChainSender(res), tracker: new ChainTracker(res), reconciler };
}

/** What a chain's wing does first: registers the relayers, funds them on the embedded chain, reconciles after a crash. */
export async function initChainWing({ res, reconciler }: Pick<ChainWingRoles, 'res' | 'reconciler'>, relayerCount: number): Promise<void> {
  await registerRelayers(res.db, res.keys, res.chainId, relayerCount);
  await res.relayerSet.load();
  // Elsewhere an account that is short is said by the funding watch (one line per account).
  if (res.embedded) await res.fundEmbedded();
  await res.readHead();
  await reconciler.run();
}
