// The lifecycle suite (mint, edit, transfer, burn, deposits, re-reading the chain as after a reorg)
// against Hardhat's node mining a block every 2 s, instead of the embedded anvil mining on arrival:
// nothing may depend on one node's quirks. Then a rewind, as far as Hardhat allows one (evm_revert):
// mints the chain lost are sent again and minted exactly once. And mints in flight together: Hardhat
// estimates gas on its pending state unless told otherwise.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, http, parseAbi, type Address, type Hex } from 'viem';
import { lifecycleSuite } from './lifecycle-suite.js';
import { hardhatChain, type SuiteChain } from '../helpers/suite-chain.js';
import type { TestService } from '../helpers/service.js';
import { newAsset } from '../helpers/new-asset.js';
import { waitFor } from '../helpers/env.js';

lifecycleSuite('sqlite', { chain: hardhatChain(2) });

/** A service on its own Hardhat node for the enclosing describe: started before its tests, stopped after. */
function serviceOn(chain: SuiteChain): () => TestService {
  let t: TestService | undefined;
  before(async () => {
    t = await chain.start('sqlite');
  });
  after(async () => {
    await t?.stop();
  });
  return () => t!;
}

describe("a rewind of Hardhat's node (evm_revert)", () => {
  const chain = hardhatChain(2);
  const service = serviceOn(chain);

  it('mints the chain no longer has are sent again and minted exactly once', async () => {
    const t = service();
    const call = async (method: string, params: unknown[] = []) => {
      const r = await fetch(chain.rpcUrl(t), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return ((await r.json()) as { result: unknown }).result;
    };
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const contract = (await app.api.get(`/collection/${collection}`)).body.data.contract_address as Address;
    const user = (await app.api.post('/user', {})).body.data.uid;
    // The node's instance id, to tell a failed revert on this node from a revert sent to another one.
    const instance = async () => ((await call('hardhat_metadata')) as { instanceId: string }).instanceId;
    const snapshotOn = await instance();
    const snapshot = await call('evm_snapshot');
    const uids: string[] = [];
    for (let i = 0; i < 5; i++) uids.push(await newAsset(app.api, user, collection, `rewind-${i}`));
    const minted = await waitFor(
      'minted',
      async () => {
        const all = await Promise.all(uids.map(async (u) => (await app.api.get(`/asset/${u}`)).body.data));
        return all.every((a) => a.is_minted) ? all : null;
      },
      60_000,
      250,
    );
    const rpc = createPublicClient({ transport: http(chain.rpcUrl(t)) });
    const transfers = () =>
      rpc.getContractEvents({
        address: contract,
        abi: parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']),
        eventName: 'Transfer',
        fromBlock: 0n,
      });
    assert.equal((await transfers()).length, 5);

    const reverted = await call('evm_revert', [snapshot]);
    assert.equal(
      reverted,
      true,
      `evm_revert(${String(snapshot)}): ${String(reverted)}; snapshot taken on node instance ${snapshotOn}, now ${await instance()}`,
    );
    assert.equal((await transfers()).length, 0, 'the chain lost the mints');
    // The tracker finds the relayers' nonces behind what it recorded and sends the same bytes again.
    const again = await waitFor(
      'minted again',
      async () => {
        const logs = await transfers();
        return logs.length >= 5 ? logs : null;
      },
      60_000,
      500,
    );
    const ids = again.map((l) => Number(l.args.tokenId));
    assert.deepEqual([...new Set(ids)].sort(), minted.map((a) => a.token_id).sort(), 'each token once, the same ids');
    assert.equal(ids.length, 5);
    for (const a of minted) assert.equal((await app.api.get(`/asset/${a.uid}`)).body.data.is_minted, true);
  });
});

describe('mints in flight together, on a node that estimates gas on its pending state (Hardhat)', () => {
  const chain = hardhatChain(2);
  const service = serviceOn(chain);

  it("each mint's gas limit covers running it first, on the last mined block", async () => {
    const t = service();
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const user = (await app.api.post('/user', {})).body.data.uid;
    const sentMints = async (n: number) =>
      waitFor(
        `${n} mints sent`,
        async () => {
          const rows = await t.svc.ctx.db.selectFrom('chain_txs').select(['hash', 'status']).where('kind', '=', 'asset.mint').orderBy('id').execute();
          return rows.length === n && rows.every((r) => r.status === 'sent') ? rows : null;
        },
        60_000,
        100,
      );
    const create = (i: number) => newAsset(app.api, user, collection, `together-${i}`);
    // The first mint waits in the mempool while the second is estimated: on the pending state the
    // holder's balance is already non-zero there, but a block may order the second one first.
    await chain.setMining(t, false);
    const uids = [await create(0)];
    await sentMints(1);
    uids.push(await create(1));
    const rows = await sentMints(2);
    const rpc = createPublicClient({ transport: http(chain.rpcUrl(t)) });
    for (const row of rows) {
      const sent = await rpc.getTransaction({ hash: row.hash as Hex });
      const first = await rpc.estimateGas({ account: sent.from, to: sent.to!, data: sent.input, blockTag: 'latest' });
      assert.ok(sent.gas >= first, `gas limit ${sent.gas} of ${row.hash}; run first on the last mined block it needs ${first}`);
    }
    await chain.setMining(t, true);
    await waitFor(
      'both minted',
      async () => (await Promise.all(uids.map(async (u) => (await app.api.get(`/asset/${u}`)).body.data.is_minted))).every(Boolean),
      60_000,
      250,
    );
  });
});
