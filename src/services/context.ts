import type { InfraCtx } from '../config/infra-context.js';
import type { KeyRing } from '../chain/keys.js';
import type { ChainSender } from '../chain/sender.js';
import type { ChainSpec } from '../chain/chains.js';

/**
 * What every use case needs: settings, database, queue, keys, log. Built by `buildContext`, in the
 * service and in the CLI alike. A process that talks to chains also carries each chain's own context
 * (`chains`) and, for what has no chain of its own (health, the explorer), the default chain's sender.
 */
export interface Ctx extends InfraCtx {
  keys: KeyRing;
  /** The default chain's sender, in processes that talk to chains. */
  sender?: ChainSender;
  /** Every chain's own context by chain id (processes that talk to chains). */
  chains?: Map<number, ChainCtx>;
}

/**
 * One chain's own context (src/services/chain/work.ts): its chain's facts (`chain.id`,
 * `chain.confirmations`…), sender and forwarder, and a queue whose job kinds are that chain's. What the
 * chain's job handlers, outcome effects and indexer are given. What names no chain takes the default
 * one by name: `defaultChain(ctx)`.
 */
export interface ChainCtx extends Ctx {
  chain: ChainSpec;
  sender: ChainSender;
  /** The chain's ERC-2771 forwarder. Known before any handler of the chain runs; reading it earlier throws. */
  readonly forwarder: `0x${string}`;
}
