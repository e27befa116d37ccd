// What /health shows of a chain: its head, its accounts judged by the readiness rule, its providers,
// the fee wait and the transactions awaiting evidence of their outcome.
import type { PublicClient } from 'viem';
import type { Db } from '../store/db.js';
import { UNHANDLED } from './unhandled.js';
import { judgeChain, type ChainReading } from '../domain/chain-funding.js';
import { feeWait, gweiToWei, nextBaseFee } from '../domain/fees.js';
import type { ChainSpec } from './chains.js';
import { providerHealth, type ProviderSnapshot } from './providers.js';

export interface ChainHealth {
  chain_id: number;
  name: string;
  embedded: boolean;
  ready: boolean;
  block: number | null;
  accounts: { address: string; role: 'deployer' | 'relayer'; balance_wei: string | null; low: boolean }[];
  /** `ok`, or what the chain waits for (unreachable, which account to fund, the forwarder's deployment). */
  status: string;
  /** Under this balance a relayer is `low` (wei, decimal). */
  low_balance_wei: string;
  /** The chain's JSON-RPC providers, in order of preference (the embedded chain's own node included). */
  providers: ReturnType<typeof providerHealth>[];
  /** Transactions whose outcome waits for evidence the providers have not given yet (a lagging backend). */
  awaiting_evidence: number;
}

export interface HealthSources {
  spec: ChainSpec;
  probe: PublicClient;
  lowBalanceWei(): Promise<bigint>;
  reading(): Promise<ChainReading>;
  providers(): ProviderSnapshot[];
  awaitingEvidence(): Promise<number>;
}

export async function chainHealth(s: HealthSources, restarting: boolean): Promise<ChainHealth> {
  const lowWei = await s.lowBalanceWei();
  const [block, verdict, awaiting] = await Promise.all([
    s.probe.getBlock({ blockTag: 'latest' }).catch(() => null),
    s.reading().then((r) => judgeChain(r, lowWei)),
    s.awaitingEvidence().catch(() => 0),
  ]);
  const ready = !restarting && block !== null && verdict.ready;
  // Read here, not from the sender: the workers (and their sender) may run in another thread.
  const fees =
    block?.baseFeePerGas != null
      ? feeWait(nextBaseFee({ baseFeePerGas: block.baseFeePerGas, gasUsed: block.gasUsed, gasLimit: block.gasLimit }), gweiToWei(s.spec.maxFeeGwei))
      : null;
  return {
    chain_id: s.spec.id,
    name: s.spec.name,
    embedded: s.spec.embedded,
    ready,
    block: block === null ? null : Number(block.number),
    accounts: verdict.accounts,
    status: restarting ? 'chain restarting' : block === null ? 'chain unreachable' : !ready ? (verdict.reason ?? 'not ready') : (fees ?? 'ok'),
    low_balance_wei: lowWei.toString(),
    providers: s.providers().map(providerHealth),
    awaiting_evidence: awaiting,
  };
}

/** Transactions whose outcome waits for evidence (written on their rows by the reconciler of whichever process tracks). */
export async function awaitingEvidence(db: Db, chainId: number): Promise<number> {
  const r = await db
    .selectFrom('chain_txs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('chain_id', '=', chainId)
    .where('handled', '=', UNHANDLED)
    .where('awaiting', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
