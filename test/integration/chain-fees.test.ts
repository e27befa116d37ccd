// test:exclusive — counts blocks between a fee change and a mine; run with the machine to itself (scripts/run-integration.mjs).
// The chain pipeline on a chain with its own block time and fee market: an external anvil producing a
// block every second (chain 80002 through CHAINS, ceiling 200 gwei, 2 relayers of at most 2
// transactions in flight each). The base fee is moved with anvil's own RPCs: a sudden jump, a gradual
// rise ×10 over 20 blocks, a rise over the ceiling; mining is paused to see the in-flight cap, and a
// transaction is dropped from the node's pool. Every asset is minted exactly once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createPublicClient, http, parseAbiItem, parseTransaction, type Address, type Hex, type PublicClient } from 'viem';
import { anvilBinaryPath } from '../../src/chain/anvil.js';
import { loadConfig } from '../../src/config/config.js';
import { startService, type Service } from '../../src/boot/service.js';
import { createApp } from '../../src/services/apps/registry.js';
import { createCollection } from '../../src/services/collections/collections.js';
import { signAppToken } from '../../src/services/apps/tokens.js';
import { assetDetail } from '../../src/services/console/assets.js';
import { ApiClient, freePort, tempDir, waitFor } from '../helpers/env.js';
import { mintTxIds } from '../helpers/chain-txs.js';

const CHAIN_ID = 80002;
const GWEI = 10n ** 9n;
const CEILING_GWEI = 200n;
const MAX_IN_FLIGHT = 2;
const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');

describe('fees, ceiling and in-flight limits on a chain with a block time', () => {
  let anvil: ChildProcess;
  let rpc: PublicClient;
  let svc: Service;
  let api: ApiClient;
  let collection: string;
  let appUid: string;
  let contract: Address;
  let user: string;
  let relayers: Set<string>;
  let n = 0;

  const call = (method: string, params: unknown[] = []) => rpc.request({ method: method as never, params: params as never });
  const setNextBaseFee = (wei: bigint) => call('anvil_setNextBlockBaseFeePerGas', [`0x${wei.toString(16)}`]);
  const pauseMining = () => call('evm_setIntervalMining', [0]);
  const resumeMining = () => call('evm_setIntervalMining', [1]);
  const head = () => rpc.getBlockNumber({ cacheTime: 0 });
  const nextBlock = async (after?: bigint) => {
    const from = after ?? (await head());
    return waitFor('the next block', async () => ((await head()) > from ? head() : null), 10_000, 50);
  };

  async function createAssets(count: number): Promise<string[]> {
    const uids: string[] = [];
    for (let i = 0; i < count; i++) {
      const r = await api.post('/asset', {
        user_uid: user,
        collection_uid: collection,
        asset_external_id: `fee-${++n}`,
        data: { name: 'F', unique_name: false, image_url: 'https://example.com/f.png', store_image_on_ipfs: false },
      });
      assert.equal(r.status, 201, r.raw);
      uids.push(r.body.data.uid);
    }
    return uids;
  }
  const assets = (uids: string[]) =>
    svc.ctx.db.selectFrom('assets').select(['uid', 'token_id', 'mint_status', 'created_at', 'updated_at']).where('uid', 'in', uids).execute();
  const allMinted = async (uids: string[]) => (await assets(uids)).every((a) => a.mint_status === 'minted');
  const mintRows = async (uids: string[]) => {
    const ids = [...new Set((await mintTxIds(svc.ctx.db, uids)).values())];
    return ids.length ? svc.ctx.db.selectFrom('chain_txs').selectAll().where('kind', '=', 'asset.mint').where('id', 'in', ids).execute() : [];
  };

  /** Every asset's token id has exactly one mint Transfer on chain. */
  async function assertMintedOnce(uids: string[]): Promise<void> {
    const logs = await rpc.getLogs({
      address: contract,
      event: transferEvent,
      args: { from: '0x0000000000000000000000000000000000000000' },
      fromBlock: 0n,
      toBlock: 'latest',
    });
    for (const a of await assets(uids))
      assert.equal(logs.filter((l) => l.args.tokenId === BigInt(a.token_id)).length, 1, `token ${a.token_id} minted exactly once`);
    // Their outcomes applied: each asset's link is the transaction that minted it, none left under way.
    const txIds = await mintTxIds(svc.ctx.db, uids);
    assert.equal(txIds.size, uids.length, 'every minted asset names its mint transaction');
    assert.deepEqual(await svc.ctx.db.selectFrom('in_flight_mints').selectAll().where('asset_uid', 'in', uids).execute(), []);
  }

  /** No transaction of the service's accounts, mined or waiting in the pool or recorded, offers more than the ceiling. */
  async function assertNothingAboveCeiling(fromBlock: bigint): Promise<void> {
    const ceiling = CEILING_GWEI * GWEI;
    for (let b = fromBlock; b <= (await head()); b++) {
      for (const t of (await rpc.getBlock({ blockNumber: b, includeTransactions: true })).transactions)
        if (relayers.has(t.from.toLowerCase())) assert.ok((t.maxFeePerGas ?? 0n) <= ceiling, `mined ${t.hash} at ${t.maxFeePerGas}`);
    }
    for (const r of await svc.ctx.db.selectFrom('chain_txs').select(['raw', 'hash']).execute())
      assert.ok((parseTransaction(r.raw as Hex).maxFeePerGas ?? 0n) <= ceiling, `recorded ${r.hash}`);
  }

  before(async () => {
    const port = await freePort();
    anvil = spawn(anvilBinaryPath(), ['--port', String(port), '--chain-id', String(CHAIN_ID), '--block-time', '1', '--gas-limit', '30000000', '--silent'], {
      stdio: 'ignore',
    });
    const rpcUrl = `http://127.0.0.1:${port}`;
    rpc = createPublicClient({ transport: http(rpcUrl) }) as PublicClient;
    await waitFor('anvil', async () => (await rpc.getChainId().catch(() => null)) === CHAIN_ID, 30_000, 100);
    const config = loadConfig({
      PORT: String(await freePort()),
      DATA_DIR: tempDir(),
      EMBEDDED_CHAIN: 'false',
      CHAINS: JSON.stringify([{ id: CHAIN_ID, name: 'Amoy', rpc: rpcUrl, maxFeeGwei: Number(CEILING_GWEI), maxInFlight: MAX_IN_FLIGHT, stuckBlocks: 3 }]),
      RELAYER_COUNT: '2',
      MINT_BATCH_SIZE: '5', // several transactions from a few assets, for the in-flight cap
      LOG_LEVEL: 'silent',
      DEMO_APP: 'false',
    });
    svc = await startService(config);
    for (const a of [svc.ctx.keys.deployer(), ...svc.ctx.sender!.relayers]) await call('anvil_setBalance', [a.address, '0x52b7d2dcc80cd2e4000000']);
    relayers = new Set(svc.ctx.sender!.relayers.map((r) => r.address.toLowerCase()));
    await waitFor('the chain ready', async () => svc.runtimes[0].ready, 60_000);
    const app = await createApp(svc.ctx, 'Fees', 'development');
    appUid = app.uid;
    api = new ApiClient(`${svc.url}/v1`, app.api_key, await signAppToken(app.api_key, app.api_secret));
    collection = (await createCollection(svc.ctx, app.uid, { name: 'F', symbol: 'F', editable: false })).uid;
    contract = await waitFor(
      'deployed',
      async () => {
        const c = (await api.get(`/collection/${collection}`)).body.data;
        return c.status === 'deployed' ? (c.contract_address as Address) : null;
      },
      60_000,
    );
    user = (await api.post('/user', {})).body.data.uid;
    // The user's wallet first: the mints below then wait for nothing but the chain.
    const warm = await createAssets(1);
    await waitFor('first mint', () => allMinted(warm), 30_000, 100);
  });
  after(async () => {
    await svc?.stop();
    anvil?.kill('SIGTERM');
  });

  it('a sudden base-fee jump: the transaction it overtook is repriced at once and mined within two blocks', async () => {
    await pauseMining();
    const uids = await createAssets(3);
    // Every asset recorded in a transaction and every one of those sent (the mints may go out in more
    // than one transaction: a snapshot taken after the first would miss the others).
    const recorded = async () => (await mintTxIds(svc.ctx.db, uids)).size;
    await waitFor('mints sent', async () => (await recorded()) === uids.length && (await mintRows(uids)).every((r) => r.status === 'sent'), 15_000, 50);
    const before = await mintRows(uids);
    // The console shows a pending asset's mint transaction while it is under way.
    const pending = await assetDetail(svc.ctx, appUid, uids[0]);
    assert.equal(pending.asset.status, 'not_minted');
    assert.deepEqual(
      pending.transactions.map((t) => [t.kind, t.status]),
      [['mint', 'sent']],
    );
    await setNextBaseFee(100n * GWEI);
    await call('evm_mine');
    const spike = await head();
    assert.equal((await rpc.getBlock({ blockNumber: spike })).baseFeePerGas, 100n * GWEI);
    assert.equal(await allMinted(uids), false, 'not mined under the base fee');
    await resumeMining();
    await waitFor('minted after the spike', () => allMinted(uids), 20_000, 100);
    const rows = await mintRows(uids);
    for (const r of rows) {
      const was = before.find((b) => b.id === r.id)!;
      assert.ok(r.bumps >= 1, 'repriced');
      assert.equal(r.nonce, was.nonce, 'same nonce');
      assert.ok((JSON.parse(r.prior_hashes) as string[]).includes(was.hash), 'the first hash is remembered');
      assert.ok(r.block_number! <= Number(spike) + 2, `mined in block ${r.block_number}, the spike was block ${spike}`);
    }
    await assertMintedOnce(uids);
    await assertNothingAboveCeiling(spike);
  });

  it('a gradual rise ×10 over 20 blocks: every mint is mined within a few blocks of its request', async () => {
    const start = await head();
    const uids: string[] = [];
    for (let i = 0, fee = 10n * GWEI; i < 20; i++, fee = (fee * 1122n) / 1000n) {
      await setNextBaseFee(fee);
      uids.push(...(await createAssets(2)));
      await nextBlock();
    }
    const top = (await rpc.getBlock()).baseFeePerGas!;
    assert.ok(top >= 80n * GWEI, `the base fee rose to ${top}`);
    await waitFor('all minted', () => allMinted(uids), 20_000, 100);
    // Each within a few seconds (blocks of one second) of its request: nothing waited for a wall-clock timer.
    for (const a of await assets(uids)) {
      const waited = new Date(a.updated_at).getTime() - new Date(a.created_at).getTime();
      assert.ok(waited < 6000, `asset ${a.uid} waited ${waited} ms`);
    }
    await assertMintedOnce(uids);
    await assertNothingAboveCeiling(start);
  });

  it('over the ceiling nothing is sent and no attempt is spent; /health says why; sending resumes once the base fee is back under', async () => {
    const start = await head();
    await setNextBaseFee(400n * GWEI);
    const status = async () => (await (await fetch(`${svc.url}/health`)).json()).chains[0].status as string;
    await waitFor('health waiting for fees', async () => /^waiting for fees: base fee [\d.]+ gwei > ceiling 200 gwei$/.test(await status()), 10_000, 100);
    await nextBlock(); // the workers have read a block over the ceiling too
    const uids = await createAssets(4);
    // Three blocks over the ceiling: nothing signed for these, their jobs not failed.
    await nextBlock(await nextBlock(await nextBlock()));
    const waiting = await mintTxIds(svc.ctx.db, uids);
    if ((await rpc.getBlock()).baseFeePerGas! > CEILING_GWEI * GWEI) {
      assert.ok(waiting.size === 0, 'nothing recorded while the base fee is over the ceiling');
      const jobs = await svc.ctx.db.selectFrom('jobs').select(['attempts', 'status']).where('ref', 'in', uids).execute();
      assert.ok(
        jobs.every((j) => j.attempts === 0 && j.status === 'queued'),
        JSON.stringify(jobs),
      );
      assert.match(await status(), /waiting for fees/);
    }
    await waitFor('minted once the base fee is under the ceiling', () => allMinted(uids), 40_000, 200);
    // Resumed within two blocks of the first block whose base fee was under the ceiling.
    let under = start + 1n;
    while ((await rpc.getBlock({ blockNumber: under })).baseFeePerGas! > CEILING_GWEI * GWEI) under++;
    for (const r of await mintRows(uids))
      assert.ok(r.block_number! <= Number(under) + 3, `mined in block ${r.block_number}; the base fee was under the ceiling from block ${under}`);
    await assertMintedOnce(uids);
    await assertNothingAboveCeiling(start);
  });

  it('at most maxInFlight unmined transactions per relayer, spread over the relayers', async () => {
    await setNextBaseFee(1n * GWEI);
    await nextBlock();
    await pauseMining();
    const uids = await createAssets(40); // MINT_BATCH_SIZE 5: eight transactions
    const unminedBy = async () => {
      const rows = await svc.ctx.db.selectFrom('chain_txs').select(['from_address']).where('status', 'in', ['signed', 'sent']).execute();
      const by = new Map<string, number>();
      for (const r of rows) by.set(r.from_address, (by.get(r.from_address) ?? 0) + 1);
      return by;
    };
    const full = await waitFor(
      'both relayers at the cap',
      async () => {
        const by = await unminedBy();
        return by.size === 2 && [...by.values()].every((v) => v === MAX_IN_FLIGHT) ? by : null;
      },
      15_000,
      100,
    );
    assert.equal(full.size, 2, 'work spread over both relayers');
    // A second later (the workers keep trying): still no more than the cap, in the database and in the pool.
    const t = Date.now();
    while (Date.now() - t < 1500) {
      for (const v of (await unminedBy()).values()) assert.ok(v <= MAX_IN_FLIGHT, `${v} in flight`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const pool = (await call('txpool_content')) as { pending: Record<string, Record<string, unknown>> };
    for (const [from, txs] of Object.entries(pool.pending))
      if (relayers.has(from.toLowerCase())) assert.ok(Object.keys(txs).length <= MAX_IN_FLIGHT, `${from}: ${Object.keys(txs).length} in the pool`);
    assert.equal(await allMinted(uids), false);
    await resumeMining();
    await waitFor('all minted', () => allMinted(uids), 40_000, 200);
    await assertMintedOnce(uids);
  });

  it('a transaction dropped from the pool is sent again at its nonce and mined once', async () => {
    await pauseMining();
    const uids = await createAssets(2);
    const [row] = await waitFor(
      'mint sent',
      async () => {
        const rows = await mintRows(uids);
        return rows.length === 1 && rows[0].status === 'sent' ? rows : null;
      },
      15_000,
      50,
    );
    assert.ok(await rpc.getTransaction({ hash: row.hash as Hex }).catch(() => null), 'in the pool');
    await call('anvil_dropTransaction', [row.hash]);
    assert.equal(await rpc.getTransaction({ hash: row.hash as Hex }).catch(() => null), null, 'dropped');
    await resumeMining();
    await waitFor('minted after the drop', () => allMinted(uids), 20_000, 100);
    const [mined] = await mintRows(uids);
    assert.equal(mined.nonce, row.nonce, 'same nonce');
    await assertMintedOnce(uids);
  });
});
