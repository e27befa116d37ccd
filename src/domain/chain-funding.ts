// Whether a chain can take work, from what was read of it: pure, so /health and the workers' gate
// apply the same rule.

/** Below this balance (0.01 of the native currency) an account is always reported `low`: fund it. */
export const LOW_BALANCE_WEI = 10n ** 16n;

/** Gas of one mint in a batch, a new holder's included (what the mint batches' gas limits count). */
export const GAS_PER_MINT = 60_000n;
/** A relayer is `low` once it cannot pay for about this many mints at recent fees. */
export const LOW_BALANCE_MINTS = 1000n;

/**
 * The balance under which a relayer is `low`: the chain's configured `lowBalanceWei`, or about 1,000
 * mints' worth at `gasPriceWei` (recent base fee plus tip), never under LOW_BALANCE_WEI.
 */
export function lowBalanceThreshold(gasPriceWei: bigint | null, configured?: bigint): bigint {
  if (configured !== undefined) return configured;
  const worth = gasPriceWei === null ? 0n : LOW_BALANCE_MINTS * GAS_PER_MINT * gasPriceWei;
  return worth > LOW_BALANCE_WEI ? worth : LOW_BALANCE_WEI;
}

/** The median of some values (recent blocks' base fees): one spiking block does not move it. */
export function median(values: readonly bigint[]): bigint | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return sorted[Math.floor(sorted.length / 2)];
}

export interface AccountReading {
  address: string;
  role: 'deployer' | 'relayer';
  /** null: the balance could not be read (the node did not answer). */
  balance: bigint | null;
}

export interface ChainReading {
  reachable: boolean;
  /** The ERC-2771 forwarder is on chain (the deployer's first transaction). */
  forwarderDeployed: boolean;
  accounts: AccountReading[];
}

export interface AccountStatus {
  address: string;
  role: 'deployer' | 'relayer';
  balance_wei: string | null;
  low: boolean;
}

export interface ChainVerdict {
  ready: boolean;
  /** Why not, in words an operator can act on; null when ready. */
  reason: string | null;
  accounts: AccountStatus[];
}

/**
 * A chain is ready when its node answers, its forwarder is deployed and every relayer can pay for gas.
 * The deployer pays only for the forwarder, so once that exists its balance no longer matters.
 * Work for a chain that is not ready waits (its jobs are put back, attempts not spent).
 */
export function judgeChain(r: ChainReading, lowWei: bigint = LOW_BALANCE_WEI): ChainVerdict {
  const accounts = r.accounts.map((a) => ({
    address: a.address,
    role: a.role,
    balance_wei: a.balance === null ? null : a.balance.toString(),
    low: a.balance !== null && a.balance < lowWei,
  }));
  if (!r.reachable) return { ready: false, reason: 'chain unreachable', accounts };
  const empty = (role: 'deployer' | 'relayer') => r.accounts.filter((a) => a.role === role && a.balance === 0n).map((a) => a.address);
  // Not read (the node did not answer for it, and no earlier reading stands for it): unknown, not empty.
  const unread = (role: 'deployer' | 'relayer') => r.accounts.filter((a) => a.role === role && a.balance === null).map((a) => a.address);
  if (!r.forwarderDeployed) {
    const deployer = empty('deployer');
    if (deployer.length) return { ready: false, reason: `fund the deployer ${deployer.join(', ')} (it deploys the forwarder)`, accounts };
    if (unread('deployer').length) return { ready: false, reason: `reading the balance of the deployer ${unread('deployer').join(', ')}`, accounts };
    return { ready: false, reason: 'deploying the forwarder', accounts };
  }
  const relayers = empty('relayer');
  if (relayers.length) return { ready: false, reason: `fund the relayer${relayers.length > 1 ? 's' : ''} ${relayers.join(', ')}`, accounts };
  const notRead = unread('relayer');
  if (notRead.length) return { ready: false, reason: `reading the balance of the relayer${notRead.length > 1 ? 's' : ''} ${notRead.join(', ')}`, accounts };
  return { ready: true, reason: null, accounts };
}

/** One account that needs funds: what an operator must send, and where. */
export interface FundingNeed {
  address: string;
  role: 'deployer' | 'relayer';
  balance_wei: string;
  /** At least this much more (wei) brings it to LOW_BALANCE_WEI. */
  needs_wei: string;
  why: string;
}

/**
 * The accounts that are short: each relayer below LOW_BALANCE_WEI (it pays every mint's gas), and the
 * deployer while the forwarder is not deployed (it pays that deployment; afterwards its balance is
 * never used). Unread balances are not judged.
 */
export function fundingNeeds(r: ChainReading): FundingNeed[] {
  const needs: FundingNeed[] = [];
  for (const a of r.accounts) {
    if (a.balance === null || a.balance >= LOW_BALANCE_WEI) continue;
    if (a.role === 'deployer' && r.forwarderDeployed) continue;
    needs.push({
      address: a.address,
      role: a.role,
      balance_wei: a.balance.toString(),
      needs_wei: (LOW_BALANCE_WEI - a.balance).toString(),
      why:
        a.role === 'deployer'
          ? 'it deploys the forwarder contract, the first transaction of this installation on the chain'
          : 'it pays the gas of mints, deployments and transfers',
    });
  }
  return needs;
}
