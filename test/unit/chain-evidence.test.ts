// What the chain wing takes for evidence, with a stand-in node (scripted per block): a receipt lookup's
// three answers (found, none, unknown), the holder of an account's nonce read off the chain, and the
// reconciler's judgement of a transaction whose nonce is used: replaced only when the holder is
// another transaction, deep enough; its own hash or a missing answer leave it unfinal, saying why.
import { recordedTx } from '../helpers/chain-txs.js';
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { Hex, PublicClient } from 'viem';
import { lookUpReceipt } from '../../src/chain/receipts.js';
import { findNonceHolder } from '../../src/chain/nonce-holder.js';
import { Reconciler } from '../../src/chain/reconciler.js';
import { NodeAnswers } from '../../src/chain/node-answers.js';
import { InFlight } from '../../src/chain/in-flight.js';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import type { Store } from '../../src/store/db.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const ACCOUNT = '0x00000000000000000000000000000000000000aa';
const h = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex;

/** A chain of `blocks`: each block lists the account's transactions in it (nonce -> hash). */
function node(
  blocks: Record<number, [number, Hex][]>,
  opts: { receipts?: Set<string>; failing?: Set<string>; missingBlocks?: Set<number>; onBlock?: () => Promise<void> } = {},
) {
  const head = Math.max(...Object.keys(blocks).map(Number));
  const countAt = (b: number) => Object.entries(blocks).reduce((n, [k, txs]) => (Number(k) <= b ? n + txs.length : n), 0);
  const calls: string[] = [];
  const client = {
    async request({ method, params }: { method: string; params: [Hex] }) {
      calls.push(method);
      if (method !== 'eth_getTransactionReceipt') throw new Error(method);
      if (opts.failing?.has(params[0])) throw new Error('upstream timeout');
      return opts.receipts?.has(params[0]) ? { status: '0x1', transactionHash: params[0], blockNumber: '0x1', logs: [] } : null;
    },
    async getTransactionCount({ blockNumber, blockTag }: { blockNumber?: bigint; blockTag?: string }) {
      calls.push('count');
      return countAt(blockTag ? head : Number(blockNumber));
    },
    async getBlock({ blockNumber }: { blockNumber: bigint }) {
      await opts.onBlock?.();
      const b = Number(blockNumber);
      if (opts.missingBlocks?.has(b)) throw new Error('block not found');
      return { hash: h(10_000 + b), transactions: (blocks[b] ?? []).map(([nonce, hash]) => ({ from: ACCOUNT, nonce, hash })) };
    },
  };
  return { client: client as unknown as PublicClient, calls, head };
}

describe('receipt lookups', () => {
  it('found under any hash, none only when every lookup answered, unknown when one failed', async () => {
    const row = { hash: h(2), prior_hashes: JSON.stringify([h(1)]) };
    assert.equal((await lookUpReceipt(node({ 1: [] }, { receipts: new Set([h(1)]) }).client, row)).kind, 'found');
    assert.equal((await lookUpReceipt(node({ 1: [] }).client, row)).kind, 'none');
    const r = await lookUpReceipt(node({ 1: [] }, { failing: new Set([h(1)]) }).client, row);
    assert.equal(r.kind, 'unknown');
  });
});

describe('the holder of a nonce', () => {
  const chain = { 1: [[0, h(100)]], 2: [], 3: [[1, h(101)]], 4: [], 5: [], 6: [[2, h(102)]], 7: [] } as Record<number, [number, Hex][]>;

  it('is found in the block after which the nonce is used', async () => {
    for (const [nonce, block, hash] of [
      [0, 1, h(100)],
      [1, 3, h(101)],
      [2, 6, h(102)],
    ] as const) {
      const held = await findNonceHolder(node(chain).client, ACCOUNT, nonce, 7);
      assert.deepEqual(held, { kind: 'held', hash, block }, `nonce ${nonce}`);
    }
  });

  it('is unknown when the head does not show the nonce used, or a block is missing', async () => {
    assert.equal((await findNonceHolder(node(chain).client, ACCOUNT, 3, 7)).kind, 'unknown');
    assert.equal((await findNonceHolder(node(chain, { missingBlocks: new Set([6]) }).client, ACCOUNT, 2, 7)).kind, 'unknown');
  });
});

describe('the reconciler on a used nonce', () => {
  let store: Store;
  before(async () => {
    store = openStore({ dataDir: await migratedSqliteDir(31337) });
    await migrateToLatest(store, 31337);
    await store.db.insertInto('relayers').values({ address: ACCOUNT, chain_id: 31337, idx: 0, next_nonce: 3, updated_at: 0 }).execute();
  });

  const sentTx = (nonce: number, hash: Hex): Promise<number> => recordedTx(store.db, { from_address: ACCOUNT, nonce, hash });
  const row = (id: number) => store.db.selectFrom('chain_txs').select(['status', 'error', 'awaiting']).where('id', '=', id).executeTakeFirstOrThrow();
  function reconciler(n: ReturnType<typeof node>, confirmations = 0) {
    const log = pino({ level: 'silent' });
    return new Reconciler({
      db: store.db,
      client: n.client,
      chainId: 31337,
      log,
      embedded: false,
      confirmations,
      answers: new NodeAnswers(new InFlight(), log, { poke() {}, reconcileSoon() {} }),
      headNumber: () => n.head,
    });
  }

  it('its own hash holds the nonce (the receipt not served yet): it stays sent, saying so', async () => {
    const id = await sentTx(0, h(200));
    const n = node({ 1: [[0, h(200)]], 2: [], 3: [] });
    await reconciler(n).run();
    const r = await row(id);
    assert.equal(r.status, 'sent');
    assert.match(r.awaiting ?? '', /mined as .* in block 1; its receipt is not served yet/);
  });

  it('another transaction holds it, deep enough: judged replaced, naming the holder', async () => {
    const id = await sentTx(1, h(201));
    const n = node({ 1: [[0, h(200)]], 2: [[1, h(999)]], 3: [] });
    await reconciler(n, 2).run(); // block 2, head 3: one block deep, two asked
    assert.equal((await row(id)).status, 'sent', 'not deep enough yet');
    const deeper = node({ 1: [[0, h(200)]], 2: [[1, h(999)]], 3: [], 4: [] });
    await reconciler(deeper, 2).run();
    const r = await row(id);
    assert.equal(r.status, 'reverted');
    assert.match(r.error ?? '', new RegExp(`replaced: nonce 1 used by transaction ${h(999)} in block 2`));
    assert.equal(r.awaiting, null);
  });

  it('a receipt lookup that fails is no evidence: it stays sent', async () => {
    const id = await sentTx(2, h(202));
    const n = node({ 1: [[0, h(200)]], 2: [[1, h(999)]], 3: [[2, h(777)]], 4: [], 5: [] }, { failing: new Set([h(202)]) });
    await reconciler(n).run();
    const r = await row(id);
    assert.equal(r.status, 'sent');
    assert.match(r.awaiting ?? '', /receipt lookup failed/);
  });

  it('replaced since it was read (another process gave it the hash that holds its nonce): not judged', async () => {
    const id = await sentTx(3, h(203));
    const chain = { 1: [[0, h(200)]], 2: [[1, h(999)]], 3: [[2, h(777)]], 4: [[3, h(303)]], 5: [], 6: [] } as Record<number, [number, Hex][]>;
    // While the holder is read off the chain, another process replaces the transaction with h(303).
    const n = node(chain, {
      onBlock: async () => {
        await store.db
          .updateTable('chain_txs')
          .set({ hash: h(303), prior_hashes: JSON.stringify([h(203)]) })
          .where('id', '=', id)
          .execute();
      },
    });
    await reconciler(n).run();
    assert.equal((await row(id)).status, 'sent', 'its new hash holds the nonce: the tracker finds its receipt');
  });
});
