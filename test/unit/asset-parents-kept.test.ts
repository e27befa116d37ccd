// Migration 031 on PostgreSQL: an asset's App, collection and user are no longer foreign keys of the
// assets table (a trigger per inserted asset each); their rows can never be deleted nor their uids
// changed instead, so what an asset refers to stays. A step back puts the foreign keys back.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Db } from '../../src/store/db.js';
import { assetParentsKept } from '../../src/store/migrations/031_asset_parents_kept.js';
import { migratedStoreFor } from '../helpers/migrated-store.js';

const foreignKeysOfAssets = async (db: Db) =>
  (
    await sql<{ conname: string }>`select conname from pg_constraint where conrelid = 'assets'::regclass and contype = 'f' order by conname`.execute(db)
  ).rows.map((r) => r.conname);

describe('asset parents kept (postgres)', () => {
  const store = migratedStoreFor('postgres');
  it('drops the foreign keys of assets, refuses deleting or renaming their parents, and steps back', async () => {
    const db = store.db;
    assert.deepEqual(await foreignKeysOfAssets(db), []);
    const t = new Date().toISOString();
    await db.insertInto('apps').values({ uid: 'app', name: 'App', environment: 'development', created_at: t }).execute();
    await db
      .insertInto('users')
      .values({ uid: 'user', app_uid: 'app', email: null, user_external_id: null, wallet_address: null, wallet_created_at: null, created_at: t })
      .execute();

    for (const [table, statement] of [
      ['users', sql`delete from users where uid = 'user'`],
      ['users', sql`update users set uid = 'other' where uid = 'user'`],
      ['apps', sql`delete from apps`],
      ['apps', sql`update apps set uid = 'other'`],
    ] as const) {
      await assert.rejects(statement.execute(db), (err: { code?: string; message: string }) => {
        assert.equal(err.code, '23001'); // restrict_violation
        assert.match(err.message, new RegExp(`^${table} rows are kept for good`));
        return true;
      });
    }
    // Other columns change as before, the uid "changed" to itself too.
    await sql`update users set email = 'a@b.c', uid = uid where uid = 'user'`.execute(db);
    assert.equal((await db.selectFrom('users').select('email').executeTakeFirstOrThrow()).email, 'a@b.c');

    await assetParentsKept('postgres').down(db);
    assert.deepEqual(await foreignKeysOfAssets(db), ['assets_app_uid_fkey', 'assets_collection_uid_fkey', 'assets_mint_for_user_uid_fkey']);
    await sql`delete from users where uid = 'user'`.execute(db); // no asset refers to it: the foreign keys allow it
    await assetParentsKept('postgres').up(db);
    assert.deepEqual(await foreignKeysOfAssets(db), []);
    await assert.rejects(sql`delete from apps`.execute(db), /apps rows are kept for good/);
  });
});
