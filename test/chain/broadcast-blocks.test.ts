// A broadcast of several transactions on the embedded chain is mined as one block, against the real
// anvil binary: anvil recomputes its whole state root for every block, so a block per transaction makes
// minting slower with every token on the chain.
// Run: node --import tsx --test test/chain/broadcast-blocks.test.ts
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createPublicClient, createWalletClient, custom, http, parseEther, type Hex, type PublicClient } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { startEmbeddedChain, type EmbeddedChain } from '../../src/chain/anvil.js';
import { EMBEDDED_BLOCK_GAS_LIMIT } from '../../src/chain/anvil/embedded-chain.js';
import type { Store } from '../../src/store/db.js';
import { embeddedWing, recordMint, type ChainWing } from '../helpers/chain-wing.js';
import { freePort, tempDir } from '../helpers/env.js';

const CHAIN = 31337;
const log = pino({ level: 'silent' });

describe('broadcasts on the embedded chain', () => {
  let chain: EmbeddedChain;
  let store: Store;
  let client: PublicClient;
  let wing: ChainWing;
  /** Every call the service's client made of the node, with how many sends were unanswered when it began. */
  const calls: { method: string; sendsUnanswered: number }[] = [];

  before(async () => {
    chain = await startEmbeddedChain({ dataDir: tempDir(), port: await freePort(), chainId: CHAIN, logger: log });
    const node = createPublicClient({ transport: http(chain.rpcUrl) });
    let sendsUnanswered = 0;
    client = createPublicClient({
      transport: custom({
        async request({ method, params }) {
          calls.push({ method, sendsUnanswered });
          const sending = method === 'eth_sendRawTransaction';
          if (sending) sendsUnanswered++;
          try {
            return await node.request({ method, params } as never);
          } finally {
            if (sending) sendsUnanswered--;
          }
        },
      }),
    }) as PublicClient;
    ({ store, wing } = await embeddedWing(client, CHAIN, log, 2));
  });
  after(async () => {
    await store?.close();
    await chain?.stop();
  });

  const record = () => recordMint(store, wing);
  const blockOf = async (hash: string) => (await client.waitForTransactionReceipt({ hash: hash as Hex, timeout: 10_000 })).blockNumber;

  it(`has blocks of ${EMBEDDED_BLOCK_GAS_LIMIT / 1e6}M gas`, async () => {
    assert.equal((await client.getBlock()).gasLimit, BigInt(EMBEDDED_BLOCK_GAS_LIMIT));
  });

  it('mines the transactions of one broadcast, of both relayers, in one block, then automines again', async () => {
    const rows = [await record(), await record(), await record(), await record()];
    assert.equal(new Set(rows.map((r) => r.from_address)).size, 2, 'two accounts, two nonces each');
    const before = await client.getBlockNumber({ cacheTime: 0 });
    const from = calls.length;
    await wing.res.broadcaster.broadcast(rows);
    const methods = calls.slice(from).map((c) => c.method);
    // All sent at once, and the block mined without asking the pool first: five answers to wait for.
    assert.equal(Math.max(...calls.slice(from).map((c) => c.sendsUnanswered)), 3, 'the fourth send began before any was answered');
    assert.deepEqual(methods, ['evm_setAutomine', ...rows.map(() => 'eth_sendRawTransaction'), 'evm_mine', 'txpool_status', 'evm_setAutomine']);
    const blocks = await Promise.all(rows.map((r) => blockOf(r.hash)));
    assert.deepEqual(new Set(blocks), new Set([before + 1n]), 'every transaction in the next block');
    const sent = await store.db
      .selectFrom('chain_txs')
      .select('status')
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    assert.deepEqual(
      sent.map((r) => r.status),
      ['sent', 'sent', 'sent', 'sent'],
    );

    // The same broadcast again (a resend of what the node has mined) takes nothing: no empty block.
    await wing.res.broadcaster.broadcast(rows);
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), before + 1n, 'no block for a broadcast the node took nothing of');

    // Someone else's transaction (not a broadcast of the service) is mined at once, in a block of its own.
    const wallet = createWalletClient({
      account: mnemonicToAccount('test test test test test test test test test test test junk'),
      transport: http(chain.rpcUrl),
    });
    const hash = await wallet.sendTransaction({ chain: null, to: '0x0000000000000000000000000000000000000002', value: parseEther('1') });
    assert.equal(await blockOf(hash), before + 2n);
  });

  it('leaves transactions held for a broadcast to it: the tracker does not send them in a block of their own', async () => {
    // A mint claim records its transactions one by one and broadcasts them together once all are recorded.
    const first = await record();
    wing.sender.holdForBroadcast(first);
    const second = await record();
    wing.sender.holdForBroadcast(second);
    const before = await client.getBlockNumber({ cacheTime: 0 });
    await wing.tracker.trackOnce();
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), before, 'the tracker sent nothing');
    const statuses = await store.db.selectFrom('chain_txs').select('status').where('id', 'in', [first.id, second.id]).execute();
    assert.deepEqual(
      statuses.map((r) => r.status),
      ['signed', 'signed'],
    );
    await wing.sender.broadcast([first, second]);
    assert.deepEqual(new Set([await blockOf(first.hash), await blockOf(second.hash)]), new Set([before + 1n]), 'both in the next block');
  });

  it('sends a broadcast of one transaction as before: automined on arrival', async () => {
    const row = await record();
    const before = await client.getBlockNumber({ cacheTime: 0 });
    await wing.res.broadcaster.broadcast([row]);
    assert.equal(await blockOf(row.hash), before + 1n);
  });
});
