// The relayer set of a chain as the sender uses it, on a real SQLite database with a stand-in node:
// new work only from active relayers, even before the process has read a switch (the database refuses a
// retiring relayer and another takes the work); a rotation's own transaction may come from a retiring
// relayer; pending relayers are operators of new contracts but get no work; a rotated chain keeps its set.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { PublicClient } from 'viem';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { KeyRing } from '../../src/chain/keys.js';
import { SecretBox } from '../../src/util/secretbox.js';
import { chainWing } from '../helpers/chain-wing.js';
import type { ChainSender } from '../../src/chain/sender.js';
import { RelayerNotActiveError } from '../../src/chain/nonces.js';
import { MINT_TX, ROTATION_TX } from '../../src/chain/outcomes.js';
import type { ChainSigner } from '../../src/chain/signer.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const CHAIN = 80002;

async function setup() {
  const store = openStore({ dataDir: await migratedSqliteDir(CHAIN) });
  await migrateToLatest(store, CHAIN);
  const keys = await KeyRing.open(store.db, new SecretBox('33'.repeat(32)));
  const node = {
    getBlock: async () => ({ number: 10n, baseFeePerGas: 10n ** 9n, gasUsed: 0n, gasLimit: 30_000_000n }),
    getFeeHistory: async () => ({ reward: [[10n ** 9n]] }),
    getTransactionCount: async () => 0,
  };
  const make = () =>
    chainWing(store.db, node as unknown as PublicClient, keys, CHAIN, pino({ level: 'silent' }), {
      relayerCount: 2,
      embedded: false,
      flush: () => store.flush(),
    });
  const wing = make();
  await wing.init();
  const sender = wing.sender;
  const record = (s: ChainSender, extra: { signer?: ChainSigner; rotation?: boolean } = {}) =>
    store.db.transaction().execute((tx) =>
      s.record(tx, {
        kind: extra.rotation ? ROTATION_TX : MINT_TX,
        ref: 'c',
        payload: extra.rotation
          ? { rotation_id: 1, action: 'revoke', contract: '0x1', account: '0x2' }
          : { collection_uid: 'c', contract: '0x1', items: [], rounds: {} },
        to: '0x0000000000000000000000000000000000000001',
        data: '0x',
        gas: 100_000n,
        ...extra,
      } as Parameters<ChainSender['record']>[1]),
    );
  return { store, keys, sender, make, record };
}

describe('the relayer set in the sender', () => {
  it('sends new work only from active relayers, even before it reads a switch', async () => {
    const { store, keys, sender, record } = await setup();
    const [r0, r1] = [keys.relayer(0).address.toLowerCase(), keys.relayer(1).address.toLowerCase()];
    assert.deepEqual(
      sender.relayers.map((r) => r.address.toLowerCase()),
      [r0, r1],
    );
    // A rotation's switch, committed by another process: this sender has not read it yet.
    await store.db.updateTable('relayers').set({ state: 'retiring' }).where('address', '=', r1).execute();
    const froms = [];
    for (let i = 0; i < 4; i++) froms.push((await record(sender)).from_address);
    assert.deepEqual(froms, [r0, r0, r0, r0]);
    assert.deepEqual(
      sender.relayers.map((r) => r.address.toLowerCase()),
      [r0],
    );
    // Work pinned to the retiring relayer (a user's relayed requests) is refused; a rotation's own is not.
    await assert.rejects(record(sender, { signer: keys.relayer(1) }), RelayerNotActiveError);
    assert.equal((await record(sender, { signer: keys.relayer(1), rotation: true })).from_address, r1);
    // Its nonces stayed in line: the refused one took none.
    const nonces = await store.db.selectFrom('chain_txs').select('nonce').where('from_address', '=', r1).execute();
    assert.deepEqual(
      nonces.map((n) => n.nonce),
      [0],
    );
    await store.close();
  });

  it('names pending relayers as operators without giving them work; a rotated chain keeps its set', async () => {
    const { store, keys, sender, make } = await setup();
    const r2 = (await keys.relayerAt(2)).address.toLowerCase();
    await store.db.insertInto('relayers').values({ address: r2, chain_id: CHAIN, idx: 2, next_nonce: 0, updated_at: Date.now(), state: 'pending' }).execute();
    await sender.relayerSet.load();
    assert.equal(sender.relayers.length, 2);
    assert.deepEqual(
      sender.operators().map((r) => r.address.toLowerCase()),
      [keys.relayer(0).address.toLowerCase(), keys.relayer(1).address.toLowerCase(), r2],
    );
    // Once the chain was rotated, a start does not bring the first RELAYER_COUNT back.
    await store.db.updateTable('relayers').set({ state: 'retired' }).where('idx', '<', 2).where('idx', '>=', 0).execute();
    await store.db.updateTable('relayers').set({ state: 'active' }).where('address', '=', r2).execute();
    await store.db
      .insertInto('relayer_rotations')
      .values({ chain_id: CHAIN, phase: 'done', new_relayers: '[]', old_relayers: '[]', actor: 'cli', actor_detail: null, created_at: 1, finished_at: 2 })
      .execute();
    const restarted = make();
    await restarted.init();
    assert.deepEqual(
      restarted.sender.relayers.map((r) => r.address.toLowerCase()),
      [r2],
    );
    await store.close();
  });
});
