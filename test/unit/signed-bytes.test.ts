// The tracker's signed bytes (src/chain/signed-bytes.ts) on a real SQLite database: read once per hash
// and kept while the hash is followed; a row first seen is read again whole, so a replacement made
// between the tracker's two reads comes with its own hash and bytes; a row handled meanwhile is left out.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Store } from '../../src/store/db.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { SignedBytes, TRACKED_COLUMNS, type TrackedRow } from '../../src/chain/signed-bytes.js';
import { recordedTx } from '../helpers/chain-txs.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const CHAIN = 31337;

describe('the tracker signed bytes', () => {
  let store: Store;
  let nonce = 0;
  before(async () => {
    store = openStore({ dataDir: await migratedSqliteDir(CHAIN) });
    await migrateToLatest(store, CHAIN);
  });
  after(() => store.close());

  async function recorded(raw: string): Promise<number> {
    const n = ++nonce;
    return recordedTx(store.db, { chain_id: CHAIN, nonce: n, ref: `r${n}`, raw, hash: `0xh${n}` });
  }
  const tracked = (ids: number[]): Promise<TrackedRow[]> =>
    store.db.selectFrom('chain_txs').select(TRACKED_COLUMNS).where('id', 'in', ids).orderBy('nonce').execute();
  const setRow = (id: number, values: { raw?: string; hash?: string; handled?: number }) =>
    store.db.updateTable('chain_txs').set(values).where('id', '=', id).execute();

  it('reads the bytes of a hash once and keeps them while it is followed', async () => {
    const signed = new SignedBytes(store.db);
    const a = await recorded('0xaa');
    const b = await recorded('0xbb');
    const first = await signed.complete(await tracked([a, b]));
    assert.deepEqual(
      first.map((r) => [r.id, r.raw]),
      [
        [a, '0xaa'],
        [b, '0xbb'],
      ],
    );
    // The bytes changed under the same hash (never in use): a known hash is not read again.
    await setRow(a, { raw: '0xa2' });
    const second = await signed.complete(await tracked([a, b]));
    assert.equal(second[0].raw, '0xaa');
    // A pass without it lets it go: followed again, it is read again.
    await signed.complete(await tracked([b]));
    const third = await signed.complete(await tracked([a, b]));
    assert.equal(third[0].raw, '0xa2');
  });

  it('takes a row first seen as it is now: replaced meanwhile, with its new hash and bytes; handled meanwhile, left out', async () => {
    const signed = new SignedBytes(store.db);
    const replaced = await recorded('0x01');
    const handled = await recorded('0x02');
    const kept = await recorded('0x03');
    const light = await tracked([replaced, handled, kept]);
    await setRow(replaced, { raw: '0x11', hash: '0xnew' });
    await setRow(handled, { handled: 1 });
    const rows = await signed.complete(light);
    assert.deepEqual(
      rows.map((r) => [r.id, r.hash, r.raw]),
      [
        [replaced, '0xnew', '0x11'],
        [kept, `0xh${nonce}`, '0x03'],
      ],
    );
  });
});
