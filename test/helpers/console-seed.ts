// Seeds an App with many users and assets straight into the store (no chain work): for the console's
// list and overview queries at scale. The collection is marked deployed at a made-up address, and no
// job is queued, so the workers leave the rows alone.
import { randomBytes } from 'node:crypto';
import type { Ctx } from '../../src/services/context.js';
import { newUid } from '../../src/util/ids.js';
import { isoFromMicros } from '../../src/util/time.js';
import { defaultChain } from '../../src/config/config.js';

export interface Seeded {
  collectionUid: string;
  userUids: string[];
  /** uid of the newest asset (first row of the list). */
  newestAssetUid: string;
}

/** `count` assets over `users` users, created over the last `spanHours`; ~2 % pending, 0.5 % failed, 0.5 % burned. */
export async function seedAssets(ctx: Ctx, appUid: string, count: number, opts: { users?: number; spanHours?: number } = {}): Promise<Seeded> {
  const users = opts.users ?? 100;
  const spanUs = BigInt((opts.spanHours ?? 48) * 3600) * 1_000_000n;
  const nowUs = BigInt(Date.now()) * 1000n;
  const collectionUid = newUid();
  const contract = `0x${randomBytes(20).toString('hex')}`;
  await ctx.db
    .insertInto('collections')
    .values({
      uid: collectionUid,
      app_uid: appUid,
      name: 'Seeded',
      symbol: 'SEED',
      description: null,
      external_url: null,
      editable: 0,
      status: 'deployed',
      contract_address: contract,
      next_token_id: count + 1,
      created_at: isoFromMicros(nowUs - spanUs - 1000n),
    })
    .execute();
  const userUids: string[] = [];
  const userRows = [];
  for (let i = 0; i < users; i++) {
    const uid = newUid();
    userUids.push(uid);
    userRows.push({
      uid,
      app_uid: appUid,
      email: `seed${i}@example.com`,
      user_external_id: `seed-${i}`,
      wallet_address: `0x${randomBytes(20).toString('hex')}`,
      wallet_created_at: null,
      created_at: isoFromMicros(nowUs - spanUs + BigInt(i)),
    });
  }
  await ctx.db.insertInto('users').values(userRows).execute();
  // Each seeded user has a wallet on the default chain, as a user who received a mint has.
  const walletRows = userRows.map((u) => ({ user_uid: u.uid, chain_id: defaultChain(ctx).id, address: u.wallet_address, created_at: u.created_at }));
  for (let i = 0; i < walletRows.length; i += 500)
    await ctx.db
      .insertInto('wallets')
      .values(walletRows.slice(i, i + 500))
      .execute();
  const wallets = new Map(userRows.map((u) => [u.uid, u.wallet_address]));
  let newest = '';
  const chunk = ctx.dialect === 'sqlite' ? 1000 : 2000;
  for (let from = 0; from < count; from += chunk) {
    const rows = [];
    for (let i = from; i < Math.min(count, from + chunk); i++) {
      const uid = newUid();
      const user = userUids[i % users];
      const r = i % 200;
      const status = r < 4 ? 'pending' : r === 4 ? 'failed' : 'minted';
      const burned = r === 5 ? 1 : 0;
      const created = isoFromMicros(nowUs - spanUs + (spanUs * BigInt(i)) / BigInt(count));
      const metadata = JSON.stringify({ name: `Item ${i}`, description: null, image: `/console/favicon.svg`, attributes: [{ trait_type: 'n', value: i }] });
      rows.push({
        uid,
        app_uid: appUid,
        collection_uid: collectionUid,
        asset_external_id: `seed-${i}`,
        mint_for_user_uid: user,
        name: `Item ${i}`,
        unique_name_key: null,
        token_id: i + 1,
        mint_status: status as 'pending' | 'failed' | 'minted',
        mint_error: status === 'failed' ? 'seeded failure' : null,
        mint_tx_id: null,
        is_burned: burned,
        is_transferring: 0,
        is_editing: 0,
        is_burning: 0,
        owner_user_uid: status === 'minted' ? user : null,
        owner_address: status === 'minted' ? wallets.get(user)! : null,
        mint_for_address: wallets.get(user)!,
        token_uri: status === 'minted' ? `${ctx.installation.publicUrl}/metadata/${collectionUid}/${i + 1}` : null,
        sale_price_in_usd: i % 3 === 0 ? String((i % 50) + 0.99) : null,
        metadata,
        created_at: created,
        updated_at: created,
        pending_edit: null,
      });
      newest = uid;
    }
    await ctx.db.insertInto('assets').values(rows).execute();
  }
  return { collectionUid, userUids, newestAssetUid: newest };
}
