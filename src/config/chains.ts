// The chains one deployment serves, as configured: the embedded chain (unless EMBEDDED_CHAIN=false),
// CHAIN_RPC_URL (one external chain, the older shorthand) and the entries of CHAINS. Pure: parsing, and
// defaults from viem's list of well-known chains (known-chains.ts).
import { z } from 'zod';
import { TUNING_DEFAULTS, type ChainSpec } from '../chain/chains.js';
import { KNOWN_CHAINS_TEXT } from './known-chains.js';

/** The embedded chain mines on arrival and has no other traffic: the least tip it takes is enough. */
const EMBEDDED_MIN_TIP_GWEI = 0.001;

export class ChainConfigError extends Error {}

const entrySchema = z
  .object({
    id: z
      .number()
      .int()
      .positive()
      .max(2 ** 53 - 1),
    name: z.string().trim().min(1).max(100).optional(),
    rpc: z.union([
      z.url({ protocol: /^https?$/ }),
      z
        .array(z.url({ protocol: /^https?$/ }))
        .min(1)
        .max(10),
    ]),
    rpcTimeoutMs: z.number().int().min(100).max(120_000).optional(),
    lowBalanceWei: z
      .union([z.string().regex(/^\d{1,40}$/, 'a whole number of wei, as a decimal string'), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)])
      .optional(),
    explorer: z.url({ protocol: /^https?$/ }).optional(),
    confirmations: z.number().int().min(0).max(100).optional(),
    maxFeeGwei: z.number().positive().max(1_000_000).optional(),
    minTipGwei: z.number().min(0).max(1_000_000).optional(),
    stuckBlocks: z.number().int().min(1).max(1000).optional(),
    maxInFlight: z.number().int().min(1).max(1024).optional(),
    blockGasShare: z.number().positive().max(1).optional(),
  })
  .strict();

const FIELDS = 'id, name, rpc, rpcTimeoutMs, lowBalanceWei, explorer, confirmations, maxFeeGwei, minTipGwei, stuckBlocks, maxInFlight, blockGasShare';

interface KnownChain {
  name: string;
  currency: string;
  explorer: string | null;
}

/** The generated table's lines as `[id, name, currency, explorer or null]`, in its order. */
export function parseKnownChains(text: string): [number, string, string, string | null][] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [id, name, currency, explorer] = line.split('\t');
      return [Number(id), name, currency, explorer || null];
    });
}

let knownById: Map<number, KnownChain> | null = null;

/** What viem knows of a chain id (name, currency, explorer), from the table generated off its list. */
function wellKnown(id: number): KnownChain | null {
  knownById ??= new Map(parseKnownChains(KNOWN_CHAINS_TEXT).map(([chainId, name, currency, explorer]) => [chainId, { name, currency, explorer }]));
  return knownById.get(id) ?? null;
}

const trimSlash = (s: string) => s.replace(/\/+$/, '');

/**
 * Parses the CHAINS variable (a JSON array). Errors name the entry and field (`CHAINS[1].rpc`) so the
 * operator knows which one is wrong.
 */
export function parseChainsVar(text: string, publicUrl: string, defaultConfirmations: number, defaultMaxFeeGwei: number): ChainSpec[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ChainConfigError(`CHAINS: not valid JSON (${(err as Error).message}); expected an array like [{"id":80002,"name":"Amoy","rpc":"https://…"}]`);
  }
  if (!Array.isArray(raw)) throw new ChainConfigError('CHAINS: must be a JSON array of {id, name, rpc, explorer?, confirmations?, maxFeeGwei?, …}');
  return raw.map((entry, i) => {
    const parsed = entrySchema.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.length ? `.${issue.path.join('.')}` : '';
      const message = issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')} (allowed: ${FIELDS})` : issue.message;
      throw new ChainConfigError(`CHAINS[${i}]${field}: ${message}`);
    }
    const e = parsed.data;
    const known = e.name && e.explorer ? null : wellKnown(e.id);
    const name = e.name ?? known?.name;
    if (!name) throw new ChainConfigError(`CHAINS[${i}].name: required (chain ${e.id} is not a well-known chain)`);
    const rpcUrls = (Array.isArray(e.rpc) ? e.rpc : [e.rpc]).map(trimSlash);
    const maxFeeGwei = e.maxFeeGwei ?? defaultMaxFeeGwei;
    const minTipGwei = e.minTipGwei ?? Math.min(TUNING_DEFAULTS.minTipGwei, maxFeeGwei);
    if (minTipGwei > maxFeeGwei) throw new ChainConfigError(`CHAINS[${i}].minTipGwei: ${minTipGwei} is above the ceiling maxFeeGwei ${maxFeeGwei}`);
    return {
      id: e.id,
      name,
      rpc: rpcUrls[0],
      rpcUrls,
      ...(e.rpcTimeoutMs === undefined ? {} : { rpcTimeoutMs: e.rpcTimeoutMs }),
      ...(e.lowBalanceWei === undefined ? {} : { lowBalanceWei: BigInt(e.lowBalanceWei) }),
      embedded: false,
      explorer: trimSlash(e.explorer ?? known?.explorer ?? `${publicUrl}/explorer/${e.id}`),
      confirmations: e.confirmations ?? defaultConfirmations,
      currency: known?.currency ?? (e.name ? wellKnown(e.id)?.currency : undefined) ?? 'ETH',
      maxFeeGwei,
      minTipGwei,
      stuckBlocks: e.stuckBlocks ?? TUNING_DEFAULTS.stuckBlocks,
      maxInFlight: e.maxInFlight ?? TUNING_DEFAULTS.maxInFlight,
      blockGasShare: e.blockGasShare ?? TUNING_DEFAULTS.blockGasShare,
    };
  });
}

/** Every chain of a deployment: the embedded one first (when on), then CHAIN_RPC_URL, then CHAINS. */
export function assembleChains(
  opts: {
    embedded: boolean;
    chainId: number;
    chainName: string;
    chainRpcUrl?: string | string[];
    explorerUrl: string;
    confirmations: number;
    maxFeeGwei: number;
  },
  fromVar: ChainSpec[],
): ChainSpec[] {
  const chains: ChainSpec[] = [];
  const base = {
    id: opts.chainId,
    name: opts.chainName,
    explorer: opts.explorerUrl,
    confirmations: opts.confirmations,
    currency: 'ETH',
    ...TUNING_DEFAULTS,
    maxFeeGwei: opts.maxFeeGwei,
  };
  const minTip = (preferred: number) => Math.min(preferred, opts.maxFeeGwei);
  if (opts.embedded) chains.push({ ...base, rpc: null, embedded: true, minTipGwei: minTip(EMBEDDED_MIN_TIP_GWEI) });
  if (opts.chainRpcUrl) {
    const rpcUrls = Array.isArray(opts.chainRpcUrl) ? opts.chainRpcUrl : [opts.chainRpcUrl];
    chains.push({ ...base, rpc: rpcUrls[0], rpcUrls, embedded: false, minTipGwei: minTip(TUNING_DEFAULTS.minTipGwei) });
  }
  fromVar.forEach((c, i) => {
    if (chains.some((x) => x.id === c.id))
      throw new ChainConfigError(
        `CHAINS[${i}].id: chain ${c.id} is already served (${opts.embedded && c.id === opts.chainId ? 'by the embedded chain, CHAIN_ID' : 'by an earlier entry'}); each chain once`,
      );
    chains.push(c);
  });
  if (chains.length === 0) throw new ChainConfigError('CHAINS: no chain to serve (EMBEDDED_CHAIN=false and neither CHAINS nor CHAIN_RPC_URL is set)');
  return chains;
}
