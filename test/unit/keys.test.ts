// The installation's keys: each is the key of its whole BIP-44 path from the seed, whatever way the key
// ring derives it (from a kept parent), checked against viem's derivation from the mnemonic and against
// the well-known first account of the test mnemonic.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mnemonicToAccount } from 'viem/accounts';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { KeyRing } from '../../src/chain/keys.js';
import { SecretBox } from '../../src/util/secretbox.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const MNEMONIC = 'test test test test test test test test test test test junk';

describe('key ring', () => {
  it('derives every key as its whole path from the seed', async () => {
    const store = openStore({ dataDir: await migratedSqliteDir(31337) });
    try {
      await migrateToLatest(store, 31337);
      const keys = await KeyRing.open(store.db, new SecretBox('44'.repeat(32)), { mnemonic: MNEMONIC });
      // m/44'/60'/0'/0/0: the first account every tool derives from this mnemonic.
      assert.equal(keys.user('000000000000').address, '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
      const path = (accountIndex: number, changeIndex: number, addressIndex: number) =>
        mnemonicToAccount(MNEMONIC, { accountIndex, changeIndex, addressIndex });
      for (const uid of ['000000000001', '000000999999', '000001000000', '123456789012', '999999999999']) {
        const n = Number(uid);
        const expected = path(0, Math.floor(n / 1e6), n % 1e6);
        const got = keys.user(uid);
        assert.equal(got.address, expected.address, uid);
        assert.deepEqual(got.getHdKey().privateKey, expected.getHdKey().privateKey, uid);
      }
      // The address alone, as a wallet is created: the same as the account's, for a run of users on
      // two parents, none of them derived as an account before.
      for (let n = 2_999_000; n < 3_001_000; n += 7) {
        const uid = String(n).padStart(12, '0');
        assert.equal(keys.userAddress(uid), path(0, Math.floor(n / 1e6), n % 1e6).address.toLowerCase(), uid);
      }
      assert.equal(keys.userAddress('123456789012'), path(0, 123456, 789012).address.toLowerCase());
      // Asked again (kept): the same.
      assert.equal(keys.userAddress('000002999000'), path(0, 2, 999000).address.toLowerCase());
      assert.equal(keys.userAddress('123456789012'), path(0, 123456, 789012).address.toLowerCase());
      assert.throws(() => keys.userAddress('1e12'), /not a user uid/);
      for (const i of [0, 1, 7]) assert.equal(keys.relayer(i).address, path(1, 0, i).address);
      assert.equal(keys.deployer().address, path(2, 0, 0).address);
      // A key asked again (from the cache) is the same.
      assert.equal(keys.user('123456789012').address, path(0, 123456, 789012).address);
    } finally {
      await store.close();
    }
  });
});
