// A user's assets a page at a time (services/assets/reads.ts listAssetsOfUser) on a real SQLite database:
// what they own and what is on its way to them (once, when it is both), burned ones left out, every page
// full but the last.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { assetJsonByUid, getAssetJson, listAssetsOfUser, mergeNewestFirst } from '../../src/services/assets/reads.js';
import { jsonPageAnswer } from '../../src/http/kit/paging.js';
import { AssetReads } from '../../src/services/assets/cache.js';
import type { Ctx } from '../../src/services/context.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

describe("a user's assets, paged", () => {
  let store: Store;
  let ctx: Ctx;
  const expected: string[] = []; // newest first: by created_at, then by uid
  // A holder with nothing on its way (the list then reads the owned assets' uids alone).
  const holderExpected: string[] = [];
  before(async () => {
    const dir = await migratedSqliteDir();
    const migrated = openStore({ dataDir: dir, checkpoints: 'none' });
    await migrateToLatest(migrated);
    await migrated.close();
    // The rows alone (no App, users or chain behind them): written with foreign keys off.
    const raw = new SQLite(`${dir}/mintworks.sqlite`);
    raw.pragma('foreign_keys = off');
    raw
      .prepare(
        "insert into collections (uid, app_uid, name, symbol, editable, status, created_at, next_token_id) values ('c', 'app', 'C', 'C', 0, 'deployed', 'x', 1)",
      )
      .run();
    const add = raw.prepare(
      `insert into assets (uid, app_uid, collection_uid, asset_external_id, mint_for_user_uid, name, token_id, mint_status, owner_user_uid, is_burned, metadata, created_at, updated_at) values (?, 'app', 'c', ?, ?, 'x', ?, ?, ?, ?, '{}', ?, ?)`,
    );
    raw.transaction(() => {
      for (let i = 0; i < 700; i++) {
        const uid = String(100_000_000_000 + i);
        const t = new Date(1_700_000_000_000 + Math.floor(i / 3) * 1000).toISOString(); // three at a time: ties broken by uid
        const coming = i % 7 === 0; // not minted yet: on its way to the user
        const burned = !coming && i % 5 === 0;
        const someoneElse = i % 11 === 0; // minted for the user, owned by another user now
        // Half of those on their way already name the user as owner (they match both halves of the
        // list's query): listed once.
        const owner = coming ? (i % 2 === 0 ? 'user' : null) : someoneElse ? 'other' : 'user';
        add.run(uid, `e${i}`, 'user', i, coming ? 'pending' : 'minted', owner, burned ? 1 : 0, t, t);
        if (coming || (!burned && !someoneElse)) expected.unshift(uid);
      }
      for (let i = 0; i < 40; i++) {
        const uid = String(100_000_001_000 + i);
        const t = new Date(1_700_000_000_000 + Math.floor(i / 4) * 1000).toISOString();
        const burned = i % 6 === 0;
        add.run(uid, `h${i}`, 'holder', 1000 + i, 'minted', 'holder', burned ? 1 : 0, t, t);
        if (!burned) holderExpected.unshift(uid);
      }
    })();
    raw.close();
    store = openStore({ dataDir: dir, checkpoints: 'none' });
    ctx = { db: store.db, config: { publicUrl: 'http://mintworks.test' } } as unknown as Ctx;
  });
  after(() => store?.close());

  for (const [limit, cached] of [
    [1, false],
    [50, false],
    [333, false],
    [1000, false],
    [50, true],
    [1000, true],
  ] as const) {
    it(`pages of ${limit}${cached ? ' (objects from the cache)' : ''}: each asset once, newest first, every page full but the last`, async () => {
      const cache = cached
        ? new AssetReads<string, Buffer>({
            read: (app, uid) => getAssetJson(ctx, app, uid),
            readMany: (app, uids) => assetJsonByUid(ctx, app, uids),
            caughtUp: () => true,
            max: 500,
          })
        : null;
      for (const [user, want] of [
        ['user', expected],
        ['holder', holderExpected],
      ] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = await listAssetsOfUser(ctx, 'app', user, { limit, cursor }, jsonPageAnswer, cache);
          const items = (JSON.parse(page.json.toString()) as { data: { uid: string }[] }).data;
          seen.push(...items.map((a) => a.uid));
          if (!page.next) break;
          assert.equal(items.length, limit, 'a page before the last is full');
          cursor = page.next;
        }
        assert.deepEqual(seen, want, user);
      }
    });
  }
  for (const limit of [7, 1000] as const)
    it(`a holder with nothing on its way, pages of ${limit}, twice (the second from the pages kept whole)`, async () => {
      const cache = new AssetReads<string, Buffer>({
        read: (app, uid) => getAssetJson(ctx, app, uid),
        readMany: (app, uids) => assetJsonByUid(ctx, app, uids),
        caughtUp: () => true,
        max: 500,
      });
      for (let round = 0; round < 2; round++) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          const page = await listAssetsOfUser(ctx, 'app', 'holder', { limit, cursor }, jsonPageAnswer, cache);
          const items = (JSON.parse(page.json.toString()) as { data: { uid: string }[] }).data;
          seen.push(...items.map((a) => a.uid));
          if (!page.next) break;
          assert.equal(items.length, limit, 'a page before the last is full');
          cursor = page.next;
        }
        assert.deepEqual(seen, holderExpected);
      }
      const pages = Math.ceil(holderExpected.length / limit);
      assert.deepEqual({ hit: cache.counts.pageHit, miss: cache.counts.pageMiss }, { hit: pages, miss: pages });
    });

  it('merges the halves newest first; an asset read in both (minted between the reads) comes once', () => {
    const k = (t: number, uid: string) => ({ created_at: `2026-01-01T00:00:0${t}.000Z`, uid });
    const owned = [k(9, '009'), k(5, '006'), k(5, '005'), k(1, '001')];
    const coming = [k(7, '007'), k(5, '006'), k(2, '002')];
    assert.deepEqual(
      mergeNewestFirst(owned, coming, 10).map((r) => r.uid),
      ['009', '007', '006', '005', '002', '001'],
    );
    assert.deepEqual(
      mergeNewestFirst(owned, coming, 3).map((r) => r.uid),
      ['009', '007', '006'],
    );
    assert.deepEqual(
      mergeNewestFirst(owned, [], 2).map((r) => r.uid),
      ['009', '006'],
    );
  });
});
