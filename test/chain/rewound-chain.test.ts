// A transaction the embedded chain lost after its outcome was applied (the node restarted from older
// state) is sent again and its outcome applied again, against the real anvil binary. The tracker looks a
// transaction up once per block number; the restarted chain sits at the very number of the last lookup
// and mines nothing until something is sent, so the lost transaction must be looked up again whatever
// that number is.
// Run: node --import tsx --test test/chain/rewound-chain.test.ts
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createPublicClient, http, type Hex, type PublicClient } from 'viem';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { MINT_TX } from '../../src/chain/outcomes.js';
import { Reconciler } from '../../src/chain/reconciler.js';
import type { Store } from '../../src/store/db.js';
import { embeddedWing, outcomeTable, recordMint, type ChainWing } from '../helpers/chain-wing.js';
import { freePort, tempDir } from '../helpers/env.js';

const CHAIN = 31337;
const log = pino({ level: 'silent' });

describe('a chain that lost mined transactions', () => {
  let chain: EmbeddedChain;
  let store: Store;
  let client: PublicClient;
  let wing: ChainWing;
  let reconciler: Reconciler;
  /** The mint outcomes applied, by transaction hash. */
  const applied: string[] = [];

  before(async () => {
    chain = await startEmbeddedChain({ dataDir: tempDir(), port: await freePort(), chainId: CHAIN, logger: log });
    client = createPublicClient({ transport: http(chain.rpcUrl) }) as PublicClient;
    ({ store, wing } = await embeddedWing(client, CHAIN, log, 1));
    wing.tracker.useOutcomes(outcomeTable({ [MINT_TX]: async (o) => async () => void applied.push(o.receipt?.transactionHash ?? 'no receipt') }));
    reconciler = new Reconciler({
      db: store.db,
      client,
      chainId: CHAIN,
      log,
      embedded: true,
      confirmations: 0,
      answers: wing.res.answers,
      headNumber: () => wing.res.fees.head?.number ?? null,
    });
  });
  after(async () => {
    await store?.close();
    await chain?.stop();
  });

  /** Until the node has mined what it was given: anvil mines a transaction a moment after it answers the send. */
  const nodeIdle = async () => {
    for (;;) {
      const pool = (await client.request({ method: 'txpool_status' as never })) as { pending: Hex; queued: Hex };
      if (Number(pool.pending) === 0 && Number(pool.queued) === 0) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  /** Passes of the tracker loop (without waiting for its interval), each until the node is idle, while the row is unhandled. */
  const passes = async (id: number, most: number) => {
    for (let pass = 0; pass < most && (await row(id)).handled === 0; pass++) {
      await wing.tracker.trackOnce();
      await nodeIdle();
    }
  };
  const row = (id: number) => store.db.selectFrom('chain_txs').select(['status', 'handled', 'block_number']).where('id', '=', id).executeTakeFirstOrThrow();

  it('sends it again and applies its outcome again, though the chain stays at the block of the last lookup', async () => {
    const tx = await recordMint(store, wing);
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), 0n);
    // A pass reads head 0 and sends (the embedded node mines it in block 1 on arrival); its receipt
    // is found by that pass (looked up "at block 0": the case of this test, and what a node that is
    // not loaded does) or the next, and its outcome applied.
    await passes(tx.id, 3);
    assert.deepEqual(await row(tx.id), { status: 'mined', handled: 1, block_number: 1 });
    assert.deepEqual(applied, [tx.hash]);

    // The node restarts from state saved before that block: back at block 0, its accounts unfunded.
    await client.request({ method: 'anvil_reset' as never, params: [] as never });
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), 0n);
    await wing.res.fundEmbedded();
    await reconciler.run();
    assert.deepEqual(await row(tx.id), { status: 'sent', handled: 0, block_number: null }, 'the reconciler found it lost');

    // A few passes send it again and apply it again (three when the node is quick: look it up, send, find it).
    await passes(tx.id, 6);
    assert.deepEqual(await row(tx.id), { status: 'mined', handled: 1, block_number: 1 }, 'mined again, its outcome applied');
    const receipt = await client.getTransactionReceipt({ hash: tx.hash as Hex });
    assert.equal(receipt.blockNumber, 1n, 'the same signed bytes, on the chain again');
    assert.deepEqual(applied, [tx.hash, tx.hash], 'the outcome applied once more (its effects are idempotent)');
  });
});
