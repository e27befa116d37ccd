// `mintworks chain verify`, POST /admin/v1/chains/<id>/verify and the console's Verify: every record of
// a chain (or of one App on it) against what the chain shows — contracts (code, owner, operators,
// forwarder; a collection's royalty and contract URI), each asset's token (owner, URI, burned or never minted) with its latest transfer and
// burn, rewards' allocations, claims and balances, ERC-1155 items' minted supplies and balances. Deposits are assets like the others (the indexer
// records them with the owner the chain showed). Records in flight are counted, not judged. With `fix`,
// each fixable divergence is set to what the chain shows (fix.ts), audited, with the events that were
// missed.
import { getAddress, getContractAddress, type Address } from 'viem';
import type { Ctx } from '../context.js';
import type { ChainSpec } from '../../chain/chains.js';
import { relayerRows } from '../../chain/relayer-set.js';
import type { Actor } from '../audit.js';
import { contractDivergences, report, type CollectionInfoRecord, type Divergence, type Found } from './divergences.js';
import { mapLimit, readCollectionInfo, readContract, readInFull, readWithdrawn, type ChainClient } from './chain-reader.js';
import { COLLECTION_INFO_JOB, kindOn } from '../../jobs/kinds.js';
import { jobsUnderWay } from '../../jobs/claimable.js';
import { COLLECTION_INFO_TX } from '../../chain/outcomes.js';
import { checkAllAssets, READ_CONCURRENCY, type CollectionRef } from './verify-assets.js';
import { checkRewardRecords, type RewardRef } from './verify-rewards.js';
import { checkItemRecords, type ItemCollectionRef } from './verify-items.js';
import { tally, type Counts, type Tally } from './tally.js';
import { applyFix, type FixResult } from './fix.js';
import type { ChainVerifyReport } from '../operator-views.js';

/** A chain to verify against: a running service's runtime or the CLI's handle (src/services/chain-ops.ts). */
export interface VerifyTarget {
  spec: Pick<ChainSpec, 'id'>;
  client: ChainClient;
}

export interface VerifyOptions {
  appUid?: string;
  /** Set each fixable divergence to what the chain shows, as `actor`. */
  fix?: { actor: Actor };
}

export type ReportedDivergence = Divergence & { chain_id: number; fixed?: FixResult };

/** The console's contract (src/services/console/types.ts), which this must keep fitting. */
export interface VerifyReport extends ChainVerifyReport {
  divergences: ReportedDivergence[];
  checked: Counts;
  in_flight: Counts;
  /** Records whose chain facts could not be read (the node did not answer): neither agreeing nor diverging. */
  unverified: Counts;
}

/** The installation's accounts on a chain: who may own its contracts, and who must be their operators. */
export interface ChainAccounts {
  ours: Set<string>;
  active: string[];
  /** An account that may mint (simulated mints tell a burned token from one never minted). */
  operator: Address;
  rotating: boolean;
  forwarder: string;
}

export async function chainAccounts(ctx: Ctx, chainId: number): Promise<ChainAccounts> {
  const rows = await relayerRows(ctx.db, chainId);
  const relayers = rows.length
    ? rows.map((r) => ({ address: r.address.toLowerCase(), active: r.state === 'active' }))
    : Array.from({ length: ctx.config.relayerCount }, (_, i) => ({ address: ctx.keys.relayer(i).address.toLowerCase(), active: true }));
  const deployer = ctx.keys.deployer().address;
  const rotation = await ctx.db
    .selectFrom('relayer_rotations')
    .select('id')
    .where('chain_id', '=', chainId)
    .where('finished_at', 'is', null)
    .executeTakeFirst();
  const active = relayers.filter((r) => r.active).map((r) => r.address);
  return {
    ours: new Set([deployer.toLowerCase(), ...relayers.map((r) => r.address)]),
    active,
    operator: getAddress(active[0] ?? relayers[0].address),
    rotating: rotation !== undefined,
    // The forwarder is the deployer's first contract, the same address on every chain (src/chain/runtime.ts).
    forwarder: getContractAddress({ from: deployer, nonce: 0n }).toLowerCase(),
  };
}

/**
 * Collections and rewards of the chain: the deployed ones checked, the others counted in flight. Gives
 * those whose code is there, whose records are then checked.
 * Long: each contract fact (code, owner, operators, forwarder, royalty, contract URI) is judged in turn from one read of the chain.
 */
async function checkContracts(
  ctx: Ctx,
  h: VerifyTarget,
  accounts: ChainAccounts,
  appUid: string | undefined,
  t: Tally,
): Promise<{ found: Found[]; collections: Map<string, CollectionRef>; itemCollections: Map<string, ItemCollectionRef>; rewards: Map<string, RewardRef> }> {
  let cq = ctx.db
    .selectFrom('collections')
    .select(['uid', 'app_uid', 'status', 'contract_address', 'royalty_receiver', 'royalty_bps', 'contract_uri', 'standard'])
    .where('chain_id', '=', h.spec.id);
  let rq = ctx.db.selectFrom('rewards').select(['uid', 'app_uid', 'status', 'contract_address', 'withdraw_status']).where('chain_id', '=', h.spec.id);
  if (appUid) {
    cq = cq.where('app_uid', '=', appUid);
    rq = rq.where('app_uid', '=', appUid);
  }
  const [cs, rs] = await Promise.all([cq.orderBy('uid').execute(), rq.orderBy('uid').execute()]);
  const collections = new Map<string, CollectionRef>();
  const itemCollections = new Map<string, ItemCollectionRef>();
  const rewards = new Map<string, RewardRef>();
  const contracts: {
    type: 'collection' | 'reward';
    uid: string;
    app_uid: string;
    address: string;
    withdrawn?: boolean;
    info?: CollectionInfoRecord;
    items?: boolean;
  }[] = [];
  const changing = await collectionInfoInFlight(ctx, h.spec.id);
  for (const c of cs) {
    if (c.status === 'deploying') t.inFlight('collections');
    if (c.status !== 'deployed' || !c.contract_address) continue;
    // Collections created before the options have no contract document (and a contract without them).
    const info =
      c.contract_uri !== null && !changing.has(c.uid)
        ? { royalty_receiver: c.royalty_receiver, royalty_bps: c.royalty_bps, contract_uri: c.contract_uri }
        : undefined;
    contracts.push({
      type: 'collection',
      uid: c.uid,
      app_uid: c.app_uid,
      address: c.contract_address,
      ...(info ? { info } : {}),
      ...(c.standard === 'ERC1155' ? { items: true } : {}),
    });
  }
  for (const r of rs) {
    if (r.status !== 'deployed' || !r.contract_address) {
      t.inFlight('rewards');
      continue;
    }
    contracts.push({ type: 'reward', uid: r.uid, app_uid: r.app_uid, address: r.contract_address, withdrawn: r.withdraw_status === 'done' });
  }
  const found = (
    await mapLimit(contracts, READ_CONCURRENCY, async (c) => {
      const address = c.address as Address;
      const facts = await readContract(h.client, address, accounts.active);
      if (!readInFull(facts)) t.unverified(`${c.type}s`);
      else t.checked(`${c.type}s`);
      // Only a contract that is there has records worth reading from it (a missing one is its own divergence).
      if (facts.hasCode === true && c.type === 'collection' && c.items)
        itemCollections.set(c.uid, { uid: c.uid, app_uid: c.app_uid, contract_address: c.address });
      else if (facts.hasCode === true && c.type === 'collection') collections.set(c.uid, { uid: c.uid, contract_address: c.address });
      if (facts.hasCode === true && c.type === 'reward')
        rewards.set(c.uid, { uid: c.uid, app_uid: c.app_uid, contract_address: c.address, withdrawn: c.withdrawn === true });
      // A withdrawal requested and not final yet is in flight: judged once it is done.
      const withdrawn = c.type === 'reward' && c.withdrawn ? { recorded: true, onChain: await readWithdrawn(h.client, address) } : undefined;
      const info = c.info && facts.hasCode === true ? { recorded: c.info, onChain: await readCollectionInfo(h.client, address) } : undefined;
      const { items: _items, ...contract } = c;
      return contractDivergences({
        ...contract,
        ...facts,
        info,
        ourAccounts: accounts.ours,
        expectedForwarder: accounts.forwarder,
        rotating: accounts.rotating,
        withdrawn,
      });
    })
  ).flat();
  return { found, collections, itemCollections, rewards };
}

/** Collections whose royalty or contract URI is on its way to the chain (a job, or a transaction not final yet). */
async function collectionInfoInFlight(ctx: Ctx, chainId: number): Promise<Set<string>> {
  const [jobs, txs] = await Promise.all([
    jobsUnderWay(ctx.db, kindOn(ctx, COLLECTION_INFO_JOB, chainId))
      .select('ref')
      .execute(),
    ctx.db.selectFrom('chain_txs').select('ref').where('chain_id', '=', chainId).where('kind', '=', COLLECTION_INFO_TX).where('handled', '=', 0).execute(),
  ]);
  return new Set([...jobs, ...txs].map((r) => r.ref));
}

/** Verifies one chain's records (of one App with `appUid`), fixing what can be fixed with `fix`. */
export async function verifyChain(ctx: Ctx, h: VerifyTarget, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const t = tally();
  const accounts = await chainAccounts(ctx, h.spec.id);
  const contracts = await checkContracts(ctx, h, accounts, opts.appUid, t);
  const found: Found[] = [...contracts.found];
  found.push(...(await checkAllAssets(ctx, h.client, h.spec.id, contracts.collections, accounts.operator, t)));
  found.push(...(await checkRewardRecords(ctx, h.client, h.spec.id, contracts.rewards, t)));
  found.push(...(await checkItemRecords(ctx, h.client, h.spec.id, contracts.itemCollections, t)));
  const divergences: ReportedDivergence[] = [];
  for (const f of found) {
    const d: ReportedDivergence = { ...report(f), chain_id: h.spec.id };
    if (opts.fix) d.fixed = f.plan ? await applyFix(ctx, h.spec.id, f, opts.fix.actor) : 'not_fixable';
    divergences.push(d);
  }
  return { divergences, ...t.counts };
}

/** Several chains' reports as one (the CLI without --chain). */
export function mergeReports(reports: readonly VerifyReport[]): VerifyReport {
  const sum = (pick: (r: VerifyReport) => Counts): Counts => {
    const out: Counts = {};
    for (const r of reports) for (const [k, n] of Object.entries(pick(r))) out[k] = (out[k] ?? 0) + n;
    return out;
  };
  return {
    divergences: reports.flatMap((r) => r.divergences),
    checked: sum((r) => r.checked),
    in_flight: sum((r) => r.in_flight),
    unverified: sum((r) => r.unverified),
  };
}

/** Divergences a verification leaves: all of them, or with a fix those it did not set right. */
export const remaining = (r: VerifyReport): ReportedDivergence[] => r.divergences.filter((d) => d.fixed !== 'fixed');
