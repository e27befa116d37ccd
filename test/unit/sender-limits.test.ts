// The sender's fees, limits and reading of node answers, on a real SQLite database with a stand-in
// node (scripted answers): fees from the head block and eth_feeHistory under the ceiling, the wait
// while the base fee is over it, the in-flight cap spread over the relayers, a relayer backing off on
// "txpool is full", a transaction repriced when the node calls it underpriced, the order of a
// broadcast's sends.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { parseTransaction, type Hex, type PublicClient } from 'viem';
import { openStore } from '../../src/store/open.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { KeyRing } from '../../src/chain/keys.js';
import { SecretBox } from '../../src/util/secretbox.js';
import type { ChainTxRow } from '../../src/chain/sender.js';
import { chainWing } from '../helpers/chain-wing.js';
import { MINT_TX } from '../../src/chain/outcomes.js';
import { migratedSqliteDir } from '../helpers/schema-copies.js';

const CHAIN = 80002;
const GWEI = 10n ** 9n;

async function setup() {
  const store = openStore({ dataDir: await migratedSqliteDir(CHAIN) });
  await migrateToLatest(store, CHAIN);
  const keys = await KeyRing.open(store.db, new SecretBox('22'.repeat(32)));
  const node = {
    block: { number: 10n, baseFeePerGas: 1n * GWEI, gasUsed: 15_000_000n, gasLimit: 30_000_000n },
    /** Errors the next sends answer with, in order (none: accepted). */
    refusals: [] as string[],
    sent: [] as Hex[],
    /** Each send as it began, and then as it was answered. */
    sends: [] as { raw: Hex; answered: boolean }[],
    async getBlock() {
      return node.block;
    },
    async getFeeHistory() {
      return { reward: [[2n * GWEI], [0n], [3n * GWEI], [1n * GWEI]] };
    },
    async getBalance() {
      return 10n ** 18n;
    },
    async getTransactionCount() {
      return 0;
    },
    async request({ method, params }: { method: string; params: unknown[] }) {
      if (method === 'eth_sendRawTransaction') {
        node.sends.push({ raw: params[0] as Hex, answered: false });
        await new Promise((r) => setImmediate(r)); // answered in a later turn, as over a connection
        node.sends.push({ raw: params[0] as Hex, answered: true });
        const refusal = node.refusals.shift();
        if (refusal) throw new Error(refusal);
        node.sent.push(params[0] as Hex);
        return '0x';
      }
      if (method === 'eth_getTransactionByHash') return {};
      if (method === 'eth_getTransactionReceipt') return null;
      throw new Error(`unexpected ${method}`);
    },
  };
  const { res, sender, tracker, init } = chainWing(store.db, node as unknown as PublicClient, keys, CHAIN, pino({ level: 'silent' }), {
    relayerCount: 2,
    embedded: false,
    confirmations: 0,
    flush: () => store.flush(),
    tuning: { maxFeeGwei: 50, minTipGwei: 0.01, stuckBlocks: 3, maxInFlight: 2, blockGasShare: 0.5 },
  });
  await init();
  const record = () =>
    store.db.transaction().execute((tx) =>
      sender.record(tx, {
        kind: MINT_TX,
        ref: 'c',
        payload: { collection_uid: 'c', contract: '0x1', items: [], rounds: {} },
        to: '0x0000000000000000000000000000000000000001',
        data: '0x',
        gas: 1_000_000n,
      }),
    );
  const readHead = () => res.readHead();
  const row = (id: number) => store.db.selectFrom('chain_txs').selectAll().where('id', '=', id).executeTakeFirstOrThrow() as Promise<ChainTxRow>;
  return { store, sender, tracker, node, record, readHead, row };
}

const feesOf = (raw: string) => {
  const t = parseTransaction(raw as Hex);
  return { maxFee: t.maxFeePerGas!, tip: t.maxPriorityFeePerGas! };
};

describe('chain sender: fees and limits', () => {
  it('offers twice the next base fee plus the median tip of recent blocks; over the ceiling it says it waits, and signs nothing above it', async () => {
    const { store, sender, node, record, readHead } = await setup();
    const first = feesOf((await record()).raw);
    assert.deepEqual(first, { maxFee: 4n * GWEI, tip: 2n * GWEI }, 'tip: median of 1, 2, 3 gwei (the empty block left out)');
    assert.equal(sender.sendingBlockedBy(), null);
    node.block = { ...node.block, number: 11n, baseFeePerGas: 100n * GWEI };
    await readHead();
    assert.equal(sender.sendingBlockedBy(), 'waiting for fees: base fee 100 gwei > ceiling 50 gwei');
    assert.equal(feesOf((await record()).raw).maxFee, 50n * GWEI, 'at the ceiling, not above');
    node.block = { ...node.block, number: 12n, baseFeePerGas: 20n * GWEI };
    await readHead();
    assert.equal(sender.sendingBlockedBy(), null, 'sending resumes with the next block under the ceiling');
    store.close();
  });

  it('spreads transactions over the relayers and stops at maxInFlight each', async () => {
    const { store, sender, record } = await setup();
    const rows = [await record(), await record(), await record(), await record()];
    const per = new Map<string, number>();
    for (const r of rows) per.set(r.from_address, (per.get(r.from_address) ?? 0) + 1);
    assert.deepEqual([...per.values()], [2, 2]);
    assert.equal(sender.room().transactions, 0);
    assert.equal(sender.sendingBlockedBy(), 'every relayer has 2 transactions in flight');
    assert.equal(sender.room().gas, 11_000_000n, 'the block share (15M) less the 4M in flight');
    store.close();
  });

  it('a relayer whose node says its pool is full backs off; the other takes the work', async () => {
    const { store, sender, node, record, row } = await setup();
    const a = await record();
    node.refusals.push('txpool is full');
    await sender.broadcast([a]);
    assert.equal((await row(a.id)).status, 'signed', 'not sent');
    assert.equal(sender.room().transactions, 2, "only the other relayer's slots");
    const b = await record();
    assert.notEqual(b.from_address, a.from_address);
    store.close();
  });

  it("sends each relayer's transactions in nonce order, the relayers side by side", async () => {
    const { store, sender, node, record } = await setup();
    const rows = [await record(), await record(), await record(), await record()];
    const [a1, b1, a2, b2] = rows; // the relayers take turns
    assert.equal(a2.from_address, a1.from_address);
    assert.equal(b2.from_address, b1.from_address);
    assert.notEqual(a1.from_address, b1.from_address);
    const nameOf = (raw: Hex) => ['a1', 'b1', 'a2', 'b2'][rows.findIndex((r) => r.raw === raw)];

    await sender.broadcast([a2, b2, a1, b1]);
    assert.deepEqual(
      node.sends.map((s) => `${s.answered ? 'answered' : 'sent'} ${nameOf(s.raw)}`),
      ['sent a1', 'sent b1', 'answered a1', 'sent a2', 'answered b1', 'sent b2', 'answered a2', 'answered b2'],
      "both relayers at once, each one's next nonce after the answer to its last",
    );
    store.close();
  });

  it("a refusal that holds a relayer (its pool is full) holds its later transactions, not the other relayer's", async () => {
    const { store, sender, node, record, row } = await setup();
    const [a1, b1, a2, b2] = [await record(), await record(), await record(), await record()];
    node.refusals.push('txpool is full'); // the first send's answer: a1's
    await sender.broadcast([a1, b1, a2, b2]);
    assert.deepEqual(
      node.sends.filter((s) => !s.answered).map((s) => s.raw),
      [a1.raw, b1.raw, b2.raw],
      'a2 was not sent',
    );
    assert.deepEqual(await Promise.all([a1, a2, b1, b2].map(async (r) => (await row(r.id)).status)), ['signed', 'signed', 'sent', 'sent']);
    store.close();
  });

  it('a transaction the node calls underpriced is repriced: same nonce, both fees up by 12.5 % at least', async () => {
    const { store, sender, tracker, node, record, row } = await setup();
    const a = await record();
    node.refusals.push('replacement transaction underpriced');
    await sender.broadcast([a]);
    await tracker.trackOnce();
    const after = await row(a.id);
    assert.equal(after.bumps, 1);
    assert.equal(after.nonce, a.nonce);
    const [was, now] = [feesOf(a.raw), feesOf(after.raw)];
    assert.ok(now.maxFee * 1000n >= was.maxFee * 1125n && now.tip * 1000n >= was.tip * 1125n, `${was.maxFee}/${was.tip} -> ${now.maxFee}/${now.tip}`);
    assert.equal(node.sent.at(-1), after.raw, 'the new version was sent');
    store.close();
  });
});
