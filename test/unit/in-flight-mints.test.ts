// Migration 030 on a database the code before left: assets recorded in a mint transaction carried the
// link in `assets.mint_tx_id`; after it, the ones whose transaction's outcome still waits are in
// `in_flight_mints` (what the mint job and the console read now), and a step back puts the link of the
// ones recorded since then on the asset again.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Db } from '../../src/store/db.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore } from '../../src/store/open.js';
import { inFlightMints } from '../../src/store/migrations/030_in_flight_mints.js';
import { freshPostgres, tempDir } from '../helpers/env.js';
import { recordedTx } from '../helpers/chain-txs.js';

const MIGRATION = '030_in_flight_mints';

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`in-flight mints migration (${kind})`, () => {
    it('moves the links of assets whose mint waits, and only those; down puts the newer ones back on the asset', async () => {
      const pg = kind === 'postgres' ? await freshPostgres() : null;
      const store = openStore({ databaseUrl: pg?.url, dataDir: tempDir() });
      try {
        await migrateToLatest(store);
        // The database as the code before left it.
        await inFlightMints(store.dialect).down(store.db);
        await sql`delete from kysely_migration where name = ${MIGRATION}`.execute(store.db);
        const db = store.db;
        await seedOwners(db);
        const waiting = Number(await recordedTx(db, { nonce: 1, hash: '0x01' }));
        const applied = Number(await recordedTx(db, { nonce: 2, hash: '0x02', status: 'mined', handled: 1 }));
        await asset(db, 'a-waiting', 1, 'pending', waiting);
        await asset(db, 'a-minted', 2, 'minted', applied);
        await asset(db, 'a-queued', 3, 'pending', null);

        assert.deepEqual(await migrateToLatest(store), [MIGRATION]);
        assert.deepEqual(await inFlight(db), [{ asset_uid: 'a-waiting', tx_id: waiting }]);

        // Recorded by the code after: the link is a row of its own, the asset untouched.
        const later = Number(await recordedTx(db, { nonce: 3, hash: '0x03' }));
        await db.insertInto('in_flight_mints').values({ collection_uid: 'col', token_id: 3, asset_uid: 'a-queued', tx_id: later }).execute();
        await inFlightMints(store.dialect).down(store.db);
        const links = await db.selectFrom('assets').select(['uid', 'mint_tx_id']).orderBy('uid').execute();
        assert.deepEqual(
          links.map((l) => [l.uid, l.mint_tx_id === null ? null : Number(l.mint_tx_id)]),
          [
            ['a-minted', applied],
            ['a-queued', later],
            ['a-waiting', waiting],
          ],
        );
      } finally {
        await store.close();
        await pg?.drop();
      }
    });
  });
}

async function inFlight(db: Db) {
  const rows = await db.selectFrom('in_flight_mints').selectAll().orderBy('asset_uid').execute();
  return rows.map((r) => ({ asset_uid: r.asset_uid, tx_id: Number(r.tx_id) }));
}

async function seedOwners(db: Db): Promise<void> {
  const t = new Date().toISOString();
  await db.insertInto('apps').values({ uid: 'app', name: 'App', environment: 'development', created_at: t }).execute();
  await db
    .insertInto('collections')
    .values({
      uid: 'col',
      app_uid: 'app',
      name: 'C',
      symbol: null,
      description: null,
      external_url: null,
      editable: 0,
      status: 'deployed',
      contract_address: '0x0000000000000000000000000000000000000001',
      next_token_id: 4,
      created_at: t,
      royalty_receiver: null,
      royalty_bps: null,
      image_url: null,
      contract_uri: null,
    })
    .execute();
  await db
    .insertInto('users')
    .values({ uid: 'user', app_uid: 'app', email: null, user_external_id: null, wallet_address: null, wallet_created_at: null, created_at: t })
    .execute();
}

async function asset(db: Db, uid: string, tokenId: number, status: 'pending' | 'minted', txId: number | null): Promise<void> {
  const t = new Date().toISOString();
  await db
    .insertInto('assets')
    .values({
      uid,
      app_uid: 'app',
      collection_uid: 'col',
      asset_external_id: uid,
      mint_for_user_uid: 'user',
      name: uid,
      unique_name_key: null,
      token_id: tokenId,
      mint_status: status,
      mint_error: null,
      mint_tx_id: txId,
      is_burned: 0,
      is_transferring: 0,
      is_editing: 0,
      is_burning: 0,
      pending_edit: null,
      owner_user_uid: status === 'minted' ? 'user' : null,
      owner_address: null,
      mint_for_address: null,
      token_uri: null,
      sale_price_in_usd: null,
      metadata: '{}',
      created_at: t,
      updated_at: t,
    })
    .execute();
}
