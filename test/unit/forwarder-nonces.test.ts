// A user's forwarder nonces (src/chain/forward.ts allocateForwarderNonce), on real SQLite and PostgreSQL
// databases: consecutive from the chain's count, and on PostgreSQL two transactions that both count the
// user's first nonce at once (two batches of one user's actions) get two consecutive nonces, neither
// failing on the table's key.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allocateForwarderNonce } from '../../src/chain/forward.js';
import { migratedStoreFor } from '../helpers/migrated-store.js';

const CHAIN = 31337;
const USER = '0x00000000000000000000000000000000000000aa';

for (const db of ['sqlite', 'postgres'] as const) {
  describe(`forwarder nonces (${db})`, () => {
    const store = migratedStoreFor(db);

    it("counts on from the chain's count, one nonce per action", async () => {
      const user = '0x00000000000000000000000000000000000000bb';
      const got: bigint[] = [];
      for (let i = 0; i < 3; i++) got.push(await store.db.transaction().execute((tx) => allocateForwarderNonce(tx, CHAIN, user, async () => 7n)));
      assert.deepEqual(got, [7n, 8n, 9n]);
    });

    if (db === 'postgres') {
      it("two transactions counting a user's first nonce at once get consecutive nonces", async () => {
        // Both read no row, then both ask the chain: the second insert meets the first's row.
        let bothAsked!: () => void;
        const asked = new Promise<void>((r) => (bothAsked = r));
        let asking = 0;
        const chainCount = async () => {
          if (++asking === 2) bothAsked();
          await asked;
          return 3n;
        };
        const allocate = () => store.db.transaction().execute((tx) => allocateForwarderNonce(tx, CHAIN, USER, chainCount));
        const got = await Promise.all([allocate(), allocate()]);
        assert.deepEqual(
          got.sort((a, b) => Number(a - b)),
          [3n, 4n],
        );
        const row = await store.db.selectFrom('forwarder_nonces').select('next_nonce').where('address', '=', USER).executeTakeFirstOrThrow();
        assert.equal(Number(row.next_nonce), 5);
      });
    }
  });
}
