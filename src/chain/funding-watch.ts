// The balances of a chain's service accounts, watched: read for readiness and /health, said once to
// the operator when an account is short (and once when it is funded again), and a relayer under the
// low-balance threshold raised as one operator alert per crossing. A balance that cannot be read is
// the last one read (a busy node's timeout is not an empty account): readiness never flips on a
// missed answer.
import type { Logger } from 'pino';
import type { Address, PublicClient } from 'viem';
import {
  fundingNeeds,
  LOW_BALANCE_WEI,
  lowBalanceThreshold,
  median,
  type AccountReading,
  type ChainReading,
  type ChainVerdict,
} from '../domain/chain-funding.js';
import { formatEther } from 'viem';
import type { ChainSpec } from './chains.js';
import { raise } from './alerts.js';
import type { ForwarderBootstrap } from './forwarder-bootstrap.js';

/** How often the low-balance threshold follows the fees (from the median base fee of recent blocks). */
const THRESHOLD_EVERY_MS = 60_000;
/** A balance read this long ago still stands for one that cannot be read now. */
const LAST_BALANCE_MAX_AGE_MS = 10 * 60_000;

export class FundingWatch {
  /** Accounts said to be short (address -> balance said): each is said once, and again only when it changes. */
  private readonly short = new Map<string, string>();
  /** Relayers reported low (one alert per crossing). */
  private readonly lowRelayers = new Set<string>();
  private lowWei: { value: bigint; at: number } | null = null;
  /** The last balance read of each account. */
  private readonly lastBalance = new Map<string, { wei: bigint; at: number }>();

  constructor(
    private readonly spec: ChainSpec,
    /** Fast, bounded calls (the probe of the runtime). */
    private readonly probe: PublicClient,
    private readonly log: Logger,
  ) {}

  /**
   * What readiness is judged on: the deployer's and relayers' balances, and whether the forwarder has
   * code (`bootstrap` null: known to). Reachable when the node answered any of it.
   */
  async reading(deployer: string, relayers: string[], bootstrap: ForwarderBootstrap | null): Promise<ChainReading> {
    const accounts = [{ address: deployer, role: 'deployer' as const }, ...relayers.map((address) => ({ address, role: 'relayer' as const }))];
    const [{ readings, fresh }, code] = await Promise.all([
      this.balances(accounts),
      bootstrap ? bootstrap.deployed(this.probe).catch(() => null) : Promise.resolve(true),
    ]);
    // Reachable only on an answer now: the last balances stand in for a missed read, not for a dead node.
    const reachable = code !== null && fresh > 0;
    return { reachable, forwarderDeployed: code === true, accounts: readings };
  }

  /**
   * The accounts' balances: as read now, else as last read (not older than LAST_BALANCE_MAX_AGE_MS), else
   * null; `fresh`: how many were read now.
   */
  async balances(accounts: { address: string; role: 'deployer' | 'relayer' }[]): Promise<{ readings: AccountReading[]; fresh: number }> {
    let fresh = 0;
    const readings = await Promise.all(
      accounts.map(async (a): Promise<AccountReading> => {
        const now = await this.probe.getBalance({ address: a.address as Address }).catch(() => null);
        if (now !== null) {
          fresh++;
          this.lastBalance.set(a.address, { wei: now, at: Date.now() });
          return { ...a, balance: now };
        }
        const last = this.lastBalance.get(a.address);
        return { ...a, balance: last && Date.now() - last.at < LAST_BALANCE_MAX_AGE_MS ? last.wei : null };
      }),
    );
    return { readings, fresh };
  }

  /**
   * Under this a relayer is `low`: the CHAINS entry's lowBalanceWei, else about 1,000 mints' worth at
   * the median base fee of the last 20 blocks plus the tip (read at most once a minute).
   */
  async lowBalanceWei(): Promise<bigint> {
    if (this.spec.lowBalanceWei !== undefined) return this.spec.lowBalanceWei;
    if (this.lowWei && Date.now() - this.lowWei.at < THRESHOLD_EVERY_MS) return this.lowWei.value;
    const history = await this.probe.getFeeHistory({ blockCount: 20, rewardPercentiles: [50] }).catch(() => null);
    const base = history ? median(history.baseFeePerGas) : null;
    const tip = history ? median(history.reward?.map((r) => r[0]) ?? []) : null;
    const value = lowBalanceThreshold(base === null ? null : base + (tip ?? 0n));
    if (history) this.lowWei = { value, at: Date.now() };
    return value;
  }

  /** One warning and one operator alert when a relayer's balance falls under the threshold; quiet until it is funded again. */
  watch(verdict: ChainVerdict, lowWei: bigint): void {
    for (const a of verdict.accounts) {
      if (a.role !== 'relayer' || a.balance_wei === null) continue;
      if (a.low && !this.lowRelayers.has(a.address)) {
        this.lowRelayers.add(a.address);
        raise('relayer.balance_low', {
          chain_id: this.spec.id,
          chain: this.spec.name,
          relayer: a.address,
          balance_wei: a.balance_wei,
          threshold_wei: lowWei.toString(),
        });
      } else if (!a.low && this.lowRelayers.delete(a.address)) {
        this.log.info({ relayer: a.address, balanceWei: a.balance_wei }, 'relayer funded again');
      }
    }
  }

  /** One line per account that is short (at start and when it becomes short), one when it is funded. */
  say(reading: ChainReading): void {
    const needs = fundingNeeds(reading);
    const now = new Set(needs.map((n) => n.address));
    for (const n of needs) {
      if (this.short.get(n.address) === n.balance_wei) continue;
      this.short.set(n.address, n.balance_wei);
      this.log.warn(
        { address: n.address, role: n.role, balance_wei: n.balance_wei, needs_wei: n.needs_wei },
        `fund ${n.role} ${n.address} on chain ${this.spec.id} (${this.spec.name}): balance ${formatEther(BigInt(n.balance_wei))}, needs at least ${formatEther(LOW_BALANCE_WEI)} ${this.spec.currency}: ${n.why}` +
          ` (on a development chain: mintworks chain fund --chain ${this.spec.id})`,
      );
    }
    for (const address of [...this.short.keys()]) {
      if (now.has(address)) continue;
      this.short.delete(address);
      this.log.info({ address }, 'account funded');
    }
  }
}
