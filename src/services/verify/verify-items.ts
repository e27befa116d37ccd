// The verifier's walk over ERC-1155 items: each item's minted supply against mintedSupply(id), and each
// user's balance against balanceOf(wallet, id). The chain is authoritative for both (deposits from
// outside count), so a divergence is fixable: --fix writes what the chain shows. What is in flight (a
// pending mint of the item, a pending mint, transfer or burn of the user) is counted, not judged.
import type { Address } from 'viem';
import type { Ctx } from '../context.js';
import { amountFromDb } from '../../domain/items.js';
import type { Found } from './divergences.js';
import { mapLimit, readItemBalance, readItemSupply, type ChainClient } from './chain-reader.js';
import { PAGE, READ_CONCURRENCY } from './verify-assets.js';
import type { Tally } from './tally.js';

export interface ItemCollectionRef {
  uid: string;
  app_uid: string;
  contract_address: string;
}

/** Items and balances of the given ERC-1155 collections (their contracts have code). */
export async function checkItemRecords(
  ctx: Ctx,
  client: ChainClient,
  chainId: number,
  collections: ReadonlyMap<string, ItemCollectionRef>,
  t: Tally,
): Promise<Found[]> {
  const found: Found[] = [];
  for (const c of collections.values()) {
    let after = '';
    for (;;) {
      const items = await ctx.db
        .selectFrom('items')
        .select(['uid', 'token_id', 'minted_supply'])
        .where('collection_uid', '=', c.uid)
        .where('uid', '>', after)
        .orderBy('uid')
        .limit(PAGE)
        .execute();
      if (items.length === 0) break;
      found.push(...(await checkItems(ctx, client, chainId, c, items, t)));
      if (items.length < PAGE) break;
      after = items[items.length - 1].uid;
    }
  }
  return found;
}

type ItemRowOfVerify = { uid: string; token_id: number; minted_supply: string };

async function checkItems(ctx: Ctx, client: ChainClient, chainId: number, c: ItemCollectionRef, items: ItemRowOfVerify[], t: Tally): Promise<Found[]> {
  const uids = items.map((i) => i.uid);
  const [mints, moves, balances] = await Promise.all([
    ctx.db.selectFrom('item_mints').select(['item_uid', 'to_user_uid as user']).where('item_uid', 'in', uids).where('status', '=', 'pending').execute(),
    ctx.db
      .selectFrom('item_transfers')
      .select(['item_uid', 'from_user_uid as user'])
      .where('item_uid', 'in', uids)
      .where('status', '=', 'pending')
      .unionAll(ctx.db.selectFrom('item_burns').select(['item_uid', 'from_user_uid as user']).where('item_uid', 'in', uids).where('status', '=', 'pending'))
      .execute(),
    ctx.db
      .selectFrom('item_balances')
      .innerJoin('wallets', (j) => j.onRef('wallets.user_uid', '=', 'item_balances.user_uid').on('wallets.chain_id', '=', chainId))
      .select(['item_balances.item_uid', 'item_balances.user_uid', 'item_balances.amount', 'wallets.address'])
      .where('item_balances.item_uid', 'in', uids)
      .execute(),
  ]);
  const minting = new Set(mints.map((m) => m.item_uid));
  const busy = new Set([...mints, ...moves].map((m) => `${m.item_uid}:${m.user}`));
  const tokenOf = new Map(items.map((i) => [i.uid, BigInt(i.token_id)]));
  return [...(await checkSupplies(client, c, items, minting, t)), ...(await checkBalances(client, c, balances, busy, tokenOf, t))];
}

/** Each item's minted supply against mintedSupply(id); an item with a pending mint is in flight. */
async function checkSupplies(client: ChainClient, c: ItemCollectionRef, items: ItemRowOfVerify[], minting: Set<string>, t: Tally): Promise<Found[]> {
  const contract = c.contract_address as Address;
  const supplies = await mapLimit(items, READ_CONCURRENCY, async (i) =>
    minting.has(i.uid) ? undefined : await readItemSupply(client, contract, BigInt(i.token_id)),
  );
  const found: Found[] = [];
  items.forEach((i, k) => {
    const onChain = supplies[k];
    if (onChain === undefined) return void t.inFlight('items');
    if (onChain === null) return void t.unverified('items');
    t.checked('items');
    const recorded = amountFromDb(i.minted_supply);
    if (recorded !== onChain)
      found.push({
        app_uid: c.app_uid,
        record: { type: 'item', uid: i.uid },
        kind: 'item_supply',
        field: 'minted_supply',
        recorded: recorded.toString(),
        on_chain: onChain.toString(),
        fixable: true,
        plan: { do: 'item_supply', item_uid: i.uid, from: i.minted_supply, to: onChain.toString() },
      });
  });
  return found;
}

type BalanceRowOfVerify = { item_uid: string; user_uid: string; amount: string; address: string };

/** Each user's balance against balanceOf(wallet, id); one with a pending mint, transfer or burn is in flight. */
async function checkBalances(
  client: ChainClient,
  c: ItemCollectionRef,
  balances: BalanceRowOfVerify[],
  busy: Set<string>,
  tokenOf: Map<string, bigint>,
  t: Tally,
): Promise<Found[]> {
  const contract = c.contract_address as Address;
  const held = await mapLimit(balances, READ_CONCURRENCY, async (b) =>
    busy.has(`${b.item_uid}:${b.user_uid}`) ? undefined : await readItemBalance(client, contract, b.address as Address, tokenOf.get(b.item_uid)!),
  );
  const found: Found[] = [];
  balances.forEach((b, k) => {
    const onChain = held[k];
    if (onChain === undefined) return void t.inFlight('item_balances');
    if (onChain === null) return void t.unverified('item_balances');
    t.checked('item_balances');
    const recorded = amountFromDb(b.amount);
    if (recorded !== onChain)
      found.push({
        app_uid: c.app_uid,
        record: { type: 'item_balance', uid: `${b.item_uid}:${b.user_uid}` },
        kind: 'item_balance',
        field: 'amount',
        recorded: recorded.toString(),
        on_chain: onChain.toString(),
        fixable: true,
        plan: { do: 'item_balance', item_uid: b.item_uid, user_uid: b.user_uid, from: b.amount, to: onChain.toString() },
      });
  });
  return found;
}
