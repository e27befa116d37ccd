// What the indexer does with ERC-1155 logs (TransferSingle and TransferBatch) of the App collections:
// every user wallet a log touches gets its balance read again from the chain, and an item arriving in a
// user's wallet from outside (not a transaction of the service: a mint, or a relayed transfer, whose
// outcome announces it) is a deposit: recorded once per log and token id, with `item.transferred`.
import { parseAbiItem, type Address, type Log } from 'viem';
import type { ChainCtx } from '../context.js';
import { nowIso } from '../../util/time.js';
import { emitEvent } from '../events.js';
import { readHeld, writeHeld, type Holding } from './balances.js';
import { itemView } from './views.js';
import { itemAmountOut } from '../../domain/items.js';

const itemEvents = [
  parseAbiItem('event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)'),
  parseAbiItem('event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)'),
] as const;

interface ItemCollection {
  uid: string;
  app_uid: string;
  contract_address: string | null;
}

/** One token id moved by a log. */
interface Movement {
  contract: string;
  from: string;
  to: string;
  id: bigint;
  value: bigint;
  txHash: string;
  logIndex: number;
}

function movements(logs: Log<bigint, number, false, undefined, true, typeof itemEvents>[]): Movement[] {
  const out: Movement[] = [];
  for (const l of logs) {
    if (l.removed || !l.transactionHash || l.logIndex === null) continue;
    const base = {
      contract: l.address.toLowerCase(),
      from: l.args.from!.toLowerCase(),
      to: l.args.to!.toLowerCase(),
      txHash: l.transactionHash,
      logIndex: l.logIndex,
    };
    if (l.eventName === 'TransferSingle') out.push({ ...base, id: l.args.id!, value: l.args.value! });
    else l.args.ids!.forEach((id, k) => out.push({ ...base, id, value: l.args.values![k] }));
  }
  return out;
}

/** Applies the ERC-1155 logs of `collections` in blocks [from, to]: balances read at `to`, deposits announced. */
// Long: each kind of item log (mint, transfer, burn) applied in turn to the holdings read once.
export async function applyItemLogs(ctx: ChainCtx, collections: ItemCollection[], from: bigint, to: bigint): Promise<void> {
  const client = ctx.sender.client;
  const logs = await client.getLogs({
    address: collections.map((c) => c.contract_address as Address),
    events: itemEvents,
    fromBlock: from,
    toBlock: to,
    strict: true,
  });
  const moved = movements(logs as never);
  if (moved.length === 0) return;
  const byContract = new Map(collections.map((c) => [c.contract_address!.toLowerCase(), c]));
  const ours = new Set(
    (
      await ctx.db
        .selectFrom('chain_txs')
        .select('hash')
        .where('chain_id', '=', ctx.sender.chainId)
        .where('hash', 'in', [...new Set(moved.map((m) => m.txHash))])
        .execute()
    ).map((r) => r.hash.toLowerCase()),
  );
  // The users and items the movements touch, per collection.
  const holdings = new Map<string, Holding & { contract: string }>();
  const deposits: (Movement & { holding: Holding })[] = [];
  for (const m of moved) {
    const c = byContract.get(m.contract);
    if (!c) continue;
    const item = await ctx.db
      .selectFrom('items')
      .select(['uid', 'token_id'])
      .where('collection_uid', '=', c.uid)
      .where('token_id', '=', Number(m.id))
      .executeTakeFirst();
    if (!item) continue; // a token id the service never created
    for (const address of [m.from, m.to]) {
      if (BigInt(address) === 0n) continue;
      const user = await ctx.db.selectFrom('users').select('uid').where('app_uid', '=', c.app_uid).where('wallet_address', '=', address).executeTakeFirst();
      if (!user) continue;
      const h = { item_uid: item.uid, user_uid: user.uid, address, token_id: Number(item.token_id), contract: m.contract };
      holdings.set(`${item.uid}:${user.uid}`, h);
      if (address === m.to && BigInt(m.from) !== 0n && !ours.has(m.txHash.toLowerCase())) deposits.push({ ...m, holding: h });
    }
  }
  const byContractHoldings = new Map<string, (Holding & { contract: string })[]>();
  for (const h of holdings.values()) byContractHoldings.set(h.contract, [...(byContractHoldings.get(h.contract) ?? []), h]);
  const reads: { h: Holding; held: bigint }[] = [];
  for (const [contract, hs] of byContractHoldings) {
    const held = await readHeld(client, contract, hs, to);
    hs.forEach((h, k) => reads.push({ h, held: held[k] }));
  }
  await ctx.db.transaction().execute(async (tx) => {
    for (const r of reads) await writeHeld(tx, r.h, r.held, to);
    for (const d of deposits) {
      const app = byContract.get(d.contract)!.app_uid;
      const inserted = await tx
        .insertInto('item_deposits')
        .values({
          chain_id: ctx.sender.chainId,
          tx_hash: d.txHash.toLowerCase(),
          log_index: d.logIndex,
          token_id: d.id.toString(),
          item_uid: d.holding.item_uid,
          user_uid: d.holding.user_uid,
          from_address: d.from,
          amount: d.value.toString(),
          created_at: nowIso(),
        })
        .onConflict((oc) => oc.columns(['chain_id', 'tx_hash', 'log_index', 'token_id']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) continue; // announced when the range was first read
      const item = itemView(await tx.selectFrom('items').selectAll().where('uid', '=', d.holding.item_uid).executeTakeFirstOrThrow(), ctx.installation);
      ctx.log.info({ item: d.holding.item_uid, user: d.holding.user_uid }, 'deposit: items arrived in a user wallet');
      await emitEvent(tx, app, 'item.transferred', {
        item,
        deposit: { user_uid: d.holding.user_uid, from_address: d.from, to_address: d.to, amount: itemAmountOut(d.value), tx_hash: d.txHash.toLowerCase() },
      });
    }
  });
}
