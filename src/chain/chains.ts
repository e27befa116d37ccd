// The chains one deployment serves: what a chain is to the chain wing (its id, endpoints, explorer,
// confirmations and fee tuning), and the description of a chain a record is on. Parsing the settings
// that configure them (EMBEDDED_CHAIN, CHAIN_RPC_URL, CHAINS) is src/config/chains.ts.

export interface ChainSpec {
  id: number;
  /** Shown in API objects as `chain` and `network`, exactly as given. */
  name: string;
  /** JSON-RPC endpoint (the first of `rpcUrls`); null for the embedded chain (its URL is known once anvil runs). */
  rpc: string | null;
  /** Every JSON-RPC endpoint of the chain, in order of preference: calls fail over between them (src/chain/providers.ts). */
  rpcUrls?: string[];
  /** Per call and provider, before the call goes to the next provider (ms). */
  rpcTimeoutMs?: number;
  /** A relayer below this balance is `low` (default: about 1,000 mints' worth at recent fees). */
  lowBalanceWei?: bigint;
  embedded: boolean;
  /** Block explorer base for `explorer_url` fields, without a trailing slash. */
  explorer: string;
  confirmations: number;
  /** Symbol of the native currency (what the accounts are funded with). */
  currency: string;
  /** Nothing is ever signed with a higher max fee per gas; while the base fee is above it nothing new is sent. */
  maxFeeGwei: number;
  /** The least tip offered, whatever recent blocks paid. */
  minTipGwei: number;
  /** A transaction that could have been mined but was not within this many blocks is replaced. */
  stuckBlocks: number;
  /** Unmined transactions one relayer may have at once (nodes keep a limited number per account). */
  maxInFlight: number;
  /** With a backlog, the share of each block's gas limit the service's transactions take. */
  blockGasShare: number;
}

/** The fee and pacing settings of a chain, as a CHAINS entry may give them (see docs/chains.md). */
export type ChainTuning = Pick<ChainSpec, 'maxFeeGwei' | 'minTipGwei' | 'stuckBlocks' | 'maxInFlight' | 'blockGasShare'>;

/** Defaults of the tuning fields; `maxFeeGwei` comes from CHAIN_MAX_FEE_GWEI. */
export const TUNING_DEFAULTS: Omit<ChainTuning, 'maxFeeGwei'> = { minTipGwei: 0.01, stuckBlocks: 3, maxInFlight: 16, blockGasShare: 0.5 };

/**
 * The ceiling when CHAIN_MAX_FEE_GWEI is not set: far above what Polygon, Base or Arbitrum ask on a
 * normal day, low enough that a spike to thousands of gwei is waited out instead of paid.
 */
export const DEFAULT_MAX_FEE_GWEI = 1000;

/** A chain's JSON-RPC endpoints, in order of preference. */
export function rpcUrlsOf(spec: ChainSpec): string[] {
  return spec.rpcUrls?.length ? spec.rpcUrls : spec.rpc ? [spec.rpc] : [];
}

/** The configured chain of an id; a record on a chain no longer configured still gets a description. */
export function chainSpecOf(chains: readonly ChainSpec[], id: number): ChainSpec {
  return (
    chains.find((c) => c.id === id) ?? {
      id,
      name: `chain ${id}`,
      rpc: null,
      embedded: false,
      explorer: chains[0]?.explorer ?? '',
      confirmations: 0,
      currency: 'ETH',
      ...TUNING_DEFAULTS,
      maxFeeGwei: chains[0]?.maxFeeGwei ?? DEFAULT_MAX_FEE_GWEI,
    }
  );
}
