// Relayer rotation on PostgreSQL and an external chain with a block every second (anvil as chain
// 80002): during a burst of creates the rotation waits for the new relayers' funds and says so in its
// progress, until the operator runs the command it names (`mintworks chain fund --chain 80002`, which
// funds them on a development node); then it grants, switches, drains and revokes. Every create answered
// 201, every asset minted exactly once, nothing recorded from an old relayer after the switch, and on
// chain the new relayers are operators and the old ones are not. A second rotation, given an amount,
// has the deployer fund its new relayers by recorded transfers, one per relayer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPublicClient, http, parseAbi, type Address, type PublicClient } from 'viem';
import { startOnExternalChain, type TestService } from '../helpers/service.js';
import { startExternalNode, type ExternalNode } from '../helpers/external-node.js';
import { waitFor } from '../helpers/env.js';
import { contractsOf, operatorsOnChain, rotationFinished } from '../helpers/rotation.js';
import { startRelayerRotation } from '../../src/services/relayer-rotation.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHAIN = 80002;
const BURST = 300;
const erc721 = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)']);

describe('relayer rotation on PostgreSQL and an external chain', () => {
  let node: ExternalNode;
  let t: TestService;
  before(async () => {
    node = await startExternalNode({ kind: 'anvil', chainId: CHAIN, blockTimeS: 1 });
    t = await startOnExternalChain('postgres', { id: CHAIN, name: 'Anvil', rpc: node.url }, node.fund, { RELAYER_COUNT: '2' });
  });
  after(async () => {
    await t?.stop();
    await node?.stop();
  });

  it('waits for funds, then rotates during a burst without failing or duplicating anything', async () => {
    const ctx = t.svc.ctx;
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const users: string[] = [];
    for (let i = 0; i < 6; i++) users.push((await app.api.post('/user', {})).body.data.uid);

    const rotation = await startRelayerRotation(ctx, CHAIN, { actor: { kind: 'cli', detail: 'test' } });
    const progress = () => ctx.db.selectFrom('relayer_rotations').select(['progress', 'switched_at']).where('id', '=', rotation.id).executeTakeFirstOrThrow();
    const statuses: number[] = [];
    const uids: string[] = [];
    let sent = 0;
    const creator = async () => {
      while (sent < BURST) {
        const n = sent++;
        const r = await app.api.post('/asset', {
          user_uid: users[n % users.length],
          collection_uid: collection,
          asset_external_id: `pg-${n}`,
          data: { name: 'Blade', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
        });
        statuses.push(r.status);
        if (r.status === 201) uids.push(r.body.data.uid);
      }
    };
    const burst = Promise.all(Array.from({ length: 8 }, creator));
    const waiting = await waitFor(
      'the rotation waits for funds',
      async () => ((await progress()).progress.startsWith('waiting for funds') ? progress() : null),
      60_000,
      100,
    );
    assert.match(waiting.progress, /mintworks chain fund --chain 80002/);
    for (const a of rotation.new_relayers) assert.match(waiting.progress, new RegExp(a.slice(2, 10), 'i'));
    assert.equal(waiting.switched_at, null, 'nothing switched before the funds');
    // The operator runs the command the progress names.
    const fund = spawnSync(process.execPath, [path.join(root, 'bin/mintworks.js'), 'chain', 'fund', '--chain', String(CHAIN)], {
      env: {
        ...process.env,
        DATA_DIR: t.dataDir,
        DATABASE_URL: ctx.config.databaseUrl!,
        EMBEDDED_CHAIN: 'false',
        CHAINS: JSON.stringify([{ id: CHAIN, name: 'Anvil', rpc: node.url }]),
      },
      encoding: 'utf8',
    });
    assert.equal(fund.status, 0, fund.stderr);
    assert.match(fund.stdout, /\(pending\)/);
    await burst;
    assert.deepEqual(
      statuses.filter((s) => s !== 201),
      [],
      'every create answered 201',
    );

    const done = await rotationFinished(ctx.db, rotation.id);
    await waitFor(
      'every asset minted',
      async () =>
        Number(
          (
            await ctx.db
              .selectFrom('assets')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('uid', 'in', uids)
              .where('mint_status', '=', 'minted')
              .executeTakeFirstOrThrow()
          ).n,
        ) === BURST,
      120_000,
      250,
    );
    const rpc = createPublicClient({ transport: http(node.url) }) as PublicClient;
    const contract = (await ctx.db.selectFrom('collections').select('contract_address').where('uid', '=', collection).executeTakeFirstOrThrow())
      .contract_address as Address;
    const mints = await rpc.getLogs({ address: contract, event: erc721[0], args: { from: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n });
    assert.equal(mints.length, BURST, 'one mint on chain per asset');
    assert.equal(new Set(mints.map((l) => l.args.tokenId)).size, BURST, 'no token minted twice');
    const deployer = ctx.keys.deployer().address.toLowerCase();
    const strays = await ctx.db
      .selectFrom('chain_txs')
      .select(['from_address', 'kind'])
      .where('chain_id', '=', CHAIN)
      .where('created_at', '>', Number(done.switched_at))
      .where('from_address', 'not in', [...rotation.new_relayers, deployer])
      .execute();
    assert.deepEqual(strays, [], 'nothing recorded from an old relayer after the switch');
    for (const c of await operatorsOnChain(rpc, await contractsOf(ctx.db, CHAIN), rotation.new_relayers, rotation.old_relayers)) {
      assert.equal(c.owner, deployer);
      assert.deepEqual(c.fresh, [true, true]);
      assert.deepEqual(c.old, [false, false]);
    }
  });

  it('funds the new relayers from the deployer by recorded transfers when given an amount', async () => {
    const ctx = t.svc.ctx;
    const amount = 2n * 10n ** 18n;
    await assert.rejects(startRelayerRotation(ctx, CHAIN, { actor: { kind: 'cli', detail: 'test' }, fundWei: 10n ** 15n }), /under the/);
    const rotation = await startRelayerRotation(ctx, CHAIN, { actor: { kind: 'cli', detail: 'test' }, fundWei: amount });
    await rotationFinished(ctx.db, rotation.id);
    const transfers = await ctx.db
      .selectFrom('chain_txs')
      .select(['from_address', 'ref', 'status'])
      .where('kind', '=', 'relayers.rotation')
      .where('ref', 'like', `rotation:${rotation.id}:fund:%`)
      .execute();
    const deployer = ctx.keys.deployer().address.toLowerCase();
    assert.deepEqual(
      transfers.map((x) => x.ref).sort(),
      rotation.new_relayers.map((a) => `rotation:${rotation.id}:fund:${a}:${a}`).sort(),
      'one transfer per new relayer',
    );
    for (const x of transfers) {
      assert.equal(x.from_address, deployer);
      assert.equal(x.status, 'mined');
    }
    const rpc = createPublicClient({ transport: http(node.url) }) as PublicClient;
    for (const a of rotation.new_relayers) assert.ok((await rpc.getBalance({ address: a as Address })) > 0n);
    // The new set mints.
    const app = await t.newApp();
    const collection = await t.newCollection(app.uid, false);
    const user = (await app.api.post('/user', {})).body.data.uid;
    const r = await app.api.post('/asset', {
      user_uid: user,
      collection_uid: collection,
      asset_external_id: 'after-funding',
      data: { name: 'Blade', unique_name: false, image_url: 'https://example.com/b.png', store_image_on_ipfs: false },
    });
    assert.equal(r.status, 201, r.raw);
    await waitFor('minted', async () => (await app.api.get(`/asset/${r.body.data.uid}`)).body.data.is_minted === true, 60_000);
    const tx = await ctx.db
      .selectFrom('assets')
      .innerJoin('chain_txs', 'chain_txs.id', 'assets.mint_tx_id')
      .select('chain_txs.from_address')
      .where('assets.uid', '=', r.body.data.uid)
      .executeTakeFirstOrThrow();
    assert.ok(rotation.new_relayers.includes(tx.from_address));
  });
});
