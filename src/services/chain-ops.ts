// Operator tools for the chains (the CLI's `mintworks chain …`, /admin/v1/chains and the console's chain
// page): what a chain looks like now (head, base fee against the ceiling, providers, relayers with
// their balance, nonces and transactions in flight), the transactions that wait or are stuck, Cancel
// of one of them, and a resync of the relayers' nonces with the chain.
//
// A running service hands its chain runtimes over; the CLI builds a handle of its own over the same
// providers (src/chain/providers.ts), so both read the same things the same way.
import { UNHANDLED } from '../chain/unhandled.js';
import { createPublicClient, defineChain, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import type { ChainSigner } from '../chain/signer.js';
// The operator's views are the console's browser contract too: declared once, there.
import type { ChainOverview, ChainRelayer as RelayerView, ChainTxRow as ChainTxView } from './operator-views.js';

export type { ChainOverview, ChainTxView, RelayerView };
import type { Ctx } from './context.js';
import type { Config } from '../config/config.js';
import type { ChainHealth } from '../chain/runtime.js';
import { rpcUrlsOf, type ChainSpec } from '../chain/chains.js';
import { mergeSnapshots, providerHealth, ProviderSet, type ProviderSnapshot } from '../chain/providers.js';
import { CANCELLED_REASON, signCancellation, UNCANCELLABLE_KINDS } from '../chain/cancel.js';
import { LOW_BALANCE_WEI } from '../domain/chain-funding.js';
import { relayerRows } from '../chain/relayer-set.js';
import { ApiError } from '../util/errors.js';
import { recordAudit, type Actor } from './audit.js';

/** What the tools need of a chain: a running service's runtime fits, and so does `chainHandle` (the CLI). */
export interface ChainHandle {
  spec: ChainSpec;
  client: PublicClient;
  /** The readiness, accounts and providers as /health shows them (a running service only). */
  health?: (restarting?: boolean) => Promise<ChainHealth>;
  providerSnapshot?: () => ProviderSnapshot[];
  lowBalanceWei?: () => Promise<bigint>;
}

/**
 * A handle on a configured chain for a process that does not run it (the CLI). `embeddedRpc`: the
 * embedded chain's URL as the installation recorded it (services/chain-identity.ts), else ANVIL_PORT's.
 */
export function chainHandle(config: Config, spec: ChainSpec, embeddedRpc?: string | null): ChainHandle & { providers: ProviderSet } {
  const urls = spec.embedded ? [embeddedRpc ?? `http://127.0.0.1:${config.anvilPort}`] : rpcUrlsOf(spec);
  const providers = new ProviderSet(spec.id, urls);
  const client = createPublicClient({
    chain: defineChain({
      id: spec.id,
      name: spec.name,
      nativeCurrency: { name: spec.currency, symbol: spec.currency, decimals: 18 },
      rpcUrls: { default: { http: [urls[0]] } },
    }),
    transport: providers.transport({ timeoutMs: spec.rpcTimeoutMs ?? config.rpcTimeoutMs, retryCount: 1 }),
  }) as PublicClient;
  return { spec, client, providers, providerSnapshot: () => providers.snapshot() };
}

/** The chain of an id among the handles, or a 404 naming the configured ones. */
export function requireChain<H extends ChainHandle>(handles: readonly H[], chainId: number): H {
  const h = handles.find((x) => x.spec.id === chainId);
  if (!h) throw ApiError.of('not_found', `Chain ${chainId} not found: this installation serves ${handles.map((x) => x.spec.id).join(', ')}.`);
  return h;
}

const gwei = (wei: bigint | null | undefined): number | null => (wei === null || wei === undefined ? null : Number(wei) / 1e9);

/**
 * The fee ceiling of a chain in gwei, when one is configured (a CHAINS entry's `maxFeeGwei`, or
 * CHAIN_MAX_FEE_GWEI for the others); null when fees have no ceiling.
 */
export function feeCeilingGwei(_ctx: Ctx, spec: ChainSpec): number | null {
  return Number.isFinite(spec.maxFeeGwei) ? spec.maxFeeGwei : null;
}

/**
 * The service's accounts that sign on a chain: its relayers with their states (the database's set; the
 * first RELAYER_COUNT before the chain was first set up), then the deployer.
 */
async function signers(ctx: Ctx, chainId: number): Promise<{ signer: ChainSigner; state: RelayerView['state'] | null }[]> {
  const rows = await relayerRows(ctx.db, chainId);
  const relayers = rows.length
    ? await Promise.all(rows.map(async (r) => ({ signer: await ctx.keys.relayerAt(Number(r.idx)), state: r.state })))
    : Array.from({ length: ctx.config.relayerCount }, (_, i) => ({ signer: ctx.keys.relayer(i), state: 'active' as const }));
  return [...relayers, { signer: ctx.keys.deployer(), state: null }];
}

/** Everything the operator sees of one chain. */
export async function chainOverview(ctx: Ctx, h: ChainHandle): Promise<ChainOverview> {
  const chainId = h.spec.id;
  const [block, health, lowWei] = await Promise.all([
    h.client.getBlock({ blockTag: 'latest' }).catch(() => null),
    h.health ? h.health().catch(() => null) : Promise.resolve(null),
    h.lowBalanceWei ? h.lowBalanceWei().catch(() => LOW_BALANCE_WEI) : Promise.resolve(LOW_BALANCE_WEI),
  ]);
  const known = await ctx.db.selectFrom('relayers').select(['address', 'idx', 'next_nonce']).where('chain_id', '=', chainId).execute();
  const nextNonce = new Map(known.map((r) => [r.address.toLowerCase(), Number(r.next_nonce)]));
  const inFlight = await ctx.db
    .selectFrom('chain_txs')
    .select(['from_address', (eb) => eb.fn.countAll<number>().as('n')])
    .where('chain_id', '=', chainId)
    .where('handled', '=', UNHANDLED)
    .where('status', 'in', ['signed', 'sent'])
    .groupBy('from_address')
    .execute();
  const flying = new Map(inFlight.map((r) => [r.from_address, Number(r.n)]));
  const relayers = await Promise.all(
    (await signers(ctx, chainId)).map(async ({ signer: a, state }): Promise<RelayerView> => {
      const address = a.address.toLowerCase();
      const [balance, nonce, pending] = await Promise.all([
        h.client.getBalance({ address: a.address }).catch(() => null),
        h.client.getTransactionCount({ address: a.address, blockTag: 'latest' }).catch(() => null),
        h.client.getTransactionCount({ address: a.address, blockTag: 'pending' }).catch(() => null),
      ]);
      const role = state === null ? 'deployer' : 'relayer';
      return {
        address,
        role,
        ...(state === null ? {} : { state }),
        balance_wei: balance === null ? null : balance.toString(),
        low: role === 'relayer' && balance !== null && balance < lowWei,
        nonce,
        pending_nonce: pending,
        next_nonce: nextNonce.get(address) ?? null,
        in_flight: flying.get(address) ?? 0,
      };
    }),
  );
  const unconfirmed = [...flying.values()].reduce((a, b) => a + b, 0);
  const stuck = await countStuck(ctx, chainId);
  const snapshots = h.providerSnapshot ? mergeSnapshots(h.providerSnapshot()) : [];
  return {
    chain_id: chainId,
    name: h.spec.name,
    currency: h.spec.currency,
    embedded: h.spec.embedded,
    ready: health ? health.ready : null,
    status: health?.status ?? (block ? 'answering' : 'chain unreachable'),
    head: block ? Number(block.number) : null,
    base_fee_gwei: gwei(block?.baseFeePerGas),
    max_fee_gwei: feeCeilingGwei(ctx, h.spec),
    low_balance_wei: (health ? BigInt(health.low_balance_wei) : lowWei).toString(),
    providers: health?.providers ?? snapshots.map(providerHealth),
    relayers,
    unconfirmed_transactions: unconfirmed,
    stuck_transactions: stuck,
  };
}

/** Unconfirmed longer than CHAIN_STUCK_SECONDS since it was recorded. */
const stuckBefore = (ctx: Ctx) => Date.now() - ctx.config.stuckSeconds * 1000;

async function countStuck(ctx: Ctx, chainId: number): Promise<number> {
  const r = await ctx.db
    .selectFrom('chain_txs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('chain_id', '=', chainId)
    .where('handled', '=', UNHANDLED)
    .where('status', 'in', ['signed', 'sent'])
    .where('created_at', '<', stuckBefore(ctx))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Transactions not confirmed yet (oldest first): all, or only the stuck ones; on one chain or every one. */
export async function listChainTxs(ctx: Ctx, opts: { chainId?: number; stuck?: boolean; limit?: number }): Promise<ChainTxView[]> {
  let q = ctx.db
    .selectFrom('chain_txs')
    .select(['id', 'chain_id', 'kind', 'ref', 'from_address', 'nonce', 'hash', 'raw', 'status', 'bumps', 'error', 'awaiting', 'created_at'])
    .where('handled', '=', UNHANDLED)
    .where('status', 'in', ['signed', 'sent']);
  if (opts.chainId !== undefined) q = q.where('chain_id', '=', opts.chainId);
  if (opts.stuck) q = q.where('created_at', '<', stuckBefore(ctx));
  const rows = await q
    .orderBy('created_at')
    .orderBy('id')
    .limit(opts.limit ?? 100)
    .execute();
  const before = stuckBefore(ctx);
  return rows.map((r) => {
    let fees: { maxFeePerGas?: bigint; maxPriorityFeePerGas?: bigint } = {};
    try {
      fees = parseTransaction(r.raw as Hex);
    } catch {
      // pruned or unreadable bytes: shown without fees
    }
    return {
      id: r.id,
      chain_id: r.chain_id,
      kind: r.kind,
      ref: r.ref,
      from: r.from_address,
      nonce: r.nonce,
      hash: r.hash,
      status: r.status,
      stuck: r.created_at < before,
      replacements: r.bumps,
      max_fee_gwei: gwei(fees.maxFeePerGas),
      tip_gwei: gwei(fees.maxPriorityFeePerGas),
      age_s: Math.round((Date.now() - r.created_at) / 1000),
      created_at: new Date(r.created_at).toISOString(),
      cancellable: !UNCANCELLABLE_KINDS.has(r.kind),
      cancelling: r.error === CANCELLED_REASON,
      awaiting: r.awaiting,
    };
  });
}

/** The chain a recorded transaction is on (null: no such transaction). */
export async function chainOfTx(ctx: Ctx, id: number): Promise<number | null> {
  return (await ctx.db.selectFrom('chain_txs').select('chain_id').where('id', '=', id).executeTakeFirst())?.chain_id ?? null;
}

export interface CancelResult {
  tx: number;
  chain_id: number;
  kind: string;
  from: string;
  nonce: number;
  /** The hash of the 0-value self-transfer now recorded in the transaction's place. */
  cancel_hash: string;
  /** The hash it replaced (still watched: if that one is mined first, the cancel came too late). */
  replaced_hash: string;
  max_fee_gwei: number;
  /** `sent`, or why the node did not take it now (the service's tracker sends it again). */
  broadcast: string;
  outcome: string;
}

/**
 * Cancels a transaction that waits or is stuck: a 0-value transfer to itself at the same nonce, fees
 * raised above the original's (and today's), takes its place in the record and on the node. Whichever
 * is mined decides: the original (the job is done after all) or the cancellation (the job fails with
 * "cancelled by the operator", never tried again). Deployments cannot be cancelled.
 * Long: every refusal is checked before the replacement is signed, in the order an operator reads them.
 */
export async function cancelChainTx(ctx: Ctx, handles: readonly ChainHandle[], id: number, actor: Actor): Promise<CancelResult> {
  const row = await ctx.db.selectFrom('chain_txs').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw ApiError.notFound('Transaction');
  const h = requireChain(handles, row.chain_id);
  if (row.handled !== 0 || (row.status !== 'signed' && row.status !== 'sent'))
    throw ApiError.of(
      'not_pending',
      `Transaction ${id} is ${row.status === 'mined' || row.status === 'reverted' ? row.status : 'settled'}: only a transaction that waits or is stuck can be cancelled.`,
    );
  if (UNCANCELLABLE_KINDS.has(row.kind))
    throw ApiError.of('not_cancellable', `Transaction ${id} is a deployment (${row.kind}): its contract's address depends on it, so it cannot be cancelled.`);
  const signer = (await signers(ctx, row.chain_id)).map((a) => a.signer).find((a) => a.address.toLowerCase() === row.from_address);
  if (!signer) throw ApiError.of('not_cancellable', `Transaction ${id} was signed by ${row.from_address}, not an account of this installation.`);
  // Mined meanwhile under one of its hashes: nothing to cancel (the tracker applies it).
  for (const hash of [row.hash, ...(JSON.parse(row.prior_hashes) as string[])]) {
    const receipt = await h.client.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
    if (receipt) throw ApiError.of('not_pending', `Transaction ${id} is already mined (block ${receipt.blockNumber}): too late to cancel.`);
  }
  const block = await h.client.getBlock({ blockTag: 'latest' });
  const tip = await h.client.estimateMaxPriorityFeePerGas().catch(() => 1_000_000_000n);
  const base = block.baseFeePerGas ?? (await h.client.getGasPrice());
  const cancel = await signCancellation(signer, row, { maxFeePerGas: base * 2n + tip, maxPriorityFeePerGas: tip });
  // The replacement and its audit entry commit together: a cancel (which fails a user's mint) never goes unrecorded.
  await ctx.db.transaction().execute(async (tx) => {
    const replaced = await tx
      .updateTable('chain_txs')
      // Marked: mined as the self-transfer, it ends as cancelled (src/chain/cancel.ts).
      .set({
        raw: cancel.raw,
        hash: cancel.hash,
        prior_hashes: JSON.stringify([...(JSON.parse(row.prior_hashes) as string[]), row.hash]),
        bumps: row.bumps + 1,
        error: CANCELLED_REASON,
        updated_at: Date.now(),
      })
      .where('id', '=', row.id)
      .where('hash', '=', row.hash) // replaced by the sender meanwhile: the operator tries again on what is there now
      .where('handled', '=', 0)
      .executeTakeFirst();
    if (Number(replaced.numUpdatedRows) === 0) throw ApiError.of('changed', `Transaction ${id} changed meanwhile (replaced or mined): look at it again.`);
    await recordAudit(tx, actor, {
      action: 'chain.tx_cancelled',
      chain_id: row.chain_id,
      details: { tx: row.id, kind: row.kind, from: row.from_address, nonce: row.nonce, replaced_hash: row.hash, cancel_hash: cancel.hash },
    });
  });
  let broadcast = 'sent';
  try {
    await h.client.request({ method: 'eth_sendRawTransaction', params: [cancel.raw] });
  } catch (err) {
    const e = err as { details?: string; shortMessage?: string; message?: string };
    broadcast = (e.details || e.shortMessage || e.message || String(err)).split('\n')[0];
  }
  ctx.log.warn(
    { tx: row.id, kind: row.kind, nonce: row.nonce, account: row.from_address, cancelHash: cancel.hash, broadcast },
    'transaction cancelled by the operator: a 0-value self-transfer replaces it',
  );
  return {
    tx: row.id,
    chain_id: row.chain_id,
    kind: row.kind,
    from: row.from_address,
    nonce: row.nonce,
    cancel_hash: cancel.hash,
    replaced_hash: row.hash,
    max_fee_gwei: gwei(cancel.fees.maxFeePerGas)!,
    broadcast,
    outcome: `once the cancellation is mined, the ${row.kind} fails as "${CANCELLED_REASON}"; if the original is mined first, it counts as done`,
  };
}

export interface ResyncResult {
  chain_id: number;
  accounts: { address: string; nonce: number; pending_nonce: number; next_nonce_before: number; next_nonce: number; resent: number }[];
}

/**
 * Brings the recorded nonces in line with the chain: an account the chain has seen further than
 * Mintworks (used elsewhere) gets its next nonce raised to the chain's (never lowered: a recorded
 * nonce is never signed twice), and every recorded transaction at or above the account's confirmed
 * nonce that no node knows any more (dropped from the pool) is sent again, byte for byte, in nonce order.
 */
export async function resyncChain(ctx: Ctx, h: ChainHandle, actor: Actor): Promise<ResyncResult> {
  const chainId = h.spec.id;
  const accounts = await ctx.db.selectFrom('relayers').select(['address', 'next_nonce']).where('chain_id', '=', chainId).orderBy('idx').execute();
  const out: ResyncResult['accounts'] = [];
  for (const a of accounts) {
    const address = a.address as Address;
    const [nonce, pending] = await Promise.all([
      h.client.getTransactionCount({ address, blockTag: 'latest' }),
      h.client.getTransactionCount({ address, blockTag: 'pending' }),
    ]);
    const before = Number(a.next_nonce);
    if (pending > before)
      await ctx.db
        .updateTable('relayers')
        .set({ next_nonce: pending, updated_at: Date.now() })
        .where('chain_id', '=', chainId)
        .where('address', '=', a.address)
        .where('next_nonce', '<', pending)
        .execute();
    const open = await ctx.db
      .selectFrom('chain_txs')
      .select(['id', 'raw', 'hash', 'prior_hashes'])
      .where('chain_id', '=', chainId)
      .where('from_address', '=', a.address)
      .where('handled', '=', UNHANDLED)
      .where('status', 'in', ['signed', 'sent'])
      .where('nonce', '>=', nonce)
      .orderBy('nonce')
      .execute();
    let resent = 0;
    for (const r of open) {
      const hashes = [r.hash, ...(JSON.parse(r.prior_hashes) as string[])];
      const seen = await Promise.all(
        hashes.map((x) =>
          h.client.getTransaction({ hash: x as Hex }).then(
            () => true,
            () => false,
          ),
        ),
      );
      if (seen.some(Boolean)) continue;
      await h.client.request({ method: 'eth_sendRawTransaction', params: [r.raw as Hex] }).then(
        () => resent++,
        (err) => ctx.log.warn({ tx: r.id, err: (err as Error).message.split('\n')[0] }, 'resync: the node refused a transaction sent again'),
      );
    }
    out.push({ address: a.address, nonce, pending_nonce: pending, next_nonce_before: before, next_nonce: Math.max(before, pending), resent });
  }
  await recordAudit(ctx.db, actor, { action: 'chain.resynced', chain_id: chainId, details: { accounts: out } });
  return { chain_id: chainId, accounts: out };
}
