// The background verification of a chain (run by the workers, every CHAIN_VERIFY_INTERVAL_SECONDS): a
// bounded number of records a pass — those the latest events name (what just changed), then the next
// ones of a rolling cursor over every asset, claim and contract of the chain — checked as
// `chain verify` checks them. Cheap by design: at most CHAIN_VERIFY_BATCH records a pass, each a few
// calls. What it finds is kept in `meta` (`chain_verify.<chain id>`: the cursors and the divergent
// records, so every process's /metrics reports it as `mintworks_chain_divergences`), and each
// divergence newly found raises a `chain.divergence` operator alert. It only reports: fixing is the
// operator's call (`chain verify --fix`).
//
// Several worker processes: a pass is claimed by writing its start into the row (compare-and-set on
// the text read), so one process does each pass, and the cursors are shared.
import type { Address } from 'viem';
import { raise, type AlertKind } from '../../chain/alerts.js';
import type { ChainCtx, Ctx } from '../context.js';
import { contractDivergences, divergenceKey, report, type Divergence, type Found } from './divergences.js';
import { mapLimit, readContract, readInFull } from './chain-reader.js';
import { assetRows, checkAssets, READ_CONCURRENCY, type CollectionRef } from './verify-assets.js';
import { checkClaims, type RewardRef } from './verify-rewards.js';
import { chainAccounts } from './verify.js';
import { tally } from './tally.js';

/** The operator alert a newly found divergence raises. */
export const DIVERGENCE_ALERT: AlertKind = 'chain.divergence';
const KEY_PREFIX = 'chain_verify.';
/** Divergent records kept (the gauge counts them); beyond, the count stays right but the list is cut. */
const MAX_KEPT = 10_000;
/** Alerts raised one by one in a pass; beyond, one alert says how many more. */
const MAX_ALERTS = 20;
/** Event types whose payload names a record worth checking again. */
const CHANGE_EVENTS = ['asset.minted', 'asset.transferred', 'asset.burned', 'asset.edited', 'reward.claimed'];

export interface WatchState {
  /** When the latest pass started (ms): a process that finds it recent leaves the pass to its owner. */
  pass_at: number;
  /** The last event read (events.seq). */
  seq: number;
  asset_after: string;
  claim_after: string;
  contract_after: string;
  /** The divergence keys of each record found divergent (by the record checked: `asset:<uid>`…). */
  divergent: Record<string, string[]>;
  /** How many divergences the state holds (the gauge). */
  count: number;
}

const keyOf = (chainId: number) => `${KEY_PREFIX}${chainId}`;

function parse(value: string | undefined): WatchState {
  const empty: WatchState = { pass_at: 0, seq: -1, asset_after: '', claim_after: '', contract_after: '', divergent: {}, count: 0 };
  if (!value) return empty;
  try {
    return { ...empty, ...(JSON.parse(value) as Partial<WatchState>) };
  } catch {
    return empty;
  }
}

/** Writes the state if the row still holds `was` (another process's pass otherwise: false). */
async function swap(ctx: Ctx, chainId: number, was: string | undefined, next: WatchState): Promise<boolean> {
  const value = JSON.stringify(next);
  if (was === undefined) {
    const r = await ctx.db
      .insertInto('meta')
      .values({ key: keyOf(chainId), value })
      .onConflict((oc) => oc.column('key').doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
  }
  const r = await ctx.db.updateTable('meta').set({ value }).where('key', '=', keyOf(chainId)).where('value', '=', was).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The divergences each chain's background pass holds now (for /metrics). */
export async function divergenceCounts(ctx: Ctx): Promise<{ chain_id: number; count: number }[]> {
  const rows = await ctx.db.selectFrom('meta').select(['key', 'value']).where('key', 'like', `${KEY_PREFIX}%`).execute();
  return rows.map((r) => ({ chain_id: Number(r.key.slice(KEY_PREFIX.length)), count: parse(r.value).count }));
}

/** The records one pass checks: what the latest events name, then the next of each rolling cursor. */
// Long: each rolling cursor is advanced in turn over one pass's state.
async function pick(ctx: ChainCtx, s: WatchState, batch: number) {
  const chainId = ctx.chain.id;
  const recentAssets = new Set<string>();
  const recentClaims = new Set<string>();
  let seq = s.seq;
  if (seq < 0) {
    // The first pass starts at the newest event: the rolling cursor covers the past.
    const last = await ctx.db.selectFrom('events').select('seq').orderBy('seq', 'desc').limit(1).executeTakeFirst();
    seq = last ? Number(last.seq) : 0;
  }
  const events = await ctx.db
    .selectFrom('events')
    .select(['seq', 'type', 'payload'])
    .where('seq', '>', seq)
    .orderBy('seq')
    .limit(Math.ceil(batch / 2))
    .execute();
  for (const e of events) {
    seq = Number(e.seq);
    if (!CHANGE_EVENTS.includes(e.type)) continue;
    const data = JSON.parse(e.payload) as { asset?: { uid: string }; claim?: { uid: string } };
    if (data.asset) recentAssets.add(data.asset.uid);
    if (data.claim) recentClaims.add(data.claim.uid);
  }
  const [collections, rewards] = await Promise.all([
    ctx.db.selectFrom('collections').select(['uid', 'app_uid', 'contract_address']).where('chain_id', '=', chainId).where('status', '=', 'deployed').execute(),
    ctx.db
      .selectFrom('rewards')
      .select(['uid', 'app_uid', 'contract_address', 'withdraw_status'])
      .where('chain_id', '=', chainId)
      .where('status', '=', 'deployed')
      .execute(),
  ]);
  const room = Math.max(1, batch - recentAssets.size - recentClaims.size);
  const collectionUids = collections.map((c) => c.uid);
  const rewardUids = rewards.map((r) => r.uid);
  const [rolling, rollingClaims] = await Promise.all([
    collectionUids.length
      ? assetRows(ctx).where('collection_uid', 'in', collectionUids).where('uid', '>', s.asset_after).orderBy('uid').limit(room).execute()
      : Promise.resolve([]),
    rewardUids.length
      ? ctx.db.selectFrom('claims').select('uid').where('reward_uid', 'in', rewardUids).where('uid', '>', s.claim_after).orderBy('uid').limit(room).execute()
      : Promise.resolve([]),
  ]);
  const assets = [
    ...rolling,
    ...(recentAssets.size && collectionUids.length
      ? await assetRows(ctx)
          .where('uid', 'in', [...recentAssets])
          .where('collection_uid', 'in', collectionUids)
          .execute()
      : []),
  ];
  const claimUids = [...new Set([...rollingClaims.map((c) => c.uid), ...recentClaims])];
  const claims = claimUids.length
    ? await ctx.db
        .selectFrom('claims')
        .select(['uid', 'app_uid', 'reward_uid', 'status', 'amount'])
        .where('uid', 'in', claimUids)
        .where('reward_uid', 'in', rewardUids)
        .execute()
    : [];
  // Contracts: a few a pass, in uid order across collections and rewards.
  const contracts = [
    ...collections.map((c) => ({ type: 'collection' as const, uid: c.uid, app_uid: c.app_uid, address: c.contract_address! })),
    ...rewards.map((r) => ({ type: 'reward' as const, uid: r.uid, app_uid: r.app_uid, address: r.contract_address! })),
  ]
    .filter((c) => c.uid > s.contract_after)
    .sort((a, b) => (a.uid < b.uid ? -1 : 1))
    .slice(0, 5);
  const unique = [...new Map(assets.map((a) => [a.uid, a])).values()];
  return {
    seq,
    assets: unique,
    claims,
    contracts,
    collections: new Map<string, CollectionRef>(collections.map((c) => [c.uid, { uid: c.uid, contract_address: c.contract_address! }])),
    rewards: new Map<string, RewardRef>(
      rewards.map((r) => [r.uid, { uid: r.uid, app_uid: r.app_uid, contract_address: r.contract_address!, withdrawn: r.withdraw_status === 'done' }]),
    ),
    // Where each cursor goes next: past what was read, or back to the start at the end.
    next: {
      asset_after: rolling.length === room ? rolling[rolling.length - 1].uid : '',
      claim_after: rollingClaims.length === room ? rollingClaims[rollingClaims.length - 1].uid : '',
      contract_after: contracts.length === 5 ? contracts[contracts.length - 1].uid : '',
    },
  };
}

/** One pass over a chain's records; returns the divergences newly found (null: another process has the pass). */
export async function watchPass(ctx: ChainCtx, opts: { intervalMs: number; batch: number; now?: number }): Promise<Divergence[] | null> {
  const chainId = ctx.chain.id;
  const now = opts.now ?? Date.now();
  const row = await ctx.db.selectFrom('meta').select('value').where('key', '=', keyOf(chainId)).executeTakeFirst();
  const s = parse(row?.value);
  // A pass started by another process within the interval (or its timer is running): leave it to it.
  if (now - s.pass_at < opts.intervalMs * 0.8) return null;
  const claimed: WatchState = { ...s, pass_at: now };
  if (!(await swap(ctx, chainId, row?.value, claimed))) return null;

  const accounts = await chainAccounts(ctx, chainId);
  const p = await pick(ctx, s, opts.batch);
  const t = tally();
  const judged = new Map<string, Found[]>();
  for (const [uid, f] of await checkAssets(ctx, ctx.sender.client, chainId, p.collections, accounts.operator, p.assets, t)) judged.set(`asset:${uid}`, f);
  for (const [uid, f] of await checkClaims(ctx, ctx.sender.client, chainId, p.rewards, p.claims, t)) judged.set(`claim:${uid}`, f);
  const contractFound = await mapLimit(p.contracts, READ_CONCURRENCY, async (c) => {
    const facts = await readContract(ctx.sender.client, c.address as Address, accounts.active);
    return {
      key: `${c.type}:${c.uid}`,
      found: contractDivergences({ ...c, ...facts, ourAccounts: accounts.ours, expectedForwarder: accounts.forwarder, rotating: accounts.rotating }),
      read: readInFull(facts),
    };
  });
  for (const c of contractFound) if (c.read) judged.set(c.key, c.found);
  await recheckFresh(ctx, chainId, p, accounts.operator, s.divergent, judged);

  const divergent = { ...s.divergent };
  const fresh: Divergence[] = [];
  for (const [subject, found] of judged) {
    const before = new Set(divergent[subject] ?? []);
    if (found.length === 0) delete divergent[subject];
    else divergent[subject] = found.map((f) => divergenceKey(report(f)));
    for (const f of found) if (!before.has(divergenceKey(report(f)))) fresh.push(report(f));
  }
  const subjects = Object.keys(divergent);
  const count = subjects.reduce((n, k) => n + divergent[k].length, 0);
  const kept = subjects.length > MAX_KEPT ? Object.fromEntries(subjects.slice(0, MAX_KEPT).map((k) => [k, divergent[k]])) : divergent;
  const next: WatchState = { pass_at: now, seq: p.seq, ...p.next, divergent: kept, count };
  // Another process took a later pass meanwhile (this one outlived its interval): its state stands.
  if (!(await swap(ctx, chainId, JSON.stringify(claimed), next))) return null;
  for (const d of fresh.slice(0, MAX_ALERTS)) raise(DIVERGENCE_ALERT, { chain_id: chainId, ...d });
  if (fresh.length > MAX_ALERTS)
    raise(DIVERGENCE_ALERT, { chain_id: chainId, more: fresh.length - MAX_ALERTS, hint: `mintworks chain verify --chain ${chainId}` });
  return fresh;
}

/**
 * Assets and claims found divergent for the first time are read and checked once more before anything is
 * reported: a record read in the instant between two of its rows' commits (the burn done, the asset not
 * yet marked burned) looks divergent and is not. A real divergence is found again; a passing one is not.
 */
async function recheckFresh(
  ctx: ChainCtx,
  chainId: number,
  p: Awaited<ReturnType<typeof pick>>,
  operator: Address,
  known: WatchState['divergent'],
  judged: Map<string, Found[]>,
): Promise<void> {
  const isFresh = (subject: string) => {
    const before = new Set(known[subject] ?? []);
    return (judged.get(subject) ?? []).some((f) => !before.has(divergenceKey(report(f))));
  };
  const uidsOf = (type: string) => [...judged.keys()].filter((k) => k.startsWith(`${type}:`) && isFresh(k)).map((k) => k.slice(type.length + 1));
  const assetUids = uidsOf('asset');
  const claimUids = uidsOf('claim');
  const unused = tally(); // a second look is not a second record checked
  if (assetUids.length) {
    const rows = await assetRows(ctx).where('uid', 'in', assetUids).execute();
    for (const uid of assetUids) judged.delete(`asset:${uid}`);
    for (const [uid, f] of await checkAssets(ctx, ctx.sender.client, chainId, p.collections, operator, rows, unused)) judged.set(`asset:${uid}`, f);
  }
  if (claimUids.length) {
    const rows = await ctx.db.selectFrom('claims').select(['uid', 'app_uid', 'reward_uid', 'status', 'amount']).where('uid', 'in', claimUids).execute();
    for (const uid of claimUids) judged.delete(`claim:${uid}`);
    for (const [uid, f] of await checkClaims(ctx, ctx.sender.client, chainId, p.rewards, rows, unused)) judged.set(`claim:${uid}`, f);
  }
}

/** Runs the passes of a chain every `intervalMs` until stopped. */
export class DivergenceWatch {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly ctx: ChainCtx,
    private readonly intervalMs: number,
    private readonly batch: number,
  ) {}

  start(): void {
    // The first pass after a random part of the interval: processes started together do not collide.
    this.schedule(this.intervalMs * (0.5 + Math.random() / 2));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = watchPass(this.ctx, { intervalMs: this.intervalMs, batch: this.batch })
        .catch((err: Error) => this.ctx.log.warn({ chain: this.ctx.chain.id, err: err.message }, 'background chain verification failed, will retry'))
        .finally(() => {
          this.running = null;
          this.schedule(this.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
